import {
  hasFilters,
  type LexicalLeg,
  type LexicalLegResult,
  type QueryCoverage,
  type SearchFilters,
  withDefaults,
} from '@cairn/core';
import type Database from 'better-sqlite3';
import { facetClauses } from './facet-tokens.js';
import { allowedKeys, liveFilterSql } from './filter-sql.js';
import { frequentWords } from './frequent-words.js';
import {
  DEFAULT_FTS_QUERY_OPTIONS,
  type FtsQueryOptions,
  planFtsQuery,
  renderFtsQuery,
} from './fts-query.js';
import { type PlannedQuery, type ScoredRow, searchInFts5, smallAllowedSet } from './fts5-plans.js';
import { Fts5Terms } from './fts5-terms.js';
import { highestKey } from './highest-key.js';
import type { KeyCatalog } from './key-catalog.js';
import type { NamespaceTermCounts } from './namespace-idf.js';
import { OWN_COLUMNS, wordsSaidBy } from './query-coverage.js';
import { SavedTermPostings } from './saved-term-postings.js';
import { scopeToken } from './scope-token.js';
import { Accumulator, isMatch } from './score-accumulator.js';
import { SessionMatch } from './session-match.js';
import { sessionsFromCatalog, sessionsFromSql } from './session-numbering.js';
import { StatementCache } from './statement-cache.js';
import { TermPostingsCache } from './term-postings.js';
import { COSTLY_TERM_MATCHES, type TermPostingsOptions } from './term-postings-options.js';
import type { TermQuery } from './term-query.js';
import type { TermScorer } from './term-scoring.js';
import { TermStatistics } from './term-statistics.js';

/** Tunables of the lexical leg. */
export interface LexicalOptions extends FtsQueryOptions {
  /**
   * bm25() column weights for title, text, identifier parts, the namespace token and the session context
   * (the words of the memory before a turn). Titles are short and chosen by the writer, so a match there
   * says more; parts are split identifiers, weaker evidence than the word itself; context is what a turn
   * answers, weaker still than what it says. @defaultValue `[3, 1, 0.4, 0, 0.5]`
   */
  columnWeights: readonly [number, number, number, number, number];
  /**
   * A term found in more than this share of the searched rows is dropped from the query when other terms
   * remain: its idf is near zero, so it barely moves BM25, but FTS5 would score every row it matches.
   * @defaultValue 0.2
   */
  maxTermDocShare: number;
  /** Pruning starts only above this many rows; small corpora are cheap to score in full. @defaultValue 20_000 */
  pruneAboveDocs: number;
  /**
   * FTS5 computes bm25 for every matching row before it can sort. When the kept terms are estimated to
   * match more rows than this, only the most recently stored `scoreBudget` matches are scored (FTS5 walks
   * rowids newest first and stops), which bounds latency on queries of common words. @defaultValue 4_000
   */
  scoreBudget: number;
  /**
   * Session match: a memory's score gains this share of its session's score as a document (the sum over
   * the query's terms of the best contribution any memory of the session makes; see session-match.ts).
   * 0 turns it off. The search option `sessionMatch` overrides it per query. @defaultValue 0.5
   */
  sessionWeight: number;
  /** The cache of per-term bm25 contributions that queries are summed from. */
  postings: Partial<TermPostingsOptions>;
}

export const DEFAULT_LEXICAL_OPTIONS: Readonly<LexicalOptions> = Object.freeze({
  ...DEFAULT_FTS_QUERY_OPTIONS,
  columnWeights: Object.freeze([3, 1, 0.4, 0, 0.5] as const),
  maxTermDocShare: 0.2,
  pruneAboveDocs: 20_000,
  scoreBudget: 4_000,
  sessionWeight: 0.5,
  postings: Object.freeze({}),
});

/** Rows, and the share of a row's bm25 that came from its session's match (0: none). */
interface RankedRows {
  rows: ScoredRow[];
  matches: number;
  sessionShare: (key: number) => number;
}

