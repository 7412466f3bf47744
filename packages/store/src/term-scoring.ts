import { fileURLToPath } from 'node:url';
import { carriedIdf, isConfined, matchesUpTo, wordRowsUpTo } from './fts5-bm25.js';
import type { StatementCache } from './statement-cache.js';

/** One term to score alone against the store: what the postings cache asks of a scorer. */
export interface TermScoreRequest {
  /** The FTS5 MATCH of the term (confined to a namespace's scope token when the leg confines). */
  match: string;
  /** The bm25() call with the leg's column weights. */
  bm25: string;
  /** Only memories up to this key are scored: the cache's view of the store when it asked. */
  maxKey: number;
  /** At most this many matches, the newest. */
  maxPerTerm: number;
}

/** A term's matches, keys ascending, with FTS5's bm25 of the term alone (negative: lower is better). */
export interface ScoredMatches {
  keys: Float64Array;
  scores: Float64Array;
  /**
   * Rows holding the term up to the request's `maxKey`: for a word or a phrase every namespace's (what FTS5
   * counts for its idf), for a term confined to a namespace's token the namespace's; -1 when not known (past
   * `maxPerTerm`, a term that is neither plain nor confined: see `isPlainTerm`). Equal to the matches' count
   * when they are all there.
   */
  hits: number;
  /**
   * For a term confined to a namespace's token, the idf its scores carry (see `carriedIdf`), read in the
   * same snapshot; null when not told, absent for other terms.
   */
  idf?: number | null;
}

/**
 * Scores terms somewhere other than the calling thread (a worker with its own read connection). A term
 * seen for the first time costs FTS5 ~1 µs per match, 10–17 ms for a common word at a million memories:
 * too long to hold the event loop of a server.
 */
export type TermScorer = (req: TermScoreRequest) => Promise<ScoredMatches>;

/** The worker-thread entry that scores terms (see `term-score-task.ts`), for a piscina pool. */
export const TERM_SCORE_TASK = fileURLToPath(new URL('../dist/term-score-task.js', import.meta.url));

/**
 * The one statement that scores a term, wherever it runs: the newest `maxPerTerm` matches at or below
 * `maxKey`, then ascending by key. Parameters: match, maxKey, maxPerTerm.
 */
export function termScoreSql(bm25: string): string {
  return `SELECT key, score FROM (SELECT rowid AS key, ${bm25} AS score FROM memories_fts
            WHERE memories_fts MATCH ? AND rowid <= ? ORDER BY rowid DESC LIMIT ?) ORDER BY key`;
}

/**
 * Scores one term against the store, wherever it runs (the serving thread, a term thread's connection):
 * its newest `maxPerTerm` matches, and how many rows hold it, read in one snapshot so that the count is of
 * the corpus the scores were computed against.
 */
export function scoreTerm(statements: StatementCache, req: TermScoreRequest): ScoredMatches {
  return statements.snapshot(() => {
    const rows = statements
      .get(termScoreSql(req.bm25))
      .raw()
      .all(req.match, req.maxKey, req.maxPerTerm) as Array<[number, number]>;
    const newest = rows.at(-1);
    const confined = isConfined(req.match);
    // A confined term cut at the cap is counted: the namespace's count behind its idf (see
    // TermPostingsCache's namespace weight), kept current as its new matches come.
    const hits =
      rows.length < req.maxPerTerm
        ? rows.length
        : confined
          ? matchesUpTo(statements, req, req.maxKey)
          : wordRowsUpTo(statements, req, newest!, req.maxKey);
    const scored = toScoredMatches(rows, hits);
    // Where a term thread scores it: reading the idf back can cost a walk (a phrase's count).
    if (newest && confined) scored.idf = carriedIdf(statements, req, newest[0], newest[1]);
    return scored;
  });
}

/** Rows of `termScoreSql` as typed arrays. */
function toScoredMatches(rows: ReadonlyArray<readonly [number, number]>, hits: number): ScoredMatches {
  const keys = new Float64Array(rows.length);
  const scores = new Float64Array(rows.length);
  for (let i = 0; i < rows.length; i++) {
    keys[i] = rows[i]![0];
    scores[i] = rows[i]![1];
  }
  return { keys, scores, hits };
}
