import type { Index } from 'usearch';
import type { ExactMatrix } from './exact-matrix.js';

/** A small namespace: every vector in one exact matrix, searched by brute force. */
export interface ExactState {
  kind: 'exact';
  matrix: ExactMatrix;
  /** Highest embedding write_seq applied: every vector written up to it is held. */
  watermark: number;
}

/**
 * An HNSW namespace: an immutable graph file, memory-mapped (`Index.view`), plus an exact delta of the
 * vectors stored since that file was built. The serving thread never inserts into a graph: inserts are
 * tens of milliseconds per batch at 768-d and would stall the event loop. Merges run on the builder.
 */
export interface GraphState {
  kind: 'hnsw';
  graph: Index;
  graphSize: number;
  generation: number;
  /** Highest embedding write_seq inside the graph file. */
  graphWatermark: number;
  delta: ExactMatrix;
  /** write_seq of each delta entry, to tell which entries a finished merge covered. */
  deltaSeq: Map<number, number>;
  /** Highest embedding write_seq applied (graph or delta): every vector written up to it is held. */
  watermark: number;
  /** Delta keys absent from the graph (new memories, not updates), for the namespace's size. */
  fresh: number;
  /**
   * Graph keys whose memory was deleted since the graph was built: never returned, not counted, and taken
   * out of the next merge's file.
   */
  dropped: Set<number>;
  merging: Promise<void> | null;
  /** How many of the delta's vectors the merge in flight has put in its new graph so far. */
  mergeAdded?: Int32Array;
}

export type NamespaceState = ExactState | GraphState;

/**
 * Vectors a fresh process would not find saved: the delta, less what the merge in flight has added to its
 * new graph so far (none for an exact namespace, nor for a delta a drain leaves beside its file: see
 * `carriesDelta`). At least one while a merge runs: its counter reaches the delta's size before the new
 * file is saved and mapped.
 */
export function unmergedOf(state: NamespaceState, mergeThreshold: number): number {
  if (state.kind !== 'hnsw') return 0;
  if (!state.merging) return carriesDelta(state, mergeThreshold) ? 0 : state.delta.size;
  const added = state.mergeAdded ? Atomics.load(state.mergeAdded, 0) : 0;
  // A merge that only takes deleted memories' keys out of the file has nothing waiting.
  return state.delta.size === 0 ? 0 : Math.max(1, state.delta.size - added);
}

/** How many distinct keys the namespace's index holds (a deleted memory's vector is not held). */
export function sizeOf(state: NamespaceState): number {
  return state.kind === 'exact' ? state.matrix.size : state.graphSize + state.fresh - state.dropped.size;
}

/** Whether the index holds a vector for `key` (graph or delta). */
export function holds(state: NamespaceState, key: number): boolean {
  return state.kind === 'exact'
    ? state.matrix.has(key)
    : state.delta.has(key) || (!state.dropped.has(key) && state.graph.contains(BigInt(key)) === true);
}

/**
 * Lets go of a deleted memory's vector. A graph cannot lose a node while mapped: its key is only marked
 * (see `dropped`) until the next merge writes a file without it.
 */
export function dropVector(state: NamespaceState, key: number): void {
  if (state.kind === 'exact') {
    state.matrix.remove(key);
    return;
  }
  const inGraph = state.graph.contains(BigInt(key)) === true;
  if (state.delta.remove(key)) {
    state.deltaSeq.delete(key);
    if (!inGraph) state.fresh -= 1;
  }
  if (inGraph) state.dropped.add(key);
}

/**
 * Whether a save should write a new graph file for its dropped keys alone (a delta always is). A mapped file
 * drops the keys deleted since it was written (see `Tombstones`), so a few deletes wait for the next write:
 * rewriting a million-vector file for one delete cost the next save as much as a thousand new vectors did.
 * At 1% of the graph they are worth it: below, searches ask the graph past them (see `nearest`), and a
 * load drops them again.
 */
export function dropsWorthRewriting(state: GraphState): boolean {
  return state.dropped.size > 0 && state.dropped.size >= state.graphSize * 0.01;
}

/**
 * Whether the periodic upkeep merges a graph's delta and drops into a new generation: deletes worth
 * rewriting the file for, or a delta of a thirty-second of the graph (`mergeThreshold` vectors are merged
 * as they arrive). A merge rewrites the whole file whatever the delta holds (530 MB at a million vectors:
 * loaded, added to and saved on the pool, then mapped on the serving thread, 0.1–0.26 s, and audited in
 * full), while a delta costs its exact scan per search and its catch-up at the next load. Merged every 30 s
 * before, a server under 10 writes/s at a million rewrote its file twice a minute.
 */
export function worthMerging(state: GraphState): boolean {
  return state.delta.size >= Math.max(1, state.graphSize / 32) || dropsWorthRewriting(state);
}

/**
 * How many vectors a graph of `graphSize` may keep in its delta when a save ends (see `carriesDelta`): fewer
 * than a 256th of it and than `mergeThreshold`.
 */
