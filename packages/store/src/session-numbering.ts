import { hasFilters, type SearchFilters } from '@cairn/core';
import { liveFilterSql } from './filter-sql.js';
import type { KeyCatalog } from './key-catalog.js';
import type { SessionNumbering } from './session-match.js';
import type { StatementCache } from './statement-cache.js';

// Which memories session match counts, and their sessions: only the namespace's live memories that pass
// the search's filters, so a filter (a time window, a kind) bounds what judges a session as well as what
// is returned (see session-match.ts).

/**
 * From the key catalog (call its `sync` first): its arrays, read in place for every match, and the
 * filters' test when there are filters. Null when no memory can count, or the catalog is off.
 */
export function sessionsFromCatalog(
  catalog: KeyCatalog,
  namespace: string,
  filters: SearchFilters,
): SessionNumbering | null {
  const f = catalog.compile(namespace, filters);
  if (!f) return null;
  const arrays = catalog.sessionArrays(namespace);
  if (!arrays) return null;
  return { ...arrays, accept: hasFilters(filters) ? (key) => catalog.passes(key, f) : null };
}

/**
 * From SQLite, for `keys` (the memories a query matched) while the catalog does not serve: each one
 * counting, with its session numbered locally.
 */
export function sessionsFromSql(
  statements: StatementCache,
  namespace: string,
  filters: SearchFilters,
  keys: readonly number[],
): (key: number) => number {
  const where = liveFilterSql(namespace, filters);
  const rows = statements
    .get(
      `SELECT m.key, m.session FROM memories m
       WHERE m.key IN (SELECT value FROM json_each(?)) AND m.session IS NOT NULL AND ${where.sql}`,
    )
    .raw()
    .all(JSON.stringify(keys), ...where.params) as Array<[number, string]>;
  const ids = new Map<string, number>();
  const byKey = new Map<number, number>();
  for (const [key, session] of rows) {
    let id = ids.get(session);
    if (id === undefined) {
      id = ids.size + 1;
      ids.set(session, id);
    }
    byKey.set(key, id);
  }
  return (key) => byKey.get(key) ?? 0;
}
