import { holds, type NamespaceState } from './namespace-state.js';

/** Keys an audit checks against the index per event-loop turn. */
const AUDIT_SCAN_CHUNK = 10_000;

/**
 * The keys among `stored` (every key with a stored vector) that `state` holds no vector for: a graph file
 * saved by a version that dropped vectors stored out of change order, or any other hole. A chunk of keys
 * per event-loop turn, each chunk checked against the graph in one native call: at 100k keys, one
 * `contains` call per key blocked the serving thread for ~230 ms; batched, ~30 ms in all.
 *
 * Returns null when `isCurrent` says the state was forgotten or replaced meanwhile (released, reloaded):
 * whatever holds the namespace now is audited later. Keys applied meanwhile by the pipeline are not
 * reported.
 */
export async function findMissingVectors(
  state: NamespaceState,
  stored: readonly number[],
  isCurrent: () => boolean,
): Promise<number[] | null> {
  const missing: number[] = [];
  for (let i = 0; i < stored.length; i += AUDIT_SCAN_CHUNK) {
    if (!isCurrent()) return null;
    const chunk = stored.slice(i, i + AUDIT_SCAN_CHUNK);
    if (state.kind === 'exact') {
      for (const k of chunk) if (!state.matrix.has(k)) missing.push(k);
    } else {
      const inGraph = state.graph.contains(BigUint64Array.from(chunk, (k) => BigInt(k))) as boolean[];
      chunk.forEach((k, j) => {
        if (!inGraph[j] && !state.delta.has(k)) missing.push(k);
      });
    }
    await new Promise((r) => setImmediate(r));
  }
  if (!isCurrent()) return null;
  return missing.filter((k) => !holds(state, k));
}
