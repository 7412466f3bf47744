import {
  hasFilters,
  type LexicalLeg,
  type LexicalLegResult,
  type SearchFilters,
  withDefaults,
} from '@cairn/core';
import type Database from 'better-sqlite3';
import { facetClauses } from './facet-tokens.js';
import { allowedKeys, liveFilterSql } from './filter-sql.js';
import {
  DEFAULT_FTS_QUERY_OPTIONS,
  type FtsQueryOptions,
  planFtsQuery,
  renderFtsQuery,
} from './fts-query.js';
import { scopeToken } from './scope-token.js';
import { StatementCache } from './statement-cache.js';
import { TermStatistics } from './term-statistics.js';

/** Tunables of the lexical leg. */
export interface LexicalOptions extends FtsQueryOptions {
  /**
   * bm25() column weights for title, text, identifier parts and the namespace token. Titles are short and
   * chosen by the writer, so a match there says more; parts are split identifiers, weaker evidence than
   * the word itself. @defaultValue `[3, 1, 0.4, 0]`
   */
  columnWeights: readonly [number, number, number, number];
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
}

export const DEFAULT_LEXICAL_OPTIONS: Readonly<LexicalOptions> = Object.freeze({
  ...DEFAULT_FTS_QUERY_OPTIONS,
  columnWeights: Object.freeze([3, 1, 0.4, 0] as const),
  maxTermDocShare: 0.2,
  pruneAboveDocs: 20_000,
  scoreBudget: 4_000,
});

