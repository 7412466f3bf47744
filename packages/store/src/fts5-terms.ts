import Database from 'better-sqlite3';

/**
 * The tokenizer of `memories_fts` (set by its migrations, which keep their literal SQL; a test checks that
 * this is what the file's table says).
 */
export const MEMORIES_FTS_TOKENIZE = "porter unicode61 remove_diacritics 2 tokenchars '_'";

/** Texts whose terms are held; past it the memo starts over (a namespace's vocabulary repeats). */
const MEMO_MAX = 200_000;

/**
 * The terms FTS5 indexes for a text, as `memories_fts` would index it, from FTS5's own tokenizer run on a
 * private in-memory database (an `fts5vocab` instance table over a scratch FTS5 table), memoised per text.
 * Asking the big index whether one memory says one word costs a parse and a seek, ~8–20 µs each; a
 * memory's words looked up here cost a map lookup once seen, and the answer is FTS5's own.
 */
export class Fts5Terms {
  private db: Database.Database | null = null;
  private readonly memo = new Map<string, readonly string[]>();

  constructor(private readonly tokenize = MEMORIES_FTS_TOKENIZE) {}

  /** A text's terms when held (see `termsOf`); undefined when not asked before. */
  held(text: string): readonly string[] | undefined {
    return this.memo.get(text);
  }

  /** Each text's terms, in order (a word: one term, or none, or several when it holds separators). */
  termsOf(texts: Iterable<string>): Map<string, readonly string[]> {
    const out = new Map<string, readonly string[]>();
    const missing: string[] = [];
    for (const t of texts) {
      const held = this.memo.get(t);
      if (held) out.set(t, held);
      else if (!out.has(t)) {
        out.set(t, []);
        missing.push(t);
      }
    }
    if (missing.length === 0) return out;
    if (this.memo.size + missing.length > MEMO_MAX) this.memo.clear();
    const db = this.open();
    const found = db.transaction(() => {
      const insert = db.prepare('INSERT INTO scratch (rowid, x) VALUES (?, ?)');
      for (const [i, t] of missing.entries()) insert.run(i + 1, t);
      const rows = db
        .prepare('SELECT doc, term FROM scratch_terms ORDER BY doc, offset')
        .raw()
        .all() as Array<[number, string]>;
      db.prepare('DELETE FROM scratch').run();
      return rows;
    })();
    const terms = missing.map((): string[] => []);
    for (const [doc, term] of found) terms[doc - 1]!.push(term);
    for (const [i, t] of missing.entries()) {
      this.memo.set(t, terms[i]!);
      out.set(t, terms[i]!);
    }
    return out;
  }

  close(): void {
    this.db?.close();
    this.db = null;
  }

  private open(): Database.Database {
    if (this.db) return this.db;
    const db = new Database(':memory:');
    db.exec(`
      CREATE VIRTUAL TABLE scratch USING fts5 (x, tokenize = "${this.tokenize.replaceAll('"', '""')}");
      CREATE VIRTUAL TABLE scratch_terms USING fts5vocab (scratch, instance);
    `);
    this.db = db;
    return db;
  }
}
