import type { QueryCoverage, SearchRelevance } from '@cairn/core';

/** How the relevance signal is computed and cut into levels. */
export interface RelevanceOptions {
  /** The best of this many first hits counts: the answer is often second or third. @defaultValue 3 */
  hits: number;
  /**
   * A name the query gives (a capitalised word other than its first) is what the question is about: it
   * weighs this many times its idf. A memory about the right topic but another person is then a weak match,
   * not a relevant one. @defaultValue 3
   */
  nameWeight: number;
  /**
   * Every word weighs at least this idf, so a word common in the namespace (a speaker's name in every
   * other turn) still counts when it is missing. @defaultValue 1
   */
  idfFloor: number;
  /**
   * Score at or above which the level is `relevant`. Chosen leaving one LoCoMo dev conversation out at a
   * time, as the cut that best separates answerable questions from category 5 (questions about things never
   * said, built from real facts with the person swapped): 0.65–0.775, median 0.675. @defaultValue 0.675
   */
  relevantAt: number;
  /**
   * Score below which the level is `none`. Chosen the same way, as the cut that best separates answerable
   * questions from questions of another conversation asked of this one (0.325 in four folds of five; held
   * out, 0.976 balanced accuracy). @defaultValue 0.325
   */
  noneBelow: number;
}

export const DEFAULT_RELEVANCE_OPTIONS: Readonly<RelevanceOptions> = Object.freeze({
  hits: 3,
  nameWeight: 3,
  idfFloor: 1,
  relevantAt: 0.675,
  noneBelow: 0.325,
});

const QUESTION_WORDS = new Set(
  'what when where who whom whose why how which did does do is are was were has have had would could can should will i'.split(
    ' ',
  ),
);

/** Lower-cased words written with a capital inside the query (not as its first word): likely names. */
export function queryNames(query: string): Set<string> {
  const names = new Set<string>();
  const words = query.match(/[\p{L}\p{N}_]+/gu) ?? [];
  words.forEach((w, i) => {
    const lower = w.toLowerCase();
    if (i > 0 && /^\p{Lu}/u.test(w) && !QUESTION_WORDS.has(lower)) names.add(lower);
  });
  return names;
}

/**
 * The share of the query each memory says in its own words: its matched words' weight over all the query
 * words' weight (idf, at least `idfFloor`, names × `nameWeight`). 0 for a memory that says none.
 */
export function coverageShares(
  query: string,
  coverage: QueryCoverage,
  keys: readonly number[],
  opts: Pick<RelevanceOptions, 'nameWeight' | 'idfFloor'> = DEFAULT_RELEVANCE_OPTIONS,
): Map<number, number> {
  const names = queryNames(query);
  const weight = (w: { word: string; idf: number }) =>
    Math.max(w.idf, opts.idfFloor) * (names.has(w.word) ? opts.nameWeight : 1);
  const total = coverage.words.reduce((sum, w) => sum + weight(w), 0);
  const out = new Map<number, number>();
  for (const key of keys) {
    const matched = coverage.matched.get(key) ?? new Set<string>();
    out.set(
      key,
      total > 0
        ? coverage.words.reduce((sum, w) => sum + (matched.has(w.word) ? weight(w) : 0), 0) / total
        : 0,
    );
  }
  return out;
}

/**
 * Scores how well the first hits answer the query from what the lexical leg says they contain. No hit,
 * or a query with no searchable word, scores 0 (`none`).
 */
export function relevanceOf(
  query: string,
  coverage: QueryCoverage,
  hitKeys: readonly number[],
  opts: RelevanceOptions = DEFAULT_RELEVANCE_OPTIONS,
): SearchRelevance {
  const first = hitKeys.slice(0, opts.hits);
  const shares = coverageShares(query, coverage, first, opts);
  let score = 0;
  const said = new Set<string>();
  for (const key of first) {
    for (const w of coverage.matched.get(key) ?? []) said.add(w);
    score = Math.max(score, shares.get(key)!);
  }
  score = Math.round(score * 1000) / 1000;
  const level =
    first.length === 0 || score < opts.noneBelow ? 'none' : score >= opts.relevantAt ? 'relevant' : 'weak';
  return {
    score,
    level,
    missing: coverage.words.map((w) => w.word).filter((w) => !said.has(w)),
  };
}