export function carriedLimit(graphSize: number, mergeThreshold: number): number {
  return Math.min(mergeThreshold, graphSize / 256);
}

/**
 * Whether a drain or a close leaves a graph's delta as it is rather than merging it: fewer vectors than a
 * 256th of the graph and than `mergeThreshold` (the most a running writer holds between its merges), every
 * one stored after the file's watermark. Those are in SQLite past the watermark, and the next process to
 * load the namespace takes them into its delta (as after a kill -9): nothing is rebuilt, and the file is
 * not rewritten whole (530 MB and 4–5 s of a pool thread at a million) for the few vectors of a small
 * `cairn ingest` or of a server's last seconds. A vector the audit put back (an older write, recorded at
 * the file's watermark) is not past it, so it is merged.
 */
export function carriesDelta(state: GraphState, mergeThreshold: number): boolean {
  if (state.delta.size >= carriedLimit(state.graphSize, mergeThreshold)) return false;
  for (const seq of state.deltaSeq.values()) if (seq <= state.graphWatermark) return false;
  return true;
}

/** Takes in one stored vector (a memcpy: exact matrices and deltas, never a graph insert). */
export function applyVector(
  state: NamespaceState,
  key: number,
  writeSeq: number,
  vector: Float32Array,
): void {
  if (state.kind === 'exact') state.matrix.upsert(key, vector);
  else {
    // Written again after a delete: its new vector is in the delta, which shadows the graph's copy.
    state.dropped.delete(key);
    if (!state.delta.has(key) && !state.graph.contains(BigInt(key))) state.fresh += 1;
    state.delta.upsert(key, vector);
    state.deltaSeq.set(key, writeSeq);
  }
  state.watermark = Math.max(state.watermark, writeSeq);
}

/** The `k` nearest keys by cosine: the graph's, minus keys the delta holds newer vectors for, plus the delta's. */
export function nearest(
  state: NamespaceState,
  vector: Float32Array,
  k: number,
): Array<{ key: number; cosine: number }> {
  if (k <= 0) return [];
  if (state.kind === 'exact') return state.matrix.search(vector, k);
  const q = vector.byteOffset === 0 ? vector : vector.slice();
  let out: Array<{ key: number; cosine: number }> = [];
  // Keys the graph answers with but does not serve (deleted, or with a newer vector in the delta) can fill
  // a whole answer: a deleted cluster near the query left it empty until the file was rewritten. Ask for
  // more, doubling, while they crowd out over a quarter of it and the graph has more to give (callers
  // already over-fetch for the few a search loses; asking again for each would double its cost).
  for (let ask = Math.min(k, state.graphSize); ; ask = Math.min(state.graphSize, ask * 2)) {
    const m = state.graph.search(q, ask, 0);
    out = [];
    for (let i = 0; i < m.keys.length; i++) {
      const key = Number(m.keys[i]);
      if (serves(state, key)) out.push({ key, cosine: 1 - m.distances[i]! });
    }
    if (!crowdedOut(state, out.length, m.keys.length, ask, k)) break;
  }
  return withDelta(state, q, out, k);
}

/**
 * `nearest` over an answer the graph's file gave elsewhere (see `IndexBuilder.nearestInFile`), asked for
 * `k` (or the whole graph): rows `[from, from + count)` of `keys` and `cosines`. Null where `nearest` would
 * ask the graph again (keys it does not serve crowd the answer out): the caller asks here.
 */
export function nearestFromAnswer(
  state: GraphState,
  vector: Float32Array,
  k: number,
  answer: { keys: Float64Array; cosines: Float32Array; from: number; count: number },
): Array<{ key: number; cosine: number }> | null {
  const out: Array<{ key: number; cosine: number }> = [];
  for (let i = answer.from; i < answer.from + answer.count; i++) {
    const key = answer.keys[i]!;
    if (serves(state, key)) out.push({ key, cosine: answer.cosines[i]! });
  }
  if (crowdedOut(state, out.length, answer.count, Math.min(k, state.graphSize), k)) return null;
  return withDelta(state, vector.byteOffset === 0 ? vector : vector.slice(), out, k);
}

/** Whether the index serves a key its graph answered with: not deleted, and no newer vector in the delta. */
function serves(state: GraphState, key: number): boolean {
  return !state.delta.has(key) && !state.dropped.has(key);
}

/** Over a quarter of an answer of `answered` (asked: `ask`) not served, and the graph has more to give. */
function crowdedOut(
  state: GraphState,
  servedCount: number,
  answered: number,
  ask: number,
  k: number,
): boolean {
  return servedCount < k * 0.75 && answered >= ask && ask < state.graphSize;
}

/** The graph's served part (nearest first) with the delta's nearest merged in, cut to `k`. */
function withDelta(
  state: GraphState,
  q: Float32Array,
  out: Array<{ key: number; cosine: number }>,
  k: number,
): Array<{ key: number; cosine: number }> {
  if (state.delta.size > 0) {
    out.push(...state.delta.search(q, k));
    out.sort((a, b) => b.cosine - a.cosine);
  }
  return out.slice(0, k);
}
