// This file is the public API of @cairn/vector; named exports only.
export { ExactMatrix } from './exact-matrix.js';
export {
  DEFAULT_HNSW_PARAMS,
  type GraphKeyLookup,
  type GraphNeighborQuery,
  type GraphNeighbors,
  type HnswParams,
  type IndexBuilder,
  type IndexBuildRequest,
  type IndexBuildResult,
  type OffThreadRead,
} from './hnsw-params.js';
export type { EmbeddingSource, KeyFilter, LogFn } from './sources.js';
export {
  addInChunks,
  createHnswIndex,
  inProcessIndexBuilder,
  SEQUENTIAL_PREFIX,
  saveIndexAtomically,
  viewIndexFile,
} from './usearch-index.js';
export { VectorIndexManager } from './vector-index-manager.js';
export type { VectorIndexOptions } from './vector-index-options.js';
export {
  BUILD_TASK_FILE,
  GRAPH_LOOKUP_TASK_FILE,
  GRAPH_NEIGHBORS_TASK_FILE,
  type TaskRunner,
  workerIndexBuilder,
} from './worker-index-builder.js';
