import { ExactMatrix } from './exact-matrix.js';
import type { GenerationFiles } from './generation-files.js';
import type { GraphState } from './namespace-state.js';
import type { LogFn } from './sources.js';
import { releaseIndexSoon } from './usearch-index.js';

/**
 * Merges a graph namespace's delta into a new graph generation on the builder, and sets `state.merging`
 * until it is done. The serving thread keeps searching the old graph plus the delta; when the new file is
 * mapped, the delta entries it covers are dropped and the old graph is released. A failed merge is logged
 * and changes nothing: the delta keeps serving, and the next one tries again. A writer's job only.
 */
export function startDeltaMerge(
  namespace: string,
  state: GraphState,
  files: GenerationFiles,
  log: LogFn,
  /** Deletes up to this meta_seq are in `state.dropped` (or were never in the graph): the file's claim. */
  metaSeq: number,
): void {
  if (state.merging || (state.delta.size === 0 && state.dropped.size === 0)) return;
  const keysList = [...state.delta.keyList()];
  const dims = state.delta.dimensions;
  const keys = new BigUint64Array(new SharedArrayBuffer(keysList.length * 8));
  const vectors = new Float32Array(new SharedArrayBuffer(keysList.length * dims * 4));
  let watermark = state.graphWatermark;
  keysList.forEach((k, i) => {
    keys[i] = BigInt(k);
    vectors.set(state.delta.get(k)!, i * dims);
    watermark = Math.max(watermark, state.deltaSeq.get(k) ?? 0);
  });
  const merged = new Map(keysList.map((k) => [k, state.deltaSeq.get(k) ?? 0]));
  const removeKeys = BigUint64Array.from([...state.dropped], (k) => BigInt(k));
  const base = files.currentPath(namespace);
  const generation = state.generation + 1;
  const added = new Int32Array(new SharedArrayBuffer(4));
  state.mergeAdded = added;
  state.merging = (async () => {
    const side = await files.write(namespace, generation, watermark, metaSeq, {
      keys,
      vectors,
      removeKeys,
      basePath: base,
      added,
    });
    const graph = files.view(side);
    // Keep delta entries that changed after the merge snapshot was taken.
    const delta = new ExactMatrix(dims, Math.max(256, state.delta.size - merged.size));
    const deltaSeq = new Map<number, number>();
    let fresh = 0;
    for (const k of state.delta.keyList()) {
      const seq = state.deltaSeq.get(k) ?? 0;
      if (merged.get(k) === seq) continue;
      delta.upsert(k, state.delta.get(k)!);
      deltaSeq.set(k, seq);
      if (!graph.contains(BigInt(k))) fresh += 1;
    }
    const replaced = state.graph;
    // Keys the new file no longer holds leave `dropped`; keys deleted while the merge ran are in the file:
    // a delta key forgotten meanwhile (gone from the delta it was merged from) is dropped now.
    for (const k of state.dropped) if (!graph.contains(BigInt(k))) state.dropped.delete(k);
    for (const k of merged.keys()) if (!state.delta.has(k) && graph.contains(BigInt(k))) state.dropped.add(k);
    Object.assign(state, {
      graph,
      graphSize: side.count,
      generation,
      graphWatermark: watermark,
      delta,
      deltaSeq,
      fresh,
      // The new delta's entries are in no merge yet: the finished merge's count no longer applies while
      // the old file is let go of below.
      mergeAdded: undefined,
    });
    // Searches are synchronous: none can be inside the old graph now.
    await releaseIndexSoon(replaced);
    await files.removeStale(namespace, side.file, true);
  })()
    .catch((err: Error) => {
      log('error', 'vector index merge failed; the delta keeps serving', {
        namespace,
        error: err.message,
      });
    })
    .finally(() => {
      state.merging = null;
    });
}
