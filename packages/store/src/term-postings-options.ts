// The postings cache's tunables, and the bounds on how far held scores may drift from what scoring them now
// would give before they are scored again.

/** Tunables of the postings cache. */
export interface TermPostingsOptions {
  /**
   * Postings (one memory's score for one term) kept in memory across all terms, 16 bytes each;
   * the least recently used terms are dropped past it. @defaultValue 4_000_000
   */
  maxEntries: number;
  /**
   * At most this many matches of one term are scored, the most recently stored ones. It bounds what a term
   * costs the first time it is seen (FTS5 scores ~1 µs per match): a term in 20% of 100k memories would
   * otherwise cost 20–25 ms once on a small machine, and a question can hold several. Older matches of such
   * a term miss only that term's contribution (its idf is low: it is common), and memories stored later
   * are always added. @defaultValue 10_000
   */
  maxPerTerm: number;
  /**
   * In-place content updates to already cached memories are patched term by term; past this many pending,
   * the cache starts over. @defaultValue 512
   */
  maxPendingUpdates: number;
  /**
   * A writer saves a term it scored with at least this many matches in the `term_postings` table, and any
   * process loads it from there instead of scoring it again while it still holds (see `loadSaved`). 0 turns
   * saving and loading off. By default, every term costly enough to be scored off the serving thread
   * (COSTLY_TERM_MATCHES): loading its row costs a small fraction of scoring it, and a new process's first
   * queries then wait on no thread for it. @defaultValue COSTLY_TERM_MATCHES (300)
   */
  saveFromMatches: number;
}

/**
 * Matches from which scoring a term is worth keeping out of a search's way. Scoring costs ~1 µs a match
 * inline, a round trip to a term thread ~0.2–0.5 ms of waiting (which the router spends on the vector leg),
 * so the lexical leg sends a new term this common to a term thread (offloading every new term made a lone
 * client's first-pass p50 0.4–0.7 ms slower; from 2,000 down to 300 matches moved ~0.8 ms a first-pass query
 * off the serving thread at 100k with no change in its latency beyond noise). A writer saves such a term's
 * postings too (saveFromMatches), so a later process loads them, a row read, instead: saving from 300 rather
 * than 2,000 matches made a new engine's first pass over the peers' queries at 100k 23–28% faster (p50
 * 4.6–5.6 → 3.2–4.1 ms, four runs each) for 13 MB more (3% of the folder) and a second of `cairn ingest`; at
 * a million, 4,768 terms saved instead of 1,976 take 28 MB more (0.7%) (bench/RESULTS.md).
 */
export const COSTLY_TERM_MATCHES = 300;

export const DEFAULT_TERM_POSTINGS_OPTIONS: Readonly<TermPostingsOptions> = Object.freeze({
  maxEntries: 4_000_000,
  maxPerTerm: 10_000,
  maxPendingUpdates: 512,
  saveFromMatches: COSTLY_TERM_MATCHES,
});

/**
 * A writer saves a saved term again once this many new matches were appended to it since: a new process
 * loads the saved row, then scores every match newer than it on its first search that says the word (on
 * the serving thread, ~1 µs a match, or bm25()'s walk past 2,000), so without it the first searches of
 * every restart grow dearer with each write since the ingest. At 10 writes a second this saves ~0.2 rows
 * a second, each a blob of ~12 bytes a match.
 */
export const RESAVE_AFTER_NEW_MATCHES = 1_000;

/**
 * The cache starts over once rows added or rewritten since it last did pass this share of the corpus:
 * scores computed before carry the idf and average length of then.
 */
export const MAX_DRIFT = 0.1;

/**
 * A term's scores are computed again once its idf, at the count of rows now holding it, differs from the
 * idf its scores were computed with by more than this share of the latter (of 1, for an idf under 1: a
 * word in nearly half the rows has an idf near 0, which a few writes move by a large share and its scores
 * by next to nothing). A word rare when first scored and common since (the cache starts over only when a
 * tenth of the whole corpus changed) kept scoring its first matches as a rare word's, several times what a
 * fresh process gives them.
 */
export const MAX_IDF_DRIFT = 0.1;

/** A term that drifted is scored again on the spot up to this many matches (~1 µs each); past it, off-thread. */
export const INLINE_RESCORE_MATCHES = 2_000;

/** A term is saved again only this close to the idf its scores carry: a load takes the saved count as theirs. */
export const MAX_SAVED_IDF_DRIFT = 0.02;
