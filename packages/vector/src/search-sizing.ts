// How many candidates a vector search asks the graph for. Filters are applied after the graph search,
// so a filtered search must ask for more; asking for too many costs even below ef.

/** Filtered searches over HNSW fetch this many times `limit`, since filters remove candidates after search. */
export const FILTERED_OVERSAMPLE = 4;
/**
 * Unfiltered searches still oversample a little: superseded and deleted memories are dropped after search.
 * Kept small because a wider k costs even below ef: at 100k, 768-d, f16, ef 128, one search for k = 83 took
 * 1.6 ms and for k = 58 1.3 ms, with the same recall@10.
 */
export const UNFILTERED_OVERSAMPLE = 1.2;
/** A filtered search that found at least this many allowed candidates does not widen. */
export const MIN_FILTERED_CANDIDATES = 10;
/** A filter allowing at most this many memories is served by an exact scan of just those vectors. */
export const MAX_EXACT_FILTERED = 1_000;
/** Otherwise the approximate search is widened by this factor once. */
export const WIDE_OVERSAMPLE = 3;
/** A filtered search sized from an estimated pass rate asks for this much more than the rate implies. */
const RATE_MARGIN = 1.5;

/**
 * How many graph results a filtered search asks for, given the filter's estimated pass rate: the full
 * pool when that costs no more than the fixed oversample, else enough for a few good candidates in one
 * search (a two-week window may pass ~4% of a year: the fixed 4× found too few and searched again 3×
 * wider).
 */
export function filteredFetch(
  limit: number,
  rate: number,
  fallback: number,
  enough: number,
  size: number,
): number {
  const floor = Math.ceil(limit * UNFILTERED_OVERSAMPLE) + 8;
  const full = Math.ceil((limit / Math.max(rate, 1e-6)) * RATE_MARGIN) + 8;
  if (full <= fallback) return Math.min(size, Math.max(floor, full));
  const few = Math.ceil((enough / Math.max(rate, 1e-6)) * RATE_MARGIN) + 8;
  return Math.min(size, Math.max(fallback, Math.min(few, fallback * WIDE_OVERSAMPLE)));
}