const NO_SHARE = () => 0;

/**
 * Without the key catalog (while it loads), the sessions of at most this many matching memories are looked
 * up in SQLite for session match; a query matching more goes without it. Each lookup reads the memory's
 * row: at a million memories 20,000 of them held a new server's searches for 60–120 ms each, for the
 * seconds its catalog took to load.
 */
const MAX_SQL_SESSION_LOOKUP = 2_000;

/**
 * The lexical leg: BM25 over the FTS5 index, confined to one namespace, with the caller's filters.
 * Planning: sanitise the query, drop stop words, drop terms too frequent to discriminate, confine the
 * MATCH to the namespace's token when the namespace is a minority of the corpus, and bound the number of
 * rows scored.
 */
export class LexicalSearch implements LexicalLeg {
  private readonly opts: LexicalOptions;
  private readonly statements: StatementCache;
  readonly stats: TermStatistics;
  readonly postings: TermPostingsCache;
  private readonly sums = new Accumulator();
  private readonly sessions = new SessionMatch();
  /** What FTS5 indexes for a word, asked of its tokenizer (a query's word coverage: see `wordsSaidBy`). */
  private readonly terms = new Fts5Terms();
  private scorer: TermScorer | null = null;

  /**
   * @param catalog When given (and serving), winners are checked against it in memory: every match is
   * tested, so filters of any selectivity are answered from the cached postings alone.
   */
  constructor(
    db: Database.Database,
    opts: Partial<LexicalOptions> = {},
    private readonly catalog: KeyCatalog | null = null,
  ) {
    this.opts = withDefaults(DEFAULT_LEXICAL_OPTIONS, opts);
    this.statements = new StatementCache(db);
    this.stats = new TermStatistics(
      this.statements,
      catalog ? (ns) => catalog.membersAsOfLastSync(ns) : null,
    );
    this.postings = new TermPostingsCache(
      this.statements,
      this.opts.postings,
      new SavedTermPostings(db, this.statements),
    );
  }

  searchLexical(req: {
    namespace: string;
    query: string;
    filters: SearchFilters;
    limit: number;
    contextWeight?: number;
    sessionWeight?: number;
  }): LexicalLegResult {
    const plan = this.plan(req);
    if (!plan.searchable) return { candidates: [], ftsQuery: null, droppedTerms: plan.query.stopWords };
    const { query, pruned, bm25, terms } = plan;
    // Counts over the whole folder are not this tenant's to see (see LexicalLegResult.plan).
    const estimate = (n: number) =>
      plan.confine || this.stats.rows() === this.stats.rows(req.namespace) ? { estimatedMatches: n } : {};
    const ftsQuery = renderFtsQuery(plan.kept, plan.scope, facetClauses(req.filters))!;
    const sessionWeight = req.sessionWeight ?? this.opts.sessionWeight;
    const summed = this.fromTermPostings(terms, { ...req, sessionWeight });
    if (summed) {
      return {
        candidates: summed.rows.map((r, i) => {
          const session = summed.sessionShare(r.key);
          return { key: r.key, bm25: r.bm25, rank: i + 1, ...(session === 0 ? {} : { session }) };
        }),
        ftsQuery,
        droppedTerms: [...query.stopWords, ...pruned.pruned],
        plan: { mode: 'terms', ...estimate(summed.matches), budget: this.postings.maxPerTerm },
      };
    }
    const budget = this.opts.scoreBudget;
    const run: PlannedQuery = {
      ...req,
      ftsQuery,
      bm25,
      recent: pruned.estimatedMatches > budget,
      where: liveFilterSql(req.namespace, req.filters),
    };
    const rows = searchInFts5(this.statements, run, budget);
    return {
      candidates: rows.slice(0, req.limit).map((r, i) => ({ key: r.key, bm25: r.bm25, rank: i + 1 })),
      ftsQuery,
      droppedTerms: [...query.stopWords, ...pruned.pruned],
      plan: { mode: run.recent ? 'recent' : 'full', ...estimate(pruned.estimatedMatches), budget },
    };
  }

