import {
  type LexicalCandidate,
  type LexicalLeg,
  type LexicalLegResult,
  type SearchFilters,
  withDefaults,
} from '@cairn/core';
import type Database from 'better-sqlite3';
import { liveFilterSql } from './filter-sql.js';
import {
  DEFAULT_FTS_QUERY_OPTIONS,
  type FtsQueryOptions,
  planFtsQuery,
  renderFtsQuery,
} from './fts-query.js';
import { scopeToken } from './scope-token.js';
import { StatementCache } from './statement-cache.js';

/** Tunables of the lexical leg. */
export interface LexicalOptions extends FtsQueryOptions {
  /**
   * bm25() column weights for title, text, identifier parts and the namespace token. Titles are short and
   * chosen by the writer, so a match there says more; parts are split identifiers, weaker evidence than
   * the word itself. @defaultValue `[3, 1, 0.4, 0]`
   */
  columnWeights: readonly [number, number, number, number];
  /**
   * A term found in more than this share of all documents is dropped from the query when other terms
   * remain: it barely moves BM25 (its IDF is near zero) but FTS5 must score every row it matches, which
   * makes it the slow case on large corpora. @defaultValue 0.2
   */
  maxTermDocShare: number;
  /** Pruning starts only above this many documents; small corpora are cheap to score in full. @defaultValue 20_000 */
  pruneAboveDocs: number;
}

export const DEFAULT_LEXICAL_OPTIONS: Readonly<LexicalOptions> = Object.freeze({
  ...DEFAULT_FTS_QUERY_OPTIONS,
  columnWeights: Object.freeze([3, 1, 0.4, 0] as const),
  maxTermDocShare: 0.2,
  pruneAboveDocs: 20_000,
});

/** Bound on cached document frequencies per namespace; the cache is dropped whole when full. */
const DF_CACHE_MAX_ENTRIES = 4096;
/** How long corpus and namespace row counts are reused before being counted again (ms). */
const STATS_TTL_MS = 10_000;

export class LexicalSearch implements LexicalLeg {
  private readonly opts: LexicalOptions;
  private readonly statements: StatementCache;
  private readonly docFreq = new Map<string, number>();
  private docCount = 0;
  private docCountAt = 0;

  constructor(db: Database.Database, opts: Partial<LexicalOptions> = {}) {
    this.opts = withDefaults(DEFAULT_LEXICAL_OPTIONS, opts);
    this.statements = new StatementCache(db);
  }

  searchLexical(req: {
    namespace: string;
    query: string;
    filters: SearchFilters;
    limit: number;
  }): LexicalLegResult {
    const plan = planFtsQuery(req.query, this.opts);
    const { kept, pruned } = this.pruneFrequent(plan.terms);
    const droppedTerms = [...plan.stopWords, ...pruned];
    // Confining the MATCH to the namespace's token pays off when the namespace is a minority of the
    // corpus (other tenants' rows are never scored); when it holds most rows it is pure overhead.
    const confine = this.namespaceStats(req.namespace).n < this.totalDocs() * 0.5;
    const ftsQuery = renderFtsQuery(kept, confine ? scopeToken(req.namespace) : undefined);
    if (ftsQuery === null) return { candidates: [], ftsQuery: null, droppedTerms };
    const where = liveFilterSql(req.namespace, req.filters);
    const [wt, wx, wp, ws] = this.opts.columnWeights;
    // CROSS JOIN pins FTS5 as the outer loop: with a selective filter (a time window, a kind) SQLite would
    // otherwise walk the memories index and probe FTS5 once per row, which is orders of magnitude slower.
    const sql = `
      SELECT f.rowid AS key, bm25(memories_fts, ${wt}, ${wx}, ${wp}, ${ws}) AS bm25
      FROM memories_fts f CROSS JOIN memories m ON m.key = f.rowid
      WHERE memories_fts MATCH ? AND ${where.sql}
      ORDER BY bm25 LIMIT ?`;
    const rows = this.statement(sql).all(ftsQuery, ...where.params, req.limit) as Array<{
      key: number;
      bm25: number;
    }>;
    const candidates: LexicalCandidate[] = rows.map((r, i) => ({ key: r.key, bm25: r.bm25, rank: i + 1 }));
    return { candidates, ftsQuery, droppedTerms };
  }

