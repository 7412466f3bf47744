import { bm25Idf, carriedIdf, isConfined } from './fts5-bm25.js';
import { indexOf, type Postings } from './postings.js';
import type { StatementCache } from './statement-cache.js';

/** A namespace's own counts behind a confined term's idf. */
export interface NamespaceTermCounts {
  namespace: string;
  /**
   * The namespace's rows holding the term, estimated, for a term whose matches were cut at the cap and whose
   * count was lost since (a rewrite scored by FTS5); null when unknown.
   */
  estimateHits: () => number | null;
}

/** A term as the namespace weight needs it: its MATCH, bm25() call and, for one namespace's search, its counts. */
interface WeighedTerm {
  match: string;
  bm25: string;
  within?: NamespaceTermCounts;
}

/**
 * Puts a namespace's own counts in the idf of the terms confined to it. FTS5's bm25() counts every
 * namespace's rows, so without this one tenant's scores, and its ranking, moved with what other tenants
 * wrote: a word another tenant wrote a thousand times scored nearly 0 for the first, and a word in over half
 * the file scored 0 for every tenant. A confined term's matches are the namespace's own, so its count is
 * exact; the cache keeps every score such a term holds on one idf (`toCarried`), and a search multiplies
 * them by the namespace's idf over that one (`weight`).
 */
export class NamespaceIdf {
  /** Namespaces' row counts as of the cache's sequence `rowsReadFor`. */
  private readonly rows = new Map<string, number>();
  private rowsReadFor = Number.NaN;

  constructor(private readonly statements: StatementCache) {}

  /**
   * What a term's scores are multiplied by for a search of one namespace (`t.within`), the cache synced to
   * sequence `seq`: its idf among the namespace's rows over the idf its scores carry. Only a term confined to
   * the namespace's token is weighed; its count is the matches held with rewrites applied, when none was cut,
   * else the count kept since it was scored, else an estimate. The namespace's rows are counted as of the
   * cache's sync, as its matches are. The idf is FTS5's formula, clamped as it clamps. 1 when either idf
   * cannot be told.
   */
  weight(t: WeighedTerm, p: Postings, seq: number): number {
    const within = t.within;
    if (!within || (p.length === 0 && p.patch.size === 0) || !isConfined(t.match)) return 1;
    const carried = p.carriedIdf ?? null;
    if (carried === null) return 1;
    const hits = p.truncatedBelow === 0 ? matchingNow(p) : p.hits >= 0 ? p.hits : within.estimateHits();
    const rows = this.namespaceRows(within.namespace, seq);
    if (hits === null || rows <= 0) return 1;
    return bm25Idf(rows, Math.min(hits, rows)) / carried;
  }

  /**
   * A confined term's new scores (new matches, rewrites), scaled to the idf its held scores carry. FTS5
   * scores them with the word's idf among the whole file's rows as it is now, which other namespaces move;
   * a confined term serves only its namespace's searches, which put the namespace's idf in place of the one
   * carried (see `weight`), so every score it holds must carry the same. The scale comes from `reference`, a
   * held match FTS5 scored again in the same statement (its held score over its score now: no read of its
   * own); without one, from the idf read back from the newest new score. A term holding no score yet takes
   * the new scores' idf as its own. Other terms are left as scored: they serve searches of the whole file,
   * whose scores the drift check keeps current.
   */
  toCarried(
    t: WeighedTerm,
    p: Postings,
    rows: Array<[number, number]>,
    reference?: readonly [number, number],
  ): Array<[number, number]> {
    if (rows.length === 0 || !isConfined(t.match)) return rows;
    const newest = rows.at(-1)!;
    if (p.carriedIdf === undefined) {
      p.carriedIdf = carriedIdf(this.statements, t, newest[0], newest[1]);
      return rows;
    }
    let scale: number | null = null;
    if (reference && !p.patch.has(reference[0])) {
      const i = indexOf(p.keys, p.length, reference[0]);
      if (i >= 0 && p.scores[i]! < 0 && reference[1] < 0) scale = p.scores[i]! / reference[1];
    }
    if (scale === null && p.carriedIdf !== null) {
      const now = carriedIdf(this.statements, t, newest[0], newest[1]);
      if (now !== null) scale = p.carriedIdf / now;
    }
    if (scale === null || scale === 1) return rows;
    const by = scale;
    return rows.map(([key, score]) => [key, score * by]);
  }

  /** The namespace's rows (every state, as FTS5 holds them), read once per sync of the cache. */
  private namespaceRows(namespace: string, seq: number): number {
    if (this.rowsReadFor !== seq) {
      this.rows.clear();
      this.rowsReadFor = seq;
    }
    let rows = this.rows.get(namespace);
    if (rows === undefined) {
      rows = this.statements
        .get('SELECT coalesce(max(rows), 0) FROM namespace_rows WHERE namespace = ?')
        .pluck()
        .get(namespace) as number;
      this.rows.set(namespace, rows);
    }
    return rows;
  }
}

/** The term's matches now: those held, less those rewritten not to match, plus those rewritten to match. */
export function matchingNow(p: Postings): number {
  let n = p.length;
  for (const [key, score] of p.patch) {
    const held = indexOf(p.keys, p.length, key) >= 0;
    if (held && Number.isNaN(score)) n--;
    else if (!held && !Number.isNaN(score)) n++;
  }
  return n;
}