  /**
   * Scores the terms a search of `req` will sum that the postings cache lacks, on the scorer given to
   * `useTermScorer` (a worker thread), so that `searchLexical` right after runs without scoring anything
   * on the calling thread. Without a scorer, or for a query that will not sum cached terms, it does nothing.
   */
  async prepare(req: { namespace: string; query: string; contextWeight?: number }): Promise<void> {
    if (!this.scorer) return;
    const plan = this.plan(req);
    if (!plan.searchable || plan.searched < COSTLY_TERM_MATCHES) return;
    // Only terms worth a round trip to the thread (~0.2 ms): a rarer one is scored inline in less.
    // Frequencies are cached, and on a large corpus pruning has just estimated them anyway.
    const namespace = plan.scope === undefined ? undefined : req.namespace;
    const costly = plan.terms.filter(
      (_, i) => this.scoringCost(plan.pruned.kept[i]!, namespace) >= COSTLY_TERM_MATCHES,
    );
    if (costly.length > 0) await this.postings.prefetch(costly, this.scorer);
  }

  /**
   * What scoring a term costs FTS5, in matches read: a word's matches; for a phrase, its most frequent word's,
   * since FTS5 walks each word's positions to find the phrase. A phrase of a path or an identifier ("apps web
   * src … ts") matches few memories but its words match hundreds of thousands: scored inline, such phrases
   * held a million-memory server's thread for 8–23 ms each (bench/RESULTS.md, "Phrases scored off the thread").
   */
  private scoringCost(term: string, namespace: string | undefined): number {
    const words = this.phraseWordFrequencies(term, namespace);
    return words ? Math.max(...words) : this.stats.documentFrequency(term, namespace);
  }

  /**
   * Scores, ahead of any search, the words that many of `namespace`'s memories hold, each through the plan
   * a search of that word alone makes (so under the cache identity a search will look for), leaving them in
   * the postings cache, and saved on disk by a writer (see TermPostingsCache). `cairn ingest` runs it while
   * the vector index builds, so the first searches of any later process load common words instead of
   * scoring them (10–41 ms each at a million memories). Candidates come from the words of the newest
   * `sampleRows` memories, their frequency scaled to the namespace (or, with `minSampleMatches`, those said
   * by that many of the sample); each is then checked against the index. A word saved already is loaded,
   * brought up to date and saved again when that many new matches were appended to it. Yields to the
   * event loop between words. Returns the words scored.
   */
  async warmCommonWords(
    namespace: string,
    opts: { minMatches?: number; sampleRows?: number; maxWords?: number; minSampleMatches?: number } = {},
  ): Promise<number> {
    const minMatches = opts.minMatches ?? this.postings.saveFromMatches;
    if (minMatches <= 0) return 0;
    const texts = this.statements
      .get('SELECT text FROM memories WHERE namespace = ? ORDER BY key DESC LIMIT ?')
      .pluck()
      .all(namespace, opts.sampleRows ?? 20_000) as string[];
    const nsRows = this.stats.rows(namespace);
    if (texts.length === 0 || nsRows < minMatches) return 0;
    // Half the threshold: the sample's estimate is rough, and the index settles it below. A caller that
    // samples the rows it just wrote asks instead for the words said by that many of them.
    const words = frequentWords(texts, {
      minMatches: opts.minSampleMatches ?? (minMatches / 2) * (texts.length / nsRows),
      maxWords: opts.maxWords ?? 5_000,
    });
    const done = new Set<string>();
    let warmed = 0;
    let since = performance.now();
    for (const word of words) {
      const plan = this.plan({ namespace, query: word });
      if (!plan.searchable) continue;
      const scope = plan.scope === undefined ? undefined : namespace;
      for (const [i, t] of plan.terms.entries()) {
        // `parseConfig` and `ParseConfig` plan the same terms.
        const term = plan.pruned.kept[i]!;
        if (done.has(term)) continue;
        done.add(term);
        if (this.stats.documentFrequency(term, scope) < minMatches) continue;
        this.postings.warm(t);
        warmed++;
      }
      if (performance.now() - since > 8) {
        await new Promise((r) => setImmediate(r));
        since = performance.now();
      }
    }
    return warmed;
  }

