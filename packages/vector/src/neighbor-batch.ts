import { setImmediate as yieldTurn } from 'node:timers/promises';
import type { GraphNeighbors } from './hnsw-params.js';
import {
  type GraphState,
  type NamespaceState,
  nearest,
  nearestFromAnswer,
  sizeOf,
} from './namespace-state.js';
import { UNFILTERED_OVERSAMPLE } from './search-sizing.js';
import type { KeyFilter } from './sources.js';
import { absorbersAmong, crowdedByDead, liveCandidates } from './vector-search.js';

/** The longest the serving thread merges answers in without yielding (the delta's scans are per query). */
const TURN_MS = 8;

export interface NeighborBatchDeps {
  /** The namespace's index as it is now (a refresh or a merge may change it while the graph is searched). */
  current(): NamespaceState | undefined;
  /** Searches the graph file of `state`'s generation for each row of `vectors` (see `nearestInFile`). */
  searchFile(state: GraphState, vectors: Float32Array, k: number): Promise<GraphNeighbors>;
  keys: KeyFilter;
}

/**
 * Each vector's `k` nearest live keys in one graph namespace, for a background job such as the
 * consolidation's near-duplicate pass: the graph's part is searched where builds run, and only the delta's
 * small exact scans and the liveness check run here, a few milliseconds at a time. Searched one by one on
 * this thread, a 100k catch-up held a distributed worker's thread for ~16 s of native searches, and the
 * embedded writer's for as long between queries. Each answer is what `searchVector` gives unfiltered (dead
 * copies stand for the memory that absorbed them), or null where that search would have widened (dead keys
 * crowd out the live ones, as after a dup storm): the caller searches that one itself. Null as a whole when
 * the namespace is not a graph; a failed search of the file (a reader's file deleted by the writer's next
 * generation) throws.
 */
export async function nearestOffThread(
  deps: NeighborBatchDeps,
  namespace: string,
  vectors: readonly Float32Array[],
  k: number,
): Promise<Array<Array<{ key: number; cosine: number }> | null> | null> {
  const state = deps.current();
  if (state?.kind !== 'hnsw' || vectors.length === 0) return null;
  const fetch = Math.ceil(k * UNFILTERED_OVERSAMPLE) + 8;
  const dims = state.delta.dimensions;
  const packed = new Float32Array(vectors.length * dims);
  for (const [i, v] of vectors.entries()) packed.set(v, i * dims);
  const generation = state.generation;
  const answer = await deps.searchFile(state, packed, fetch);
  const lists: Array<Array<{ key: number; cosine: number }>> = [];
  let size = sizeOf(state);
  let since = performance.now();
  for (let i = 0; i < vectors.length; i++) {
    if (performance.now() - since > TURN_MS) {
      await yieldTurn();
      since = performance.now();
    }
    // A merge or a refresh since the search: its answer may lack what the new graph took from the delta,
    // and a replaced index's graph may be released, so the rest is searched in the index as it is now.
    const now = deps.current();
    if (!now) return null;
    size = sizeOf(now);
    const rows = { keys: answer.keys, cosines: answer.cosines, from: i * fetch, count: answer.counts[i]! };
    const fresh = now === state && state.generation === generation;
    lists.push(
      (fresh ? nearestFromAnswer(state, vectors[i]!, fetch, rows) : null) ?? nearest(now, vectors[i]!, fetch),
    );
  }
  const all = lists.flat();
  const live = deps.keys.allowedKeys(
    namespace,
    all.map((n) => n.key),
    {},
  );
  const absorbers = absorbersAmong(deps.keys, namespace, all, live);
  return lists.map((raw) =>
    crowdedByDead(raw, live, k) && fetch < size ? null : liveCandidates(raw, live, absorbers, k),
  );
}
