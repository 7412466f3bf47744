import { isConfined, scoreRewrittenLocally } from './fts5-bm25.js';
import type { NamespaceIdf } from './namespace-idf.js';
import { indexOf, type Postings } from './postings.js';
import type { StatementCache } from './statement-cache.js';
import type { TermQuery } from './term-query.js';

/**
 * Patches the term's scores of memories rewritten since it was scored (their text or context changed)
 * with their scores as they read now, keeping its count of rows when it can be told (see
 * `scoreRewrittenLocally`: a seek per memory and one walk of the doclist); else FTS5 scores them all in
 * one statement (bm25() then walks the doclist once per memory), and the count is no longer known.
 */
export function patchRewritten(
  statements: StatementCache,
  idf: NamespaceIdf,
  t: TermQuery,
  p: Postings,
  keys: readonly number[],
): void {
  if (keys.length === 0) return;
  const local = scoreRewrittenLocally(statements, t, keys, p.watermark);
  if (local) {
    for (const [key, score] of local.scores) p.patch.set(key, score);
    p.hits = local.hits;
    return;
  }
  const wanted = new Set(keys);
  // A confined term's newest held match not rewritten, scored again beside them: it gives the scale from
  // FTS5's idf now to the one the held scores carry (see `NamespaceIdf.toCarried`).
  let reference: number | undefined;
  if (isConfined(t.match))
    for (let i = p.length - 1; i >= 0 && i >= p.length - 8; i--) {
      const key = p.keys[i]!;
      if (!wanted.has(key) && !p.patch.has(key)) {
        reference = key;
        break;
      }
    }
  // `rowid IN` a list, not `rowid BETWEEN k AND k` per memory: FTS5 seeks each listed key, where a range
  // on a long doclist is walked (2.4 ms a memory for a common word at 100k memories). A key that does not
  // match may be answered with a later match (seen for `rowid = ?` with SQLite 3.53): only keys asked for
  // are kept, each once.
  const asked = reference === undefined ? [...wanted] : [...wanted, reference];
  const rows = statements
    .get(
      `SELECT rowid, ${t.bm25} FROM memories_fts WHERE memories_fts MATCH ? AND rowid IN (SELECT value FROM json_each(?))`,
    )
    .raw()
    .all(t.match, JSON.stringify(asked)) as Array<[number, number]>;
  const referenceNow = rows.find(([key]) => key === reference);
  const scores = new Map<number, number>();
  for (const [key, score] of idf.toCarried(
    t,
    p,
    rows.filter(([key]) => wanted.has(key)),
    referenceNow,
  ))
    if (!scores.has(key)) scores.set(key, score);
  // A confined term's count is the namespace's: kept by how each rewrite changed whether it matches (a
  // rewrite of another namespace's memory changes nothing). Another term's count is FTS5's, unknown now.
  const counted = isConfined(t.match) && p.hits >= 0;
  let delta = 0;
  for (const key of wanted) {
    const now = scores.get(key) ?? Number.NaN;
    if (counted) {
      const before = p.patch.has(key)
        ? !Number.isNaN(p.patch.get(key)!)
        : indexOf(p.keys, p.length, key) >= 0;
      delta += Number(!Number.isNaN(now)) - Number(before);
    }
    p.patch.set(key, now);
  }
  p.hits = counted ? p.hits + delta : -1;
}