  /** Keys the per-key sums have room for without growing during a search. */
  get reservedKeys(): number {
    return this.sums.capacity;
  }

  /**
   * Readies the per-key sums for every key up to the store's highest, and an eighth more for the keys
   * written next (see Accumulator.reserve); a server does it before it listens.
   */
  reserveSums(): void {
    const maxKey = highestKey(this.statements);
    this.sums.reserve(maxKey + Math.ceil(maxKey / 8));
  }

  /** Where `prepare` scores terms (null: nowhere, `searchLexical` scores them inline). */
  useTermScorer(scorer: TermScorer | null): void {
    this.scorer = scorer;
    this.postings.scorerInUse = scorer !== null;
  }

  /** The query's terms as the leg searches them: stop words and too-frequent terms out, confined or not. */
  private plan(req: { namespace: string; query: string; contextWeight?: number }) {
    const query = planFtsQuery(req.query, this.opts);
    if (query.terms.length === 0) return { searchable: false as const, query };
    const nsRows = this.stats.rows(req.namespace);
    const allRows = this.stats.rows();
    // Confining the MATCH to the namespace's token pays off when the namespace is a minority of the
    // corpus (other tenants' rows are never scored), and its terms' idf is then the namespace's own (see
    // TermQuery.within). When it holds most rows, confining is pure overhead: bm25() walks the token's
    // doclist, most of the file, for every term it scores (measured: a fresh `cairn search` in a namespace
    // of 94% of 106,000 memories 8–20% slower; bench/RESULTS.md, "A namespace's own counts"). Such a
    // namespace is scored with the file's counts.
    const confine = nsRows < allRows * 0.5;
    const searched = confine ? nsRows : this.stats.rows();
    const pruned = this.pruneFrequent(query.terms, confine ? req.namespace : undefined, searched);
    const [wt, wx, wp, ws, wc] = this.opts.columnWeights;
    const contextWeight = req.contextWeight ?? wc;
    // Without context, a turn must say a word itself: a match in its context alone would score 0 and
    // still be listed by the FTS5 plans.
    const kept = contextWeight > 0 ? pruned.kept : pruned.kept.map((t) => `${OWN_COLUMNS} : ${t}`);
    const scope = confine ? scopeToken(req.namespace) : undefined;
    const bm25 = `bm25(memories_fts, ${wt}, ${wx}, ${wp}, ${ws}, ${contextWeight})`;
    // Each term's idf from the namespace's own counts (see TermQuery.within).
    const within = (term: string): NamespaceTermCounts | undefined =>
      confine
        ? {
            namespace: req.namespace,
            estimateHits: () => this.stats.documentFrequency(term, req.namespace),
          }
        : undefined;
    return {
      searchable: true as const,
      query,
      confine,
      searched,
      pruned,
      scope,
      kept,
      bm25,
      terms: kept.map((t) => ({
        match: renderFtsQuery([t], scope)!,
        bm25,
        within: within(t),
      })),
    };
  }

