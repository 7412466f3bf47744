import type Database from 'better-sqlite3';

/** What `memories_fts` indexes of a memory row, in its column order. */
export interface IndexedMemoryText {
  title: string | null;
  text: string;
  parts: string;
  scope: string;
  context: string;
}

/**
 * The lexical index's entries for rows a write batch inserts, held until the batch's end and then written
 * in one run. Nothing is held outside a batch (`during`).
 *
 * Why not an AFTER INSERT trigger: FTS5 writes its pending terms to disk as a new segment whenever a
 * statement opens a statement journal, and every insert into `memories` opens one (its triggers write other
 * tables). So each memory became a segment of its own, which FTS5 then merged over and over: a quarter of
 * a bulk ingest's storing time in `perf`; `cairn ingest --no-embed` of 106,000 memories took 25–27 s with
 * the trigger and 16–18 s with this, which FTS5 keeps in memory until the commit.
 *
 * Updates and deletes still go through triggers (a row's old words must leave the index as the row
 * changes). A trigger's 'delete' of a row whose insert is still held here would remove words the index
 * never got, so a writer settles a row before any statement that rewrites its entries.
 *
 * The insert triggers stay, conditioned on `cairn_writer_indexes_fts()`, which this class defines on its
 * connection and which answers 1 only while a batch runs here: an insert at any other time (a test's, a
 * tool's) is indexed by the trigger, and a connection without the function (the sqlite3 shell) fails its
 * insert rather than store a row no search finds.
 */
export class PendingLexicalIndex {
  private readonly memories = new Map<number, IndexedMemoryText>();
  private readonly routes: Array<{ id: number; key: number; text: string; scope: string }> = [];
  private readonly routeKeys = new Set<number>();
  private readonly insertMemory: Database.Statement;
  private readonly insertRoute: Database.Statement;
  private deferring = false;

  constructor(db: Database.Database) {
    db.function('cairn_writer_indexes_fts', { deterministic: false }, () => (this.deferring ? 1 : 0));
    this.insertMemory = db.prepare(
      'INSERT INTO memories_fts (rowid, title, text, parts, scope, context) VALUES (?, ?, ?, ?, ?, ?)',
    );
    this.insertRoute = db.prepare('INSERT INTO routes_fts (rowid, text, scope) VALUES (?, ?, ?)');
  }

  /**
   * Runs a write batch's body, inside its transaction: the rows it inserts are indexed when it returns. When
   * it throws, what it held is dropped with its transaction (their keys are given out again).
   */
  during<T>(body: () => T): T {
    this.discard();
    this.deferring = true;
    try {
      const out = body();
      this.flush();
      return out;
    } finally {
      this.deferring = false;
      this.discard();
    }
  }

  /** A row just inserted into `memories`, to be indexed at the batch's end. */
  memoryInserted(key: number, row: IndexedMemoryText): void {
    this.memories.set(key, row);
  }

  /** A row just inserted into `memory_routes` for memory `key`, to be indexed at the batch's end. */
  routeInserted(id: number, key: number, text: string, scope: string): void {
    this.routes.push({ id, key, text, scope });
    this.routeKeys.add(key);
  }

  /** Before a statement whose trigger rewrites memory `key`'s row's entries (an update of the row). */
  settleMemory(key: number): void {
    if (this.memories.has(key)) this.flush();
  }

  /** Before a statement whose trigger removes routes of memory `key` from the index. */
  settleRoutes(key: number): void {
    if (this.routeKeys.has(key)) this.flush();
  }

  private flush(): void {
    for (const [key, m] of this.memories)
      this.insertMemory.run(key, m.title, m.text, m.parts, m.scope, m.context);
    for (const r of this.routes) this.insertRoute.run(r.id, r.text, r.scope);
    this.discard();
  }

  private discard(): void {
    this.memories.clear();
    this.routes.length = 0;
    this.routeKeys.clear();
  }
}
