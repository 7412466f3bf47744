import type { KeyedMemory, SearchFilters } from '@cairn/core';
import type Database from 'better-sqlite3';
import { liveFilterSql } from './filter-sql.js';
import { MEMORY_COLUMNS, type MemoryRow, toMemory } from './memory-row.js';
import type { StatementCache } from './statement-cache.js';

/**
 * Neighbours in time within the anchor's session, or its namespace when it has none; oldest first. Deleted
 * memories are never shown; superseded ones are unless `liveOnly` (a timeline shows history, a search's
 * neighbours only what search itself could return).
 */
export function around(
  statements: StatementCache,
  namespace: string,
  anchor: { key: number; session: string | null; ts: number },
  before: number,
  after: number,
  liveOnly = false,
): { before: KeyedMemory[]; after: KeyedMemory[] } {
  const sessionClause = anchor.session === null ? '' : 'AND m.session = @session';
  const liveClause = liveOnly ? 'AND m.superseded_by IS NULL' : '';
  const base = `SELECT ${MEMORY_COLUMNS} FROM memories m WHERE m.namespace = @namespace ${sessionClause} AND m.deleted_at IS NULL ${liveClause}`;
  const params = { namespace, session: anchor.session, ts: anchor.ts, key: anchor.key };
  const older = statements
    .get(`${base} AND (m.ts, m.key) < (@ts, @key) ORDER BY m.ts DESC, m.key DESC LIMIT @n`)
    .all({ ...params, n: Math.max(0, before) }) as MemoryRow[];
  const newer = statements
    .get(`${base} AND (m.ts, m.key) > (@ts, @key) ORDER BY m.ts ASC, m.key ASC LIMIT @n`)
    .all({ ...params, n: Math.max(0, after) }) as MemoryRow[];
  return { before: older.reverse().map(toMemory), after: newer.map(toMemory) };
}

/**
 * Browsing without a query: the live memories of a namespace that pass the filters, newest first, at
 * most `limit`, skipping the `offset` newest (a page). Namespace-confined like every read.
 */
export function listMemories(
  statements: StatementCache,
  namespace: string,
  filters: SearchFilters,
  limit: number,
  offset: number,
): KeyedMemory[] {
  const where = liveFilterSql(namespace, filters);
  return (
    statements
      .get(
        `SELECT ${MEMORY_COLUMNS} FROM memories m WHERE ${where.sql} ORDER BY m.ts DESC, m.key DESC LIMIT ? OFFSET ?`,
      )
      .all(...where.params, Math.max(0, limit), Math.max(0, offset)) as MemoryRow[]
  ).map(toMemory);
}

/**
 * Every memory of a namespace as stored, superseded and deleted ones included, oldest first, with when
 * it was deleted (null: live): what an export needs to lose nothing. Streams, so a large namespace is
 * never held in memory at once.
 */
export function* exportNamespace(
  db: Database.Database,
  namespace: string,
): Generator<{ memory: KeyedMemory; deletedAt: number | null }> {
  const rows = db
    .prepare(
      `SELECT ${MEMORY_COLUMNS}, m.deleted_at AS deletedAt FROM memories m WHERE m.namespace = ? ORDER BY m.ts, m.key`,
    )
    .iterate(namespace) as Iterable<MemoryRow & { deletedAt: number | null }>;
  for (const row of rows) yield { memory: toMemory(row), deletedAt: row.deletedAt };
}
