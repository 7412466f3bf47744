import type { SearchFilters } from '@cairn/core';
import type { StatementCache } from './statement-cache.js';

export interface SqlFragment {
  sql: string;
  params: unknown[];
}

/**
 * SQL conditions over the `memories` table aliased `m`: live rows of one namespace that pass the filters.
 * Every leg and every count goes through this one function, so no path can forget the namespace.
 */
export function liveFilterSql(namespace: string, filters: SearchFilters): SqlFragment {
  const clauses = ['m.namespace = ?', 'm.superseded_by IS NULL', 'm.deleted_at IS NULL'];
  const params: unknown[] = [namespace];
  const inList = (column: string, values: string[] | undefined) => {
    if (!values?.length) return;
    clauses.push(`${column} IN (${values.map(() => '?').join(', ')})`);
    params.push(...values);
  };
  inList('m.kind', filters.kinds);
  inList('m.session', filters.sessions);
  inList('m.agent', filters.agents);
  if (filters.tags?.length) {
    clauses.push(
      `EXISTS (SELECT 1 FROM json_each(m.tags) WHERE json_each.value IN (${filters.tags.map(() => '?').join(', ')}))`,
    );
    params.push(...filters.tags);
  }
  if (filters.since !== undefined) {
    clauses.push('m.ts >= ?');
    params.push(filters.since);
  }
  if (filters.until !== undefined) {
    clauses.push('m.ts < ?');
    params.push(filters.until);
  }
  if (filters.slots?.length) {
    clauses.push(
      `json_valid(m.meta) AND json_extract(m.meta, '$.slot') IN (${filters.slots.map(() => '?').join(', ')})`,
    );
    params.push(...filters.slots);
  }
  if (filters.asOf !== undefined) {
    clauses.push('(m.valid_from IS NULL OR m.valid_from <= ?) AND (m.valid_to IS NULL OR m.valid_to > ?)');
    params.push(filters.asOf, filters.asOf);
  }
  return { sql: clauses.join(' AND '), params };
}

/** The subset of `keys` that are live memories of `namespace` passing `filters` (keys only: cheap). */
export function allowedKeys(
  statements: StatementCache,
  namespace: string,
  keys: readonly number[],
  filters: SearchFilters,
): Set<number> {
  if (keys.length === 0) return new Set();
  const where = liveFilterSql(namespace, filters);
  // Keys travel as one JSON array so the statement's shape does not depend on how many there are.
  const stmt = statements.get(
    `SELECT m.key FROM memories m WHERE m.key IN (SELECT value FROM json_each(?)) AND ${where.sql}`,
  );
  return new Set(stmt.pluck().all(JSON.stringify(keys), ...where.params) as number[]);
}
