import { holds, type NamespaceState } from './namespace-state.js';

/** Keys an audit reads and checks against the index per event-loop turn (a few ms at a million). */
export const AUDIT_PAGE = 5_000;

/**
 * An index found whole is not checked again while its fingerprint holds (see `auditFingerprint`), except
 * once this long has passed: a full check costs about a second of the serving thread at a million vectors.
 */
export const AUDIT_RECHECK_MS = 600_000;

/**
 * What an audit of `state` depends on: the vectors stored for its namespace (`storedThrough`, their highest
 * write_seq, which moves with every vector stored or replaced) and what the index has applied (generation,
 * sizes, watermark). Two audits with the same fingerprint give the same answer. Null when the store cannot
 * say what it holds.
 */
export function auditFingerprint(state: NamespaceState, storedThrough: number | undefined): string | null {
  if (storedThrough === undefined) return null;
  return state.kind === 'exact'
    ? `exact ${state.matrix.size} ${state.watermark} ${storedThrough}`
    : `hnsw ${state.generation} ${state.graphSize} ${state.delta.size} ${state.watermark} ${storedThrough}`;
}

/**
 * The keys among `stored` (every key with a stored vector, a page at a time: see AUDIT_PAGE) that `state`
 * holds no vector for: a graph file saved by a version that dropped vectors stored out of change order, or
 * any other hole. A page of keys per event-loop turn, each checked against the graph in one native call:
 * at 100k keys, one `contains` call per key blocked the serving thread for ~230 ms; batched, ~30 ms in all.
 *
 * Returns null when `isCurrent` says the state was forgotten or replaced meanwhile (released, reloaded):
 * whatever holds the namespace now is audited later. Keys applied meanwhile by the pipeline are not
 * reported.
 */
export async function findMissingVectors(
  state: NamespaceState,
  stored: Iterable<number[]>,
  isCurrent: () => boolean,
): Promise<number[] | null> {
  const missing = new Set<number>();
  const pages = stored[Symbol.iterator]();
  for (;;) {
    // Checked before each page is read: a closed store must not be read.
    if (!isCurrent()) return null;
    const next = pages.next();
    if (next.done) break;
    const chunk = next.value;
    if (state.kind === 'exact') {
      for (const k of chunk) if (!state.matrix.has(k)) missing.add(k);
    } else {
      const inGraph = state.graph.contains(BigUint64Array.from(chunk, (k) => BigInt(k))) as boolean[];
      chunk.forEach((k, j) => {
        if (!inGraph[j] && !state.delta.has(k)) missing.add(k);
      });
    }
    await new Promise((r) => setImmediate(r));
  }
  if (!isCurrent()) return null;
  return [...missing].filter((k) => !holds(state, k));
}
