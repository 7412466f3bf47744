import type { StatementCache } from './statement-cache.js';

/** The highest key any memory has had (0 for an empty store): an index lookup, cheap before every query. */
export function highestKey(statements: StatementCache): number {
  return (statements.get('SELECT max(key) FROM memories').pluck().get() as number | null) ?? 0;
}