/** A filter passed by at most this many memories is applied by intersecting the ranked matches in memory. */
const SMALL_ALLOWED_SET = 5_000;

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

  constructor(db: Database.Database, opts: Partial<LexicalOptions> = {}) {
    this.opts = withDefaults(DEFAULT_LEXICAL_OPTIONS, opts);
    this.statements = new StatementCache(db);
    this.stats = new TermStatistics(this.statements);
  }

  searchLexical(req: {
    namespace: string;
    query: string;
    filters: SearchFilters;
    limit: number;
  }): LexicalLegResult {
    const query = planFtsQuery(req.query, this.opts);
    if (query.terms.length === 0) return { candidates: [], ftsQuery: null, droppedTerms: query.stopWords };
    // Confining the MATCH to the namespace's token pays off when the namespace is a minority of the
    // corpus (other tenants' rows are never scored); when it holds most rows it is pure overhead.
    const nsRows = this.stats.rows(req.namespace);
    const confine = nsRows < this.stats.rows() * 0.5;
    const scope = confine ? req.namespace : undefined;
    const searched = confine ? nsRows : this.stats.rows();
    const { kept: terms, pruned, estimatedMatches } = this.pruneFrequent(query.terms, scope, searched);
    const droppedTerms = [...query.stopWords, ...pruned];
    const ftsQuery = renderFtsQuery(
      terms,
      confine ? scopeToken(req.namespace) : undefined,
      facetClauses(req.filters),
    )!;
    const where = liveFilterSql(req.namespace, req.filters);
    const [wt, wx, wp, ws] = this.opts.columnWeights;
    const bm25 = `bm25(memories_fts, ${wt}, ${wx}, ${wp}, ${ws})`;
    const budget = this.opts.scoreBudget;
    const recent = estimatedMatches > budget;
    const plan = { mode: recent ? ('recent' as const) : ('full' as const), estimatedMatches, budget };
    const done = (rows: Array<{ key: number; bm25: number }>): LexicalLegResult => ({
      candidates: rows.slice(0, req.limit).map((r, i) => ({ key: r.key, bm25: r.bm25, rank: i + 1 })),
      ftsQuery,
      droppedTerms,
      plan,
    });
    // Rank inside FTS5 alone and check only the winners against the namespace and filters: joining every
    // match to `memories` costs about twice as much as scoring it. Over-fetch covers superseded, deleted,
    // foreign (when not confined) and filtered-out rows.
    const filtered = hasFilters(req.filters);
    const rankedSql = recent
      ? `SELECT key, bm25 FROM (SELECT rowid AS key, ${bm25} AS bm25 FROM memories_fts
           WHERE memories_fts MATCH ? ORDER BY rowid DESC LIMIT ${budget}) ORDER BY bm25 LIMIT ?`
      : `SELECT rowid AS key, ${bm25} AS bm25 FROM memories_fts WHERE memories_fts MATCH ? ORDER BY bm25 LIMIT ?`;
    const ranked = (want: number) =>
      this.statements.get(rankedSql).all(ftsQuery, want) as Array<{ key: number; bm25: number }>;
    const fromFilterSide = (): LexicalLegResult | null => {
      // A selective filter (a session, a short time window) is applied from its side.
      const allowed = this.statements
        .get(`SELECT m.key FROM memories m WHERE ${where.sql} LIMIT ?`)
        .pluck()
        .all(...where.params, SMALL_ALLOWED_SET + 1) as number[];
      if (allowed.length <= SMALL_ALLOWED_SET) {
        // Few memories pass. Score only the rowid span they occupy (sessions and time windows are stored
        // together, so it is narrow) and keep the allowed rows.
        if (allowed.length === 0) return done([]);
        const set = new Set(allowed);
        let lo = allowed[0]!;
        let hi = lo;
        for (const k of allowed) {
          if (k < lo) lo = k;
          if (k > hi) hi = k;
        }
        const inSpan = this.statements
          .get(
            `SELECT rowid AS key, ${bm25} AS bm25 FROM memories_fts
             WHERE memories_fts MATCH ? AND rowid BETWEEN ? AND ? ORDER BY bm25`,
          )
          .all(ftsQuery, lo, hi) as Array<{ key: number; bm25: number }>;
        return done(inSpan.filter((r) => set.has(r.key)));
      }
      return null;
    };
    // Filters are already narrowed inside FTS5 by their facet tokens, so the ranked winners mostly pass;
    // the exact bounds (a time window's edges) are checked on them.
    // Unfiltered, twice the page covers the few dead rows; filtered, widen once before changing plan.
    for (const want of filtered ? [req.limit * 8 + 16, req.limit * 40] : [req.limit * 2 + 16]) {
      const rows = ranked(want);
      const ok = this.allowedKeys(
        req.namespace,
        rows.map((r) => r.key),
        req.filters,
      );
      const kept = rows.filter((r) => ok.has(r.key));
      if (kept.length >= req.limit || rows.length < want) return done(kept);
    }
    if (filtered) {
      const r = fromFilterSide();
      if (r) return r;
    }
    // CROSS JOIN pins FTS5 as the outer loop: with a selective filter (a time window, a kind) SQLite would
    // otherwise walk the memories index and probe FTS5 once per row, which is orders of magnitude slower.
    const sql = recent
      ? `SELECT key, bm25 FROM (
           SELECT f.rowid AS key, ${bm25} AS bm25
           FROM memories_fts f CROSS JOIN memories m ON m.key = f.rowid
           WHERE memories_fts MATCH ? AND ${where.sql}
           ORDER BY f.rowid DESC LIMIT ${budget})
         ORDER BY bm25 LIMIT ?`
      : `SELECT f.rowid AS key, ${bm25} AS bm25
         FROM memories_fts f CROSS JOIN memories m ON m.key = f.rowid
         WHERE memories_fts MATCH ? AND ${where.sql}
         ORDER BY bm25 LIMIT ?`;
    return done(
      this.statements.get(sql).all(ftsQuery, ...where.params, req.limit) as Array<{
        key: number;
        bm25: number;
      }>,
    );
  }

  /** Which of `keys` are live memories of `namespace` passing `filters`. */
  private allowedKeys(namespace: string, keys: readonly number[], filters: SearchFilters): Set<number> {
    return allowedKeys(this.statements, namespace, keys, filters);
  }

  /** idf of words within a namespace, for weighting the query side of a term-weighted embedder. */
  termIdf(namespace: string, terms: readonly string[]): Map<string, number> {
    return this.stats.idf(namespace, terms);
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
    const scored = terms.map((t) => ({ t, df: this.stats.documentFrequency(t, namespace) }));
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