  /**
   * Sums the kept terms' cached contributions (FTS5's bm25 of a query is the sum of its terms'), then
   * checks the best against the namespace, liveness and filters. With the key catalog, every match is
   * tested in memory while the best are selected (a session filter still lists its few memories first).
   * Without it, winners are checked in SQLite: unfiltered, the page plus a few first,
   * four times wider while too few pass (rows of other namespaces when the MATCH was not confined, deleted
   * or superseded rows). Filtered: a session's few memories are looked up directly; other filters widen twice,
   * then try the allowed set when it is small. Null: the filter is too selective for either, so the FTS5
   * plans (which narrow by facet tokens inside the index) take over.
   */
  private fromTermPostings(
    terms: TermQuery[],
    req: { namespace: string; filters: SearchFilters; limit: number; sessionWeight: number },
  ): RankedRows | null {
    const { namespace, filters, limit } = req;
    const filtered = hasFilters(filters);
    try {
      const catalogServes = this.catalog?.sync() ?? false;
      // With the catalog, sessions are known before the terms are summed: session match sees each
      // match in the same walk. Without it, they are looked up for the matches summed.
      const sessionOf =
        req.sessionWeight > 0 && catalogServes
          ? sessionsFromCatalog(this.catalog!, namespace, filters)
          : null;
      if (sessionOf) this.sessions.begin(sessionOf);
      const truncatedBelow = this.postings.accumulate(
        terms,
        this.sums,
        catalogServes ? this.catalog!.seenStamp : undefined,
        sessionOf ? this.sessions : undefined,
      );
      const matches = this.sums.touched;
      const sessionShare = sessionOf
        ? this.sessions.spread(this.sums, req.sessionWeight)
        : req.sessionWeight > 0 && !catalogServes
          ? this.addSessionMatchFromSql(terms, namespace, filters, req.sessionWeight)
          : NO_SHARE;
      // A session's memories are few and indexed: listing them beats testing every match.
      if (filtered && filters.sessions?.length) {
        const rows = this.allowedFromSums(namespace, filters, limit);
        if (rows) return { rows, matches, sessionShare };
      }
      if (catalogServes && this.catalog) {
        const f = this.catalog.compile(namespace, filters);
        if (!f) return { rows: [], matches, sessionShare };
        const catalog = this.catalog;
        const rows = this.sums.top(limit, (key) => catalog.passes(key, f));
        // A filter that keeps older memories may need a common term's matches the cache left out; FTS5,
        // narrowed by the filter's facet tokens, then scores all of them.
        if (rows.length < limit && filtered && truncatedBelow > 0) return null;
        return { rows, matches, sessionShare };
      }
      // Unfiltered, nearly every winner passes: the page plus a few first, then four times wider until it
      // fills. Filtered, two rounds, then the allowed set or the FTS5 plans, rather than checking thousands
      // of winners that fail. Each round checks only the winners the previous one did not.
      const rounds = filtered ? 2 : Number.POSITIVE_INFINITY;
      let want = filtered ? limit * 8 + 16 : limit + 8;
      const kept: ScoredRow[] = [];
      for (let round = 0, checked = 0; round < rounds; round++) {
        const top = this.sums.top(want);
        const fresh = top.slice(checked);
        const ok = allowedKeys(
          this.statements,
          namespace,
          fresh.map((r) => r.key),
          filters,
        );
        for (const r of fresh) if (ok.has(r.key)) kept.push(r);
        checked = top.length;
        if (kept.length >= limit || top.length < want)
          return { rows: kept.slice(0, limit), matches, sessionShare };
        want = filtered ? limit * 40 : want * 4;
      }
      const rows = this.allowedFromSums(namespace, filters, limit);
      return rows ? { rows, matches, sessionShare } : null;
    } finally {
      this.sums.clear();
    }
  }

  /**
   * Session match while the key catalog does not serve (loading, or off): the sessions of the memories
   * that matched are looked up in SQLite when they are few enough (otherwise the query goes without), then
   * the terms are walked again for them. Adds each match's share to its sum and returns each key's share.
   */
  private addSessionMatchFromSql(
    terms: TermQuery[],
    namespace: string,
    filters: SearchFilters,
    weight: number,
  ): (key: number) => number {
    if (this.sums.touched > MAX_SQL_SESSION_LOOKUP) return NO_SHARE;
    this.sessions.begin(sessionsFromSql(this.statements, namespace, filters, this.sums.keys()));
    this.postings.visit(terms, this.sessions);
    return this.sessions.spread(this.sums, weight);
  }

