import { hasFilters, type SearchFilters } from '@cairn/core';
import { allowedKeys, type SqlFragment } from './filter-sql.js';
import type { StatementCache } from './statement-cache.js';

/** A memory's key and its FTS5 bm25 (negative: lower is better). */
export interface ScoredRow {
  key: number;
  bm25: number;
}

/** A search request with its FTS expression and plan decided. */
export interface PlannedQuery {
  namespace: string;
  filters: SearchFilters;
  limit: number;
  ftsQuery: string;
  /** The bm25() call with the leg's column weights. */
  bm25: string;
  /** Score only the newest `scoreBudget` matches. */
  recent: boolean;
  where: SqlFragment;
}

/** A filter passed by at most this many memories is applied by intersecting the ranked matches in memory. */
const SMALL_ALLOWED_SET = 5_000;

/**
 * The lexical leg's plans inside FTS5, for a query the cached term postings cannot answer (a filter too
 * selective for them): the ranked winners checked afterwards, else the filter applied from its side, else
 * every match joined to `memories`. `scoreBudget`: with `recent`, only the newest this many matches are
 * scored (LexicalOptions.scoreBudget).
 */
export function searchInFts5(statements: StatementCache, q: PlannedQuery, scoreBudget: number): ScoredRow[] {
  return (
    rankedWinners(statements, q, scoreBudget) ??
    (hasFilters(q.filters) ? fromFilterSide(statements, q) : null) ??
    joinedScan(statements, q, scoreBudget)
  );
}

/** Keys of the memories passing a filter, or null when more than SMALL_ALLOWED_SET pass. */
export function smallAllowedSet(statements: StatementCache, where: SqlFragment): number[] | null {
  const allowed = statements
    .get(`SELECT m.key FROM memories m WHERE ${where.sql} LIMIT ?`)
    .pluck()
    .all(...where.params, SMALL_ALLOWED_SET + 1) as number[];
  return allowed.length > SMALL_ALLOWED_SET ? null : allowed;
}

/**
 * Ranks inside FTS5 alone and checks only the winners against the namespace and filters: joining every
 * match to `memories` costs about twice as much as scoring it. Filters are already narrowed inside FTS5
 * by their facet tokens, so the winners mostly pass; exact bounds (a time window's edges) are checked
 * here. Unfiltered, twice the page covers the few dead rows; filtered, it widens once. Null: too few
 * winners passed, change plan.
 */
function rankedWinners(statements: StatementCache, q: PlannedQuery, scoreBudget: number): ScoredRow[] | null {
  const sql = q.recent
    ? `SELECT key, bm25 FROM (SELECT rowid AS key, ${q.bm25} AS bm25 FROM memories_fts
         WHERE memories_fts MATCH ? ORDER BY rowid DESC LIMIT ${scoreBudget}) ORDER BY bm25 LIMIT ?`
    : `SELECT rowid AS key, ${q.bm25} AS bm25 FROM memories_fts WHERE memories_fts MATCH ? ORDER BY bm25 LIMIT ?`;
  const wants = hasFilters(q.filters) ? [q.limit * 8 + 16, q.limit * 40] : [q.limit * 2 + 16];
  for (const want of wants) {
    const rows = statements.get(sql).all(q.ftsQuery, want) as ScoredRow[];
    const ok = allowedKeys(
      statements,
      q.namespace,
      rows.map((r) => r.key),
      q.filters,
    );
    const kept = rows.filter((r) => ok.has(r.key));
    if (kept.length >= q.limit || rows.length < want) return kept;
  }
  return null;
}

/**
 * A selective filter applied from its side: when few memories pass, score only the rowid span they
 * occupy (sessions and time windows are stored together, so it is narrow) and keep the allowed rows.
 * Null when too many pass for that to pay.
 */
function fromFilterSide(statements: StatementCache, q: PlannedQuery): ScoredRow[] | null {
  const allowed = smallAllowedSet(statements, q.where);
  if (!allowed) return null;
  if (allowed.length === 0) return [];
  let lo = allowed[0]!;
  let hi = lo;
  for (const k of allowed) {
    if (k < lo) lo = k;
    if (k > hi) hi = k;
  }
  const inSpan = statements
    .get(
      `SELECT rowid AS key, ${q.bm25} AS bm25 FROM memories_fts
       WHERE memories_fts MATCH ? AND rowid BETWEEN ? AND ? ORDER BY bm25`,
    )
    .all(q.ftsQuery, lo, hi) as ScoredRow[];
  const set = new Set(allowed);
  return inSpan.filter((r) => set.has(r.key));
}

/**
 * The last resort: join every match to `memories`. CROSS JOIN pins FTS5 as the outer loop: with a
 * selective filter SQLite would otherwise walk the memories index and probe FTS5 once per row, which is
 * orders of magnitude slower.
 */
function joinedScan(statements: StatementCache, q: PlannedQuery, scoreBudget: number): ScoredRow[] {
  const sql = q.recent
    ? `SELECT key, bm25 FROM (
         SELECT f.rowid AS key, ${q.bm25} AS bm25
         FROM memories_fts f CROSS JOIN memories m ON m.key = f.rowid
         WHERE memories_fts MATCH ? AND ${q.where.sql}
         ORDER BY f.rowid DESC LIMIT ${scoreBudget})
       ORDER BY bm25 LIMIT ?`
    : `SELECT f.rowid AS key, ${q.bm25} AS bm25
       FROM memories_fts f CROSS JOIN memories m ON m.key = f.rowid
       WHERE memories_fts MATCH ? AND ${q.where.sql}
       ORDER BY bm25 LIMIT ?`;
  return statements.get(sql).all(q.ftsQuery, ...q.where.params, q.limit) as ScoredRow[];
}
