import type Database from 'better-sqlite3';
import type { StatementCache } from './statement-cache.js';

/** One term's scored matches as a writer saved them, with what is needed to judge whether they still hold. */
export interface SavedPostings {
  /** The store's change sequence the scores were computed at. */
  seq: number;
  /** Every memory with a key up to this one was covered. */
  watermark: number;
  /** The cap on matches scored then (a saved term is used only under the same cap). */
  maxPerTerm: number;
  /** Rows in the corpus then (the scores carry that corpus's idf and average length). */
  corpusRows: number;
  /** Keys ascending. */
  keys: Float64Array;
  /** FTS5 bm25() of the term alone, aligned with keys. */
  scores: Float64Array;
  /** Rows holding the term up to `watermark` (see ScoredMatches); -1 when not known. */
  hits: number;
  /** The idf the scores carry, for a term confined to a namespace's token (see ScoredMatches); null: not kept. */
  idf: number | null;
}

/**
 * The `term_postings` table (migration 20): common words' scores kept on disk by the folder's writer, so a
 * new process loads a word's postings (a row read, ~0.1 ms) instead of having FTS5 score it (10–41 ms at a
 * million memories). Keys are stored as u32 (8 bytes saved per match); scores as f64, so a loaded term sums
 * to exactly what scoring it again would have given at the same sequence.
 */
export class SavedTermPostings {
  constructor(
    private readonly db: Database.Database,
    private readonly statements: StatementCache,
  ) {}

  /** Only a writable connection saves (readers load). */
  get writable(): boolean {
    return !this.db.readonly;
  }

  load(cacheKey: string): SavedPostings | undefined {
    const row = this.read(cacheKey);
    if (!row || row.keys.byteLength * 2 !== row.scores.byteLength) return undefined;
    const keys32 = new Uint32Array(row.keys.byteLength / 4);
    new Uint8Array(keys32.buffer).set(row.keys);
    const scores = new Float64Array(row.scores.byteLength / 8);
    new Uint8Array(scores.buffer).set(row.scores);
    return {
      seq: row.seq,
      watermark: row.watermark,
      maxPerTerm: row.max_per_term,
      corpusRows: row.corpus_rows,
      keys: Float64Array.from(keys32),
      scores,
      hits: row.hits,
      idf: row.idf ?? null,
    };
  }

  private read(cacheKey: string) {
    let stmt: ReturnType<StatementCache['get']>;
    try {
      stmt = this.statements.get(
        'SELECT seq, watermark, max_per_term, corpus_rows, keys, scores, hits, idf FROM term_postings WHERE cache_key = ?',
      );
    } catch {
      // A read-only process on a folder no writer of this version has opened yet (before migration 20, or
      // 21 for the count, or 28 for the idf): the term is scored as before.
      return undefined;
    }
    return stmt.get(cacheKey) as
      | {
          seq: number;
          watermark: number;
          max_per_term: number;
          corpus_rows: number;
          keys: Buffer;
          scores: Buffer;
          hits: number;
          idf: number | null;
        }
      | undefined;
  }

  /** When the most recently saved term was saved: its change sequence, top key and the corpus's rows then. */
  newest(): { seq: number; watermark: number; corpusRows: number } | undefined {
    try {
      return this.statements
        .get('SELECT seq, watermark, corpus_rows AS corpusRows FROM term_postings ORDER BY seq DESC LIMIT 1')
        .get() as { seq: number; watermark: number; corpusRows: number } | undefined;
    } catch {
      // Before migration 20: nothing saved.
      return undefined;
    }
  }

  /**
   * Saves a term's postings, or does nothing: never on a read-only connection, never for keys beyond u32,
   * and never waiting: with busy_timeout 0, a save that finds the database locked (another process writing)
   * gives up at once rather than hold a search. Returns whether it saved.
   */
  save(cacheKey: string, p: SavedPostings): boolean {
    if (!this.writable || p.keys.length === 0 || p.keys[p.keys.length - 1]! > 0xffff_ffff) return false;
    const keys = Uint32Array.from(p.keys);
    const previous = this.db.pragma('busy_timeout', { simple: true }) as number;
    this.db.pragma('busy_timeout = 0');
    try {
      this.statements
        .get(
          `INSERT INTO term_postings (cache_key, seq, watermark, max_per_term, corpus_rows, keys, scores, hits, idf)
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
           ON CONFLICT (cache_key) DO UPDATE SET seq = excluded.seq, watermark = excluded.watermark,
             max_per_term = excluded.max_per_term, corpus_rows = excluded.corpus_rows, keys = excluded.keys,
             scores = excluded.scores, hits = excluded.hits, idf = excluded.idf`,
        )
        .run(
          cacheKey,
          p.seq,
          p.watermark,
          p.maxPerTerm,
          p.corpusRows,
          Buffer.from(keys.buffer, keys.byteOffset, keys.byteLength),
          Buffer.from(p.scores.buffer, p.scores.byteOffset, p.scores.byteLength),
          p.hits,
          p.idf,
        );
      return true;
    } catch {
      // Busy, full disk, a database opened before migration 20 (or 21, 28) by an older build: the term stays in memory
      // and is scored again by the next process. Nothing depends on a save.
      return false;
    } finally {
      this.db.pragma(`busy_timeout = ${previous}`);
    }
  }

  /** Terms saved (for stats and tests). */
  count(): number {
    return this.statements.get('SELECT count(*) FROM term_postings').pluck().get() as number;
  }
}
