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
 * in one run.
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
 */
export class PendingLexicalIndex {
  private readonly memories = new Map<number, IndexedMemoryText>();
  private readonly routes: Array<{ id: number; key: number; text: string; scope: string }> = [];
  private readonly routeKeys = new Set<number>();
  private readonly insertMemory: Database.Statement;
  private readonly insertRoute: Database.Statement;

  constructor(db: Database.Database) {
    this.insertMemory = db.prepare(
      'INSERT INTO memories_fts (rowid, title, text, parts, scope, context) VALUES (?, ?, ?, ?, ?, ?)',
    );
    this.insertRoute = db.prepare('INSERT INTO routes_fts (rowid, text, scope) VALUES (?, ?, ?)');
  }

  /** A row just inserted into `memories`, to be indexed by `flush`. */
  memoryInserted(key: number, row: IndexedMemoryText): void {
    this.memories.set(key, row);
  }

  /** A row just inserted into `memory_routes` for memory `key`, to be indexed by `flush`. */
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

  /** Indexes everything held; call it inside the transaction that inserted the rows. */
  flush(): void {
    for (const [key, m] of this.memories)
      this.insertMemory.run(key, m.title, m.text, m.parts, m.scope, m.context);
    for (const r of this.routes) this.insertRoute.run(r.id, r.text, r.scope);
    this.discard();
  }

  /** Forgets what is held: the transaction that inserted those rows rolled back. */
  discard(): void {
    this.memories.clear();
    this.routes.length = 0;
    this.routeKeys.clear();
  }
}