  /** The memories passing the filter, when they are few, ranked by their summed scores; null when many. */
  private allowedFromSums(namespace: string, filters: SearchFilters, limit: number): ScoredRow[] | null {
    const allowed = smallAllowedSet(this.statements, liveFilterSql(namespace, filters));
    if (!allowed) return null;
    const rows: ScoredRow[] = [];
    for (const key of allowed) {
      const bm25 = this.sums.get(key);
      if (isMatch(bm25)) rows.push({ key, bm25 });
    }
    return rows.sort((a, b) => a.bm25 - b.bm25 || b.key - a.key).slice(0, limit);
  }

  /** Which of the query's single words each key says in its own columns (see `wordsSaidBy`). */
  queryCoverage(namespace: string, query: string, keys: readonly number[]): QueryCoverage {
    const words = planFtsQuery(query, this.opts)
      .terms.filter((t) => !t.includes(' '))
      .map((t) => t.slice(1, -1));
    const idf = this.stats.idf(namespace, words);
    const matched = wordsSaidBy(this.statements, namespace, words, keys, this.terms);
    return { words: words.map((word) => ({ word, idf: idf.get(word) ?? 0 })), matched };
  }

  /** Gives back what the leg holds outside the store's file (the store is closing). */
  close(): void {
    this.terms.close();
  }

  /** idf of words within a namespace, for weighting the query side of a term-weighted embedder. */
  termIdf(namespace: string, terms: readonly string[]): Map<string, number> {
    return this.stats.idf(namespace, terms);
  }

  /** Each word's frequency when `term` is a phrase (`"read graph search"`); null for a single word. */
  private phraseWordFrequencies(term: string, namespace: string | undefined): number[] | null {
    const words = /"([^"]*)"/.exec(term)?.[1]?.split(' ').filter(Boolean) ?? [];
    return words.length < 2 ? null : words.map((w) => this.stats.documentFrequency(`"${w}"`, namespace));
  }

  /**
   * Drops very frequent single-word terms on large corpora (keeping at least the rarest term) and estimates
   * how many rows the remaining OR-query matches (an upper bound: the sum of the terms' frequencies).
   */
  private pruneFrequent(
    terms: string[],
    namespace: string | undefined,
    searched: number,
  ): { kept: string[]; pruned: string[]; estimatedMatches: number } {
    if (searched <= this.opts.pruneAboveDocs) return { kept: terms, pruned: [], estimatedMatches: 0 };
    // A phrase is never dropped, and its frequency only bounds the matches: its rarest word's bounds it.
    // Estimating the phrase itself walks its words' positions over a thousand matches (25–76 ms inline for
    // a path or identifier of common words at a million memories); its words' estimates are cheap, and
    // `scoringCost` needs them anyway.
    const frequency = (t: string) => {
      const words = this.phraseWordFrequencies(t, namespace);
      return words ? Math.min(...words) : this.stats.documentFrequency(t, namespace);
    };
    const scored = terms.map((t) => ({ t, df: frequency(t) }));
    const limit = searched * this.opts.maxTermDocShare;
    let kept = scored.filter((s) => s.t.includes(' ') || s.df <= limit);
    if (kept.length === 0) kept = [scored.reduce((a, b) => (b.df < a.df ? b : a))];
    const keptSet = new Set(kept.map((k) => k.t));
    return {
      kept: kept.map((k) => k.t),
      pruned: scored.filter((s) => !keptSet.has(s.t)).map((s) => s.t.replaceAll('"', '')),
      estimatedMatches: Math.min(
        searched,
        kept.reduce((sum, k) => sum + k.df, 0),
      ),
    };
  }
}
