import type { Fts5Terms } from './fts5-terms.js';
import { scopeToken } from './scope-token.js';
import type { StatementCache } from './statement-cache.js';

/** The FTS5 column filter of a memory's own words: everything but the namespace token and the context. */
export const OWN_COLUMNS = '{title text parts}';

/** Text FTS5's unicode61 splits as this does: ASCII only, where a token is a run of letters, digits and `_`. */
const NOT_ASCII = /[^\p{ASCII}]/u;
const ASCII_TOKEN = /[A-Za-z0-9_]+/g;

/**
 * Which of `words` each of `keys` says in its own columns, or in its named fields (multi-route recall) when
 * the namespace has any. With `terms`, a memory whose own columns are ASCII is read and tokenised here,
 * each token's term FTS5's own (see `Fts5Terms`), and a word said is a word whose one term it holds: the
 * answer FTS5 would give, without asking the index (~20 µs an ask inside a serving engine, a tenth of a
 * warm search for three hits). Other memories, and words FTS5 makes no term or several of, are asked of
 * FTS5: one lookup per word, confined to the keys asked (a page's first few).
 */
export function wordsSaidBy(
  statements: StatementCache,
  namespace: string,
  words: readonly string[],
  keys: readonly number[],
  terms: Fts5Terms | null = null,
): Map<number, Set<string>> {
  const matched = new Map<number, Set<string>>(keys.map((k) => [k, new Set<string>()]));
  if (keys.length === 0) return matched;
  const wordTerms = terms?.termsOf(words);
  const wanted = new Set<string>();
  for (const ts of wordTerms?.values() ?? []) if (ts.length === 1) wanted.add(ts[0]!);
  const own =
    terms && wanted.size > 0 ? ownTerms(statements, keys, terms, wanted) : new Map<number, Set<string>>();
  const unread = keys.filter((k) => !own.has(k));
  const probe = statements
    .get(
      'SELECT rowid FROM memories_fts WHERE memories_fts MATCH ? AND rowid IN (SELECT value FROM json_each(?))',
    )
    .pluck();
  for (const w of words) {
    const t = wordTerms?.get(w);
    const single = t?.length === 1 ? t[0]! : null;
    if (single !== null) for (const [key, said] of own) if (said.has(single)) matched.get(key)!.add(w);
    const ask = single === null ? keys : unread;
    if (ask.length === 0) continue;
    for (const key of probe.all(`${OWN_COLUMNS} : "${w}"`, JSON.stringify(ask)) as number[]) {
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
      for (const key of routeProbe.all(match, JSON.stringify(keys)) as number[]) matched.get(key)?.add(w);
    }
  }
  return matched;
}

/**
 * Which of the `wanted` terms each memory's own columns (title, text, parts) hold, among `keys`, for those
 * written in ASCII only. Porter rewrites only a word's ending, so a token whose first letter starts no
 * wanted term is passed over unlooked-up: most of a memory's words.
 */
function ownTerms(
  statements: StatementCache,
  keys: readonly number[],
  terms: Fts5Terms,
  wanted: ReadonlySet<string>,
): Map<number, Set<string>> {
  const rows = statements
    .get('SELECT key, title, text, parts FROM memories WHERE key IN (SELECT value FROM json_each(?))')
    .raw()
    .all(JSON.stringify(keys)) as Array<[number, string | null, string, string | null]>;
  const firsts = new Set([...wanted].map((t) => t.charCodeAt(0)));
  const out = new Map<number, Set<string>>();
  const unseen: string[] = [];
  const saidBy: Array<[Set<string>, string[]]> = [];
  for (const [key, title, text, parts] of rows) {
    const own = `${title ?? ''} ${text} ${parts ?? ''}`;
    if (NOT_ASCII.test(own)) continue;
    const said = new Set<string>();
    const waiting: string[] = [];
    for (const m of own.matchAll(ASCII_TOKEN)) {
      const c = m[0].charCodeAt(0);
      // ASCII upper case to lower, as FTS5 folds it.
      if (!firsts.has(c >= 65 && c <= 90 ? c + 32 : c)) continue;
      const token = m[0].toLowerCase();
      const ts = terms.held(token);
      if (ts === undefined) waiting.push(token);
      else for (const t of ts) if (wanted.has(t)) said.add(t);
    }
    unseen.push(...waiting);
    saidBy.push([said, waiting]);
    out.set(key, said);
  }
  if (unseen.length > 0) {
    const found = terms.termsOf(unseen);
    for (const [said, waiting] of saidBy)
      for (const w of waiting) for (const t of found.get(w)!) if (wanted.has(t)) said.add(t);
  }
  return out;
}
