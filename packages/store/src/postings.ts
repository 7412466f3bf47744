// One term's scored matches as the postings cache holds them, and the array operations on them.

/** One FTS5 term (or phrase) scored alone against every memory it matches, keys ascending. */
export interface Postings {
  keys: Float64Array;
  /** FTS5 bm25() of the term alone: negative, lower is better. */
  scores: Float64Array;
  /** Entries used (the arrays grow by doubling when newer memories are appended). */
  length: number;
  /** Every memory with a key up to this one is covered. */
  watermark: number;
  /** Matches with keys below this one were left out (the term was over `maxPerTerm`); 0 when none were. */
  truncatedBelow: number;
  /**
   * How many rows match the term up to `watermark` (every namespace, as FTS5 counts them for the idf; for a
   * term confined to a namespace's token, the namespace's), as
   * of `syncedSeq`; -1 when not known (left out past `maxPerTerm`, or rewritten since). Lets new matches
   * be scored without bm25()'s walk of the whole doclist (see fts5-bm25.ts).
   */
  hits: number;
  /**
   * `hits` when the held scores were computed (-1: not known): each score carries the idf of that count,
   * so once the term's count has moved far from it the scores are stale (see TermPostingsCache's drift).
   */
  scoredHits: number;
  /** The corpus's rows when the held scores were computed (FTS5's count for every idf; -1: not known). */
  scoredRows: number;
  /**
   * For a term confined to a namespace's token, the idf every held score carries (read back from one when
   * scored: `carriedIdf` in fts5-bm25.ts; saved with the term), so a search of the namespace can put its own
   * in its place (namespace-idf.ts); undefined until a score is held, null when it cannot be told.
   */
  carriedIdf?: number | null;
  /** Set once the term's idf drifted while it was too costly to score again inline (see there). */
  stale: boolean;
  /** The change sequence this term was last brought up to date with. */
  syncedSeq: number;
  /** Scores that replace the base entry of a key rewritten in place (NaN: it no longer matches). */
  patch: Map<number, number>;
  /** Entries when the term was last saved or loaded from disk; -1 when it never was. */
  savedLength: number;
}

/** Appends matches newer than every key held, growing the arrays by doubling. */
export function append(p: Postings, rows: ReadonlyArray<readonly [number, number]>): void {
  if (rows.length === 0) return;
  const need = p.length + rows.length;
  if (need > p.keys.length) {
    const cap = Math.max(need, p.keys.length * 2);
    const keys = new Float64Array(cap);
    const scores = new Float64Array(cap);
    keys.set(p.keys.subarray(0, p.length));
    scores.set(p.scores.subarray(0, p.length));
    p.keys = keys;
    p.scores = scores;
  }
  for (const [key, score] of rows) {
    p.keys[p.length] = key;
    p.scores[p.length] = score;
    p.length++;
  }
}

/** Binary search in the first `length` (ascending) keys; -1 when absent. */
export function indexOf(keys: Float64Array, length: number, key: number): number {
  let lo = 0;
  let hi = length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    const k = keys[mid]!;
    if (k === key) return mid;
    if (k < key) lo = mid + 1;
    else hi = mid - 1;
  }
  return -1;
}
