import { liveFilterSql } from './filter-sql.js';
import { renderFtsQuery } from './fts-query.js';
import { scopeToken } from './scope-token.js';
import type { StatementCache } from './statement-cache.js';

/** Matches read per term to estimate its document frequency; cost is bounded by this, not by df. */
const DF_SAMPLE = 1000;
/** Bound on cached frequencies per scope; the scope's cache is dropped whole when full. */
const DF_CACHE_MAX_ENTRIES = 8192;
/** How long row counts are reused before being counted again (ms): counting 100k rows costs milliseconds. */
const STATS_TTL_MS = 10_000;
/** A scope's cached frequencies are dropped once its row count moved by this share. */
const DRIFT = 0.1;

/**
 * A test of whether a key is a live memory of the namespace, answered in memory (the key catalog);
 * 'loading' while the catalog loads (it will answer soon), null when it cannot answer (off, or not
 * loaded), and SQLite is asked instead.
 */
export type NamespaceMembers = (namespace: string) => ((key: number) => boolean) | 'loading' | null;

/**
 * A namespace holding at least this share of the corpus's rows has its frequencies counted among the term's
 * first matches corpus-wide (see `documentFrequency`); a smaller one is counted by FTS5 within its token,
 * since few of a term's first matches would be its own.
 */
const MAJORITY = 0.5;

interface ScopeStats {
  rows: number;
  minKey: number;
  maxKey: number;
  countedAt: number;
  /** `TermStatistics.writes` when counted. */
  writesAt: number;
  /** Row count when `df` was started. */
  base: number;
  df: Map<string, number>;
}

/**
 * Corpus statistics for query planning and idf: row counts and per-term document frequencies, for the
 * whole corpus or one namespace. A term's frequency is estimated from the rowid of its 1,000th match
 * (matches are spread over the key range roughly evenly), so a term found in 70% of 100k rows costs as
 * much as a rare one. Estimates are cached until the scope grows or shrinks by a tenth.
 */
export class TermStatistics {
  private readonly scopes = new Map<string, ScopeStats>();
  /**
   * A term's first `DF_SAMPLE` matches corpus-wide, as read by the last counts of this turn of the event
   * loop. A search asks for a new word's corpus-wide frequency (planning) and then for its namespace's
   * (idf), and both read the same first matches: the second read was 0.17 ms of a new query's 3.5 ms at
   * 100k memories in a profile. Dropped at the next turn and at this process's every write (several
   * requests can be answered in one turn: a search, a write, another search); another process's write
   * can meet a sample within its turn, as it can meet any count cached here.
   */
  private readonly samples = new Map<string, number[]>();
  /**
   * This process's writes so far: row counts taken before the last are counted again at their next use
   * (a few index probes). A search of one tenant weighs its terms by its own rows against the file's (see
   * LexicalSearch), so the second tenant's first write must show at once, not after the counts' TTL.
   */
  private writes = 0;

  /** @param members When given, a namespace holding most rows is counted in memory, else in SQLite (see `documentFrequency`). */
  constructor(
    private readonly statements: StatementCache,
    private readonly members: NamespaceMembers | null = null,
  ) {}

  /** Rows in the corpus (namespace undefined) or in one namespace. */
  rows(namespace?: string): number {
    return this.scope(namespace).rows;
  }

  /**
   * Estimated documents containing `term` (an FTS5 quoted string, e.g. `"redis"`). Within a namespace that
   * holds most of the corpus, the term's first 1,000 matches corpus-wide are read and the namespace's live
   * ones counted (in memory with `members`, else in SQLite): confining the MATCH to the namespace's token
   * makes FTS5 walk that token's list, as long as the namespace itself (0.33 ms a term at 100k memories,
   * against 0.06 ms unconfined; the built-in embedder asks for every new word of every query).
   */
  documentFrequency(term: string, namespace?: string): number {
    const s = this.scope(namespace);
    const cached = s.df.get(term);
    if (cached !== undefined) return cached;
    const counted = namespace === undefined ? undefined : this.countInMajority(term, namespace, s);
    if (counted !== undefined) {
      if (counted.final) this.remember(s, term, counted.df);
      return counted.df;
    }
    if (namespace === undefined) {
      const df = this.fromSample(this.firstMatches(term), s);
      this.remember(s, term, df);
      return df;
    }
    const q = renderFtsQuery([term], scopeToken(namespace))!;
    const nth = this.statements
      .get('SELECT rowid FROM memories_fts WHERE memories_fts MATCH ? ORDER BY rowid LIMIT 1 OFFSET ?')
      .pluck()
      .get(q, DF_SAMPLE - 1) as number | undefined;
    let df: number;
    if (nth === undefined) {
      df = this.statements
        .get('SELECT count(*) FROM memories_fts WHERE memories_fts MATCH ?')
        .pluck()
        .get(q) as number;
    } else {
      const covered = Math.max(1, nth - s.minKey + 1);
      df = Math.min(s.rows, Math.round((DF_SAMPLE * (s.maxKey - s.minKey + 1)) / covered));
    }
    this.remember(s, term, df);
    return df;
  }

