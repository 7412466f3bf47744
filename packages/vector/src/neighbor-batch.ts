import { setImmediate as yieldTurn } from 'node:timers/promises';
import type { GraphNeighbors } from './hnsw-params.js';
import {
  type ExactState,
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

/**
 * An exact namespace's batch is scanned in groups of about this much work, rows × queries × dimensions
 * (~2–4 ms of i8 scans on a slow 2-core machine), the event loop free between groups.
 */
const MATRIX_WORK_PER_CALL = 49_152 * 384;

/**
 * The most dimensions an exact namespace's batch is scanned in i8 for: i8 cosines run low by about
 * d / (12 · 127²), and past this the error nears the slack the consolidation verifies within (0.02; worst
 * measured 0.011 at 1,536 dimensions, 0.017 at 3,072, 0.023 at 4,096, where near pairs were missed).
 */
export const MAX_MATRIX_DIMENSIONS = 1_536;

/**
 * Fewer queries than this into an exact namespace are left to the caller's one-at-a-time search: a batch
 * copies the namespace's i8 rows for its call (and the first one makes them), costing about what a few
 * f32 scans do.
 */
export const MIN_MATRIX_BATCH = 4;

export interface NeighborBatchDeps {
  /** The namespace's index as it is now (a refresh or a merge may change it while the graph is searched). */
  current(): NamespaceState | undefined;
  /**
   * Searches the graph file of `state`'s generation for each row of `vectors` (see `nearestInFile`);
   * absent (no pool), a graph namespace's batch is left to the caller.
   */
  searchFile?(state: GraphState, vectors: Float32Array, k: number): Promise<GraphNeighbors>;
  keys: KeyFilter;
}

/**
 * Each vector's `k` nearest live keys in one namespace, for a background job such as the consolidation's
 * near-duplicate pass. In a graph namespace the graph's part is searched where builds run, and only the
 * delta's small exact scans and the liveness check run here, a few milliseconds at a time; an exact
 * namespace's batch is scanned here in i8, a few milliseconds at a time (see `ExactMatrix.searchMany`).
 * Searched one by one on this thread, a graph's 100k catch-up held a distributed worker's thread for ~16 s
 * of native searches, and the embedded writer's for as long between queries. Each answer is what `searchVector` gives unfiltered (dead
 * copies stand for the memory that absorbed them), or null where that search would have widened (dead keys
 * crowd out the live ones, as after a dup storm): the caller searches that one itself. Null as a whole when
 * the namespace is not loaded, when a graph namespace has no pool, or when an exact namespace's batch is
 * too small to be worth it; a failed search of the file (a reader's file deleted by the writer's next
 * generation) throws.
 */
export async function nearestOffThread(
  deps: NeighborBatchDeps,
  namespace: string,
  vectors: readonly Float32Array[],
  k: number,
): Promise<Array<Array<{ key: number; cosine: number }> | null> | null> {
  const state = deps.current();
  if (!state || vectors.length === 0) return null;
  if (state.kind === 'exact') return nearestInMatrix(deps, namespace, state, vectors, k);
  if (state.kind !== 'hnsw' || !deps.searchFile) return null;
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
  return servedLists(deps, namespace, lists, k, fetch < size);
}

/**
 * An exact namespace's batch, scanned on this thread in i8 a group at a time: the answers are the matrix
 * as it was when the scans began (see `ExactMatrix.searchMany`). Null when the batch is too small, the
 * vectors too wide for i8 cosines (MAX_MATRIX_DIMENSIONS), or the namespace's index was replaced meanwhile
 * (grown into a graph): the caller then searches each vector itself.
 */
async function nearestInMatrix(
  deps: NeighborBatchDeps,
  namespace: string,
  state: ExactState,
  vectors: readonly Float32Array[],
  k: number,
): Promise<Array<Array<{ key: number; cosine: number }> | null> | null> {
  const size = state.matrix.size;
  if (vectors.length < MIN_MATRIX_BATCH || size === 0 || state.matrix.dimensions > MAX_MATRIX_DIMENSIONS)
    return null;
  const fetch = Math.min(size, Math.ceil(k * UNFILTERED_OVERSAMPLE) + 8);
  const lists = await state.matrix.searchMany(vectors, fetch, MATRIX_WORK_PER_CALL, () => yieldTurn());
  if (deps.current() !== state) return null;
  return servedLists(deps, namespace, lists, k, fetch < size);
}

/**
 * Each raw list as `searchVector` serves it unfiltered: dead copies stand for the memory that absorbed
 * them, and a list they crowd is null where a wider search could still find more (`canWiden`).
 */
function servedLists(
  deps: NeighborBatchDeps,
  namespace: string,
  lists: Array<Array<{ key: number; cosine: number }>>,
  k: number,
  canWiden: boolean,
): Array<Array<{ key: number; cosine: number }> | null> {
  const all = lists.flat();
  const live = deps.keys.allowedKeys(
    namespace,
    all.map((n) => n.key),
    {},
  );
  const absorbers = absorbersAmong(deps.keys, namespace, all, live);
  return lists.map((raw) =>
    crowdedByDead(raw, live, k) && canWiden ? null : liveCandidates(raw, live, absorbers, k),
  );
}
