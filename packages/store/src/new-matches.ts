import { documentsBehindScore, scoreNewMatchesLocally } from './fts5-bm25.js';
import type { StatementCache } from './statement-cache.js';

/** A term's new matches, and how they were scored. */
export interface NewMatches {
  /** Keys ascending, with the term's bm25 alone (negative). */
  rows: Array<[number, number]>;
  /** The rows holding the term up to the new watermark (every namespace), or -1 when not known. */
  hits: number;
  /** `here`: without bm25() (fts5-bm25.ts); `fts5`: by bm25(), a walk of the whole doclist; null: none new. */
  by: 'here' | 'fts5' | null;
  /** By bm25(): the newest match not new (at or below `after`), as bm25() scores it now, when there is one. */
  reference?: [number, number];
}

/**
 * A cached term's matches above `known.after` and up to `upTo` (the store's top key at the cache's last
 * sync: a key written since by another process is appended at the next sync, not twice), scored.
 *
 * Read newest first, stopping at the first key not above `after`: FTS5 answers `rowid > ?` on a long
 * doclist slowly whatever it returns (21 ms for a word in half of a million memories, with nothing to
 * return), where reading from the end costs what it returns. Keys first: a word none of the new memories
 * say costs nothing more. Then, when the caller knows how many rows held the term up to `after`
 * (`known.hits`), they are scored without bm25(), whose first call walks the term's whole doclist to count
 * them for the idf (12–20 ms for the commonest kept words at a million, on every search after a write
 * that says the word). Otherwise bm25() scores them, and the count it walked for is read back from the
 * newest score for next time. (Scoring new matches on a term thread instead was measured and not kept:
 * no gain in process, nor through `cairn serve` under writes.)
 */
export function readNewMatches(
  statements: StatementCache,
  term: { match: string; bm25: string },
  known: { after: number; hits: number },
  upTo: number,
): NewMatches {
  const { after } = known;
  const newest = (select: string) =>
    statements
      .get(`SELECT ${select} FROM memories_fts WHERE memories_fts MATCH ? ORDER BY rowid DESC`)
      .raw()
      .iterate(term.match) as IterableIterator<[number, number]>;
  // Whether there is any: the first new key up to `upTo` settles it.
  let any = false;
  for (const [key] of newest('rowid')) {
    if (key <= after) break;
    if (key <= upTo) {
      any = true;
      break;
    }
  }
  if (!any) return { rows: [], hits: known.hits, by: null };
  if (known.hits >= 0) {
    const rows = scoreNewMatchesLocally(statements, term, after, upTo, known.hits);
    if (rows) return { rows, hits: known.hits + rows.length, by: 'here' };
  }
  const rows: Array<[number, number]> = [];
  let above = 0;
  let reference: [number, number] | undefined;
  for (const row of newest(`rowid, ${term.bm25}`)) {
    if (row[0] <= after) {
      reference = row;
      break;
    }
    if (row[0] <= upTo) rows.push(row);
    else above++;
  }
  let hits = known.hits >= 0 ? known.hits + rows.length : -1;
  // The walk just paid tells how many rows hold the term: read it back from the newest score.
  if (hits < 0 && rows.length > 0) {
    const total = documentsBehindScore(statements, term, rows[0]![0], rows[0]![1]);
    if (total !== null) hits = total - above;
  }
  return { rows: rows.reverse(), hits, by: 'fts5', ...(reference ? { reference } : {}) };
}