  /** Drops very frequent single-word terms on large corpora, keeping at least the rarest term. */
  private pruneFrequent(terms: string[]): { kept: string[]; pruned: string[] } {
    if (terms.length <= 1) return { kept: terms, pruned: [] };
    const total = this.totalDocs();
    if (total <= this.opts.pruneAboveDocs) return { kept: terms, pruned: [] };
    const limit = total * this.opts.maxTermDocShare;
    const scored = terms.map((t) => ({ t, df: t.includes(' ') ? 0 : this.documentFrequency(t) }));
    const kept = scored.filter((s) => s.df <= limit).map((s) => s.t);
    if (kept.length === 0) {
      const rarest = scored.reduce((a, b) => (b.df < a.df ? b : a));
      kept.push(rarest.t);
    }
    const pruned = scored.filter((s) => !kept.includes(s.t)).map((s) => s.t.replaceAll('"', ''));
    return { kept, pruned };
  }

  private totalDocs(): number {
    const now = Date.now();
    // Row counts drift slowly relative to query rates, and counting 100k rows costs milliseconds.
    if (now - this.docCountAt > STATS_TTL_MS) {
      this.docCount = (this.statement('SELECT count(*) AS n FROM memories').get() as { n: number }).n;
      this.docCountAt = now;
      if (this.docFreq.size > 0 && Math.abs(this.docCount - this.docFreqBase) > this.docFreqBase * 0.1) {
        this.docFreq.clear();
        this.docFreqBase = this.docCount;
      }
    }
    return this.docCount;
  }

  private docFreqBase = 0;

  private documentFrequency(term: string): number {
    const cached = this.docFreq.get(term);
    if (cached !== undefined) return cached;
    if (this.docFreq.size === 0) this.docFreqBase = this.docCount;
    const n = (
      this.statement('SELECT count(*) AS n FROM memories_fts WHERE memories_fts MATCH ?').get(term) as {
        n: number;
      }
    ).n;
    if (this.docFreq.size >= DF_CACHE_MAX_ENTRIES) this.docFreq.clear();
    this.docFreq.set(term, n);
    return n;
  }

  /**
   * BM25's idf of each term within the namespace: `ln(1 + (N − df + 0.5) / (df + 0.5))`. Counts are cached
   * per namespace and dropped when the namespace has grown or shrunk by a tenth, since idf moves slowly.
   */
  termIdf(namespace: string, terms: readonly string[]): Map<string, number> {
    const stats = this.namespaceStats(namespace);
    const out = new Map<string, number>();
    const scope = scopeToken(namespace);
    for (const term of terms) {
      let df = stats.df.get(term);
      if (df === undefined) {
        const q = renderFtsQuery([`"${term.replaceAll('"', '')}"`], scope);
        df =
          q === null
            ? 0
            : (
                this.statement('SELECT count(*) AS n FROM memories_fts WHERE memories_fts MATCH ?').get(
                  q,
                ) as { n: number }
              ).n;
        if (stats.df.size >= DF_CACHE_MAX_ENTRIES) stats.df.clear();
        stats.df.set(term, df);
      }
      out.set(term, Math.log(1 + (stats.n - df + 0.5) / (df + 0.5)));
    }
    return out;
  }

  private readonly nsStats = new Map<
    string,
    { n: number; base: number; at: number; df: Map<string, number> }
  >();

  private namespaceStats(namespace: string): { n: number; df: Map<string, number> } {
    let s = this.nsStats.get(namespace);
    const now = Date.now();
    if (!s || now - s.at > 1000) {
      const n = (
        this.statement('SELECT count(*) AS n FROM memories WHERE namespace = ? AND deleted_at IS NULL').get(
          namespace,
        ) as { n: number }
      ).n;
      if (!s || Math.abs(n - s.base) > s.base * 0.1) {
        s = { n, base: n, at: now, df: new Map() };
        if (this.nsStats.size > 1024) this.nsStats.clear();
        this.nsStats.set(namespace, s);
      } else {
        s.n = n;
        s.at = now;
      }
    }
    return s;
  }

  private statement(sql: string): Database.Statement {
    return this.statements.get(sql);
  }
}
