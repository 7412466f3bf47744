import { scopeToken } from './scope-token.js';
import type { StatementCache } from './statement-cache.js';

/** The FTS5 column filter of a memory's own words: everything but the namespace token and the context. */
export const OWN_COLUMNS = '{title text parts}';

/**
 * Which of `words` each of `keys` says in its own columns, or in its named fields (multi-route recall) when
 * the namespace has any. One FTS5 lookup per word, confined to the keys asked (a page's first few), so it
 * costs a few index probes whatever the corpus size.
 */
export function wordsSaidBy(
  statements: StatementCache,
  namespace: string,
  words: readonly string[],
  keys: readonly number[],
): Map<number, Set<string>> {
  const matched = new Map<number, Set<string>>(keys.map((k) => [k, new Set<string>()]));
  if (keys.length === 0) return matched;
  const keyList = JSON.stringify(keys);
  const probe = statements
    .get(
      'SELECT rowid FROM memories_fts WHERE memories_fts MATCH ? AND rowid IN (SELECT value FROM json_each(?))',
    )
    .pluck();
  for (const w of words) {
    for (const key of probe.all(`${OWN_COLUMNS} : "${w}"`, keyList) as number[]) {
      matched.get(key)?.add(w);
    }
  }
  if (statements.get('SELECT 1 FROM memory_routes WHERE namespace = ? LIMIT 1').get(namespace)) {
    const routeProbe = statements
      .get(
        `SELECT r.key FROM routes_fts JOIN memory_routes r ON r.id = routes_fts.rowid
         WHERE routes_fts MATCH ? AND r.key IN (SELECT value FROM json_each(?))`,
      )
      .pluck();
    for (const w of words) {
      const match = `scope : "${scopeToken(namespace)}" AND text : "${w}"`;
      for (const key of routeProbe.all(match, keyList) as number[]) matched.get(key)?.add(w);
    }
  }
  return matched;
}