  /**
   * The namespace's frequency from the term's first `DF_SAMPLE` matches corpus-wide, those that are live
   * memories of the namespace counted: by `members` in memory, or in SQLite by key while it cannot answer
   * (a large catalog still loading: ~0.5 ms a word at a million memories, against 4.3 ms confined to the
   * token). Exact when the term has fewer matches (the rare words that weigh most), else scaled by the key
   * range the sample covered, as the confined estimate is. Undefined when the namespace is a minority.
   */
  private countInMajority(
    term: string,
    namespace: string,
    s: ScopeStats,
  ): { df: number; final: boolean } | undefined {
    const all = this.scope(undefined);
    if (s.rows < all.rows * MAJORITY) return undefined;
    const keys = this.firstMatches(term);
    // The corpus-wide frequency comes with the sample.
    if (!all.df.has(term)) this.remember(all, term, this.fromSample(keys, all));
    const isMember = this.members?.(namespace) ?? null;
    if (isMember === 'loading') {
      // The catalog answers in a few seconds; until then the namespace's share of the rows stands in for
      // counting its own among the sample, which in SQLite reads each of those rows (~0.5 ms a word on a
      // warm page cache, seconds a search on a cold one: a server's first searches after a restart).
      // Not remembered: once the catalog serves, the word is counted.
      const share = s.rows / Math.max(1, all.rows);
      if (keys.length < DF_SAMPLE) return { df: Math.round(keys.length * share), final: false };
      const covered = Math.max(1, keys.at(-1)! - all.minKey + 1);
      const df = Math.round((DF_SAMPLE * share * (all.maxKey - all.minKey + 1)) / covered);
      return { df: Math.min(s.rows, df), final: false };
    }
    let own = 0;
    if (isMember) {
      for (const key of keys) if (isMember(key)) own++;
    } else if (keys.length > 0) {
      const live = liveFilterSql(namespace, {});
      own = this.statements
        .get(
          `SELECT count(*) FROM memories m WHERE m.key IN (SELECT value FROM json_each(?)) AND ${live.sql}`,
        )
        .pluck()
        .get(JSON.stringify(keys), ...live.params) as number;
    }
    if (keys.length < DF_SAMPLE) return { df: own, final: true };
    const covered = Math.max(1, keys.at(-1)! - all.minKey + 1);
    return { df: Math.min(s.rows, Math.round((own * (all.maxKey - all.minKey + 1)) / covered)), final: true };
  }

  /**
   * The store is about to change: drops the samples read this turn (see `samples`) and has the row counts
   * taken again at their next use (see `writes`).
   */
  storeChanging(): void {
    this.samples.clear();
    this.writes++;
  }

  /** The term's first DF_SAMPLE matches corpus-wide (see `samples`). */
  private firstMatches(term: string): number[] {
    const kept = this.samples.get(term);
    if (kept) return kept;
    const keys = this.statements
      .get('SELECT rowid FROM memories_fts WHERE memories_fts MATCH ? ORDER BY rowid LIMIT ?')
      .pluck()
      .all(term, DF_SAMPLE) as number[];
    if (this.samples.size === 0) setImmediate(() => this.samples.clear()).unref();
    this.samples.set(term, keys);
    return keys;
  }

  /**
   * The corpus-wide frequency from the term's first matches: exact below DF_SAMPLE, else scaled by the key
   * range the sample covered (matches are spread over the key range roughly evenly).
   */
  private fromSample(keys: readonly number[], all: ScopeStats): number {
    if (keys.length < DF_SAMPLE) return keys.length;
    const covered = Math.max(1, keys.at(-1)! - all.minKey + 1);
    return Math.min(all.rows, Math.round((DF_SAMPLE * (all.maxKey - all.minKey + 1)) / covered));
  }

  private remember(s: ScopeStats, term: string, df: number): void {
    if (s.df.size >= DF_CACHE_MAX_ENTRIES) s.df.clear();
    s.df.set(term, df);
  }

  /** BM25's idf, `ln(1 + (N − df + 0.5) / (df + 0.5))`, of bare words within a namespace. */
  idf(namespace: string, words: readonly string[]): Map<string, number> {
    const n = this.rows(namespace);
    const out = new Map<string, number>();
    for (const w of words) {
      const df = this.documentFrequency(`"${w.replaceAll('"', '')}"`, namespace);
      out.set(w, Math.log(1 + (n - df + 0.5) / (df + 0.5)));
    }
    return out;
  }

  private scope(namespace?: string): ScopeStats {
    const id = namespace ?? '';
    let s = this.scopes.get(id);
    const now = Date.now();
    if (s && s.writesAt === this.writes && now - s.countedAt <= STATS_TTL_MS) return s;
    // Row counts come from the triggers' table (counting a million rows costs 0.4 s); each min and max is
    // one probe of an index, as long as each is its own subquery.
    const row = (
      namespace === undefined
        ? this.statements
            .get(
              `SELECT (SELECT coalesce(sum(rows), 0) FROM namespace_rows) AS rows,
                      (SELECT min(key) FROM memories) AS minKey, (SELECT max(key) FROM memories) AS maxKey`,
            )
            .get()
        : this.statements
            .get(
              `SELECT (SELECT coalesce(max(rows), 0) FROM namespace_rows WHERE namespace = @ns) AS rows,
                      (SELECT min(key) FROM memories WHERE namespace = @ns) AS minKey,
                      (SELECT max(key) FROM memories WHERE namespace = @ns) AS maxKey`,
            )
            .get({ ns: namespace })
    ) as { rows: number; minKey: number | null; maxKey: number | null };
    const fresh = {
      rows: row.rows,
      minKey: row.minKey ?? 0,
      maxKey: row.maxKey ?? 0,
      countedAt: now,
      writesAt: this.writes,
    };
    if (!s || Math.abs(fresh.rows - s.base) > s.base * DRIFT) {
      s = { ...fresh, base: fresh.rows, df: new Map() };
      if (this.scopes.size > 1024) this.scopes.clear();
      this.scopes.set(id, s);
    } else {
      Object.assign(s, fresh);
    }
    return s;
  }
}
