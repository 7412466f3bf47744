import type { EmbeddingSpace } from '@cairn/core';
import type { GenerationFiles } from './generation-files.js';
import type { GraphNeighbors, HnswParams, IndexBuilder, OffThreadRead } from './hnsw-params.js';
import type { GraphState } from './namespace-state.js';

/**
 * Questions asked of a namespace's saved graph file where builds run (the compute pool), so that their
 * native loops stay off the serving thread: an audit's key look-ups, a background job's neighbour searches.
 * Each is absent when the builder cannot run it (the in-process builder): the caller asks the mapped graph.
 */
export class GraphFileQueries {
  constructor(
    private readonly files: GenerationFiles,
    private readonly space: EmbeddingSpace,
    private readonly hnsw: HnswParams,
    private readonly builder: IndexBuilder,
    /** Native threads a batch of neighbour searches runs on (see `GraphNeighborQuery.threads`). */
    private readonly threads = 1,
  ) {}

  /**
   * The keys of `keys` that the file of `state`'s generation lacks (an index audit's checklist); `keys` may
   * say where the thread reads them itself (see `GraphKeyLookup.keys`).
   */
  get keysMissing():
    | ((namespace: string, state: GraphState, keys: Float64Array | OffThreadRead) => Promise<number[]>)
    | undefined {
    const { builder } = this;
    if (!builder.keysMissingFromFile) return undefined;
    return (namespace, state, keys) => builder.keysMissingFromFile!({ ...this.file(namespace, state), keys });
  }

  /** Each row of `vectors`' `k` nearest in the file of `state`'s generation. */
  searcher(
    namespace: string,
  ): ((state: GraphState, vectors: Float32Array, k: number) => Promise<GraphNeighbors>) | undefined {
    const { builder } = this;
    if (!builder.nearestInFile) return undefined;
    return (state, vectors, k) =>
      builder.nearestInFile!({ ...this.file(namespace, state), vectors, k, threads: this.threads });
  }

  private file(namespace: string, state: GraphState) {
    return {
      path: this.files.pathOf(namespace, state.generation),
      dimensions: this.space.dimensions,
      params: this.hnsw,
    };
  }
}
