import { assertDimensions, type EmbeddingSpace, type PendingMemory } from '@cairn/core';
import type Database from 'better-sqlite3';
import { EmbeddingSpaces } from './embedding-spaces.js';
import { NAMESPACE_KEYS_READER } from './namespace-keys-reader.js';
import { NAMESPACE_VECTORS_READER } from './namespace-vectors-reader.js';
import { StatementCache } from './statement-cache.js';
import { blobToVector, vectorToBlob } from './vector-blob.js';

export interface StoredEmbedding {
  key: number;
  namespace: string;
  contentHash: string;
  /**
   * When the vector was written: one increasing clock across every space and process on the data folder.
   * Vector indexes catch up by it (see migration 5); it says nothing about which text was embedded.
   */
  writeSeq: number;
  vector: Float32Array;
}

/**
 * Embeddings live in SQLite beside the records they describe: they are the source of truth from which
 * any vector index file can be rebuilt. Each space (EmbeddingSpaces) keeps a cursor over
 * `memories.change_seq`, so the embed stage resumes exactly where it stopped after a crash.
 */
export class EmbeddingStore {
  private readonly byKeysStmt: Database.Statement;
  private readonly clockStmt: Database.Statement;
  /**
   * The embed stage's statements, prepared once: a pass stores 64 vectors per transaction and prepared its
   * five statements again for each (about 2 µs a vector of the ~45 µs storing costs, in a scratch loop at
   * 100k memories).
   */
  private readonly statements: StatementCache;

  /** @param spaces The folder's spaces (how each keeps its vectors); its own over `db` when not given. */
  constructor(
    private readonly db: Database.Database,
    private readonly spaces: EmbeddingSpaces = new EmbeddingSpaces(db),
  ) {
    // `+namespace`: without it SQLite walks the (space, namespace, write_seq) index over the whole namespace
    // (100k rows for a page of 20 keys: ~25 ms a search at 100k) instead of probing (space, key) per key.
    this.byKeysStmt = db.prepare(
      'SELECT key, vector FROM embeddings WHERE space = ? AND +namespace = ? AND key IN (SELECT value FROM json_each(?))',
    );
    this.clockStmt = db.prepare('SELECT value FROM embedding_clock').pluck();
    this.statements = new StatementCache(db);
  }

  /** Every namespace's current vectors in the space (kept counts: one read of a small table). */
  currentCounts(spaceId: string): Map<string, number> {
    const rows = this.db
      .prepare('SELECT namespace, current FROM space_vectors WHERE space = ?')
      .all(spaceId) as Array<{ namespace: string; current: number }>;
    return new Map(rows.map((r) => [r.namespace, r.current]));
  }

  /** The namespace's live memories and its current vectors in the space (kept counts; see EmbeddingSource). */
  coverage(spaceId: string, namespace: string): { live: number; current: number } {
    const row = this.statements
      .get(
        `SELECT coalesce((SELECT live FROM namespace_rows WHERE namespace = ?), 0) AS live,
                coalesce((SELECT max(current) FROM space_vectors WHERE namespace = ? AND space = ?), 0) AS current`,
      )
      .get(namespace, namespace, spaceId) as { live: number; current: number };
    return row;
  }

  /** Vectors of the space that are current for the namespace's live memories (a kept count). */
  currentCount(spaceId: string, namespace: string): number {
    return (this.db
      .prepare('SELECT coalesce(max(current), 0) FROM space_vectors WHERE namespace = ? AND space = ?')
      .pluck()
      .get(namespace, spaceId) ?? 0) as number;
  }

  /** Memories changed after the space's cursor, oldest change first. */
  pending(spaceId: string, limit: number): PendingMemory[] {
    return this.statements
      .get(
        `SELECT m.key, m.namespace, m.kind, m.title, m.text, m.content_hash AS contentHash, m.change_seq AS changeSeq
         FROM memories m WHERE m.change_seq > (SELECT cursor FROM embedding_spaces WHERE id = ?)
           AND m.deleted_at IS NULL
         ORDER BY m.change_seq LIMIT ?`,
      )
      .all(spaceId, limit) as PendingMemory[];
  }

  /** These memories as the embed stage reads them, minus those with a current vector in the space. */
  unembedded(spaceId: string, keys: readonly number[]): PendingMemory[] {
    if (keys.length === 0) return [];
    return this.db
      .prepare(
        `SELECT m.key, m.namespace, m.kind, m.title, m.text, m.content_hash AS contentHash, m.change_seq AS changeSeq
         FROM memories m WHERE m.key IN (SELECT value FROM json_each(?)) AND m.deleted_at IS NULL
           AND NOT EXISTS (SELECT 1 FROM embeddings e WHERE e.space = ? AND e.key = m.key AND e.seq = m.change_seq)
         ORDER BY m.change_seq`,
      )
      .all(JSON.stringify(keys), spaceId) as PendingMemory[];
  }

  /**
   * The reconcile sweep's question: live memories past the space's cursor with neither a current vector nor
   * a recorded failure, changed before `changedBefore` (ms; younger ones are probably still in a queue).
   * When the sweep finds none, every memory changed before the cut-off is embedded, so the cursor moves up
   * to the newest such change and later sweeps start there.
   */
  missing(spaceId: string, changedBefore: number, limit: number): PendingMemory[] {
    const rows = this.db
      .prepare(
        `SELECT m.key, m.namespace, m.kind, m.title, m.text, m.content_hash AS contentHash, m.change_seq AS changeSeq
         FROM memories m WHERE m.change_seq > (SELECT cursor FROM embedding_spaces WHERE id = ?)
           AND m.deleted_at IS NULL AND m.updated_at < ?
           AND NOT EXISTS (SELECT 1 FROM embeddings e WHERE e.space = ? AND e.key = m.key AND e.seq = m.change_seq)
           AND NOT EXISTS (SELECT 1 FROM embed_failures f WHERE f.space = ? AND f.key = m.key)
         ORDER BY m.change_seq LIMIT ?`,
      )
      .all(spaceId, changedBefore, spaceId, spaceId, limit) as PendingMemory[];
    if (rows.length === 0) {
      // Only memories younger than the cut-off can still lack a vector: move the cursor below the oldest.
      this.db
        .prepare(
          `UPDATE embedding_spaces SET cursor = max(cursor, coalesce(
             (SELECT min(change_seq) - 1 FROM memories WHERE updated_at >= ? AND deleted_at IS NULL),
             (SELECT max(change_seq) FROM memories), 0)) WHERE id = ?`,
        )
        .run(changedBefore, spaceId);
    }
    return rows;
  }

  /**
   * Of `keys`, the memories still waiting for a vector in the space: not deleted, with neither a current
   * vector (of their text as it is now) nor a failure recorded since their text last changed (a rewrite
   * leaves an older failure's row in place until the writer tries again). What a process that stored them
   * beside the folder's writer waits on (see the engine's `whenWriterEmbedded`).
   */
  unsettled(spaceId: string, keys: readonly number[]): number[] {
    if (keys.length === 0) return [];
    return this.statements
      .get(
        `SELECT m.key FROM memories m WHERE m.key IN (SELECT value FROM json_each(?)) AND m.deleted_at IS NULL
           AND NOT EXISTS (SELECT 1 FROM embeddings e WHERE e.space = ? AND e.key = m.key AND e.seq = m.change_seq)
           AND NOT EXISTS (SELECT 1 FROM embed_failures f WHERE f.space = ? AND f.key = m.key AND f.at >= m.updated_at)`,
      )
      .pluck()
      .all(JSON.stringify(keys), spaceId, spaceId) as number[];
  }

  /** A reindex's page: live memories after `afterSeq` with neither a current vector nor a failure in the space. */
  unembeddedAfter(spaceId: string, afterSeq: number, limit: number): PendingMemory[] {
    return this.statements
      .get(
        `SELECT m.key, m.namespace, m.kind, m.title, m.text, m.content_hash AS contentHash, m.change_seq AS changeSeq
         FROM memories m WHERE m.change_seq > ? AND m.deleted_at IS NULL
           AND NOT EXISTS (SELECT 1 FROM embeddings e WHERE e.space = ? AND e.key = m.key AND e.seq = m.change_seq)
           AND NOT EXISTS (SELECT 1 FROM embed_failures f WHERE f.space = ? AND f.key = m.key)
         ORDER BY m.change_seq LIMIT ?`,
      )
      .all(afterSeq, spaceId, spaceId, limit) as PendingMemory[];
  }

  /** Vectors already computed in this space for these content hashes (embedding cache hits). */
  vectorsByContentHash(space: EmbeddingSpace, hashes: readonly string[]): Map<string, Float32Array> {
    const out = new Map<string, Float32Array>();
    if (hashes.length === 0) return out;
    // One vector per hash: a text stored 20,000 times (a dup storm) has 20,000 equal vectors, and reading
    // them all on every batch made such an ingest quadratic. INDEXED BY: without statistics SQLite prefers
    // the (space, key) index's prefix, which scans every vector of the space per lookup.
    const rows = this.statements
      .get(
        `SELECT h.value AS h, (SELECT e.vector FROM embeddings e INDEXED BY embeddings_space_hash
                              WHERE e.space = ? AND e.content_hash = h.value LIMIT 1) AS vector
         FROM json_each(?) h`,
      )
      .all(space.id, JSON.stringify([...new Set(hashes)])) as Array<{ h: string; vector: Buffer | null }>;
    for (const r of rows) if (r.vector) out.set(r.h, blobToVector(r.vector));
    return out;
  }

  /**
   * Stores vectors and advances the space's cursor in one transaction, so a crash either keeps both or
   * neither. A memory changed again since it was read (its change_seq moved) is skipped: the newer text
   * is still pending and will be embedded on the next pass. So is one deleted since it was read (a delete
   * moves only meta_seq): its vector was dropped with it, and storing one now would count and index a
   * memory no search may return (`cairn import` of a deleted memory met this every time).
   */
  put(
    space: EmbeddingSpace,
    items: ReadonlyArray<{ memory: PendingMemory; vector: Float32Array }>,
    cursor?: number,
  ): StoredEmbedding[] {
    const storage = this.spaces.storageOf(space.id);
    const upsert = this.statements.get(
      `INSERT INTO embeddings (space, key, namespace, content_hash, seq, vector, write_seq, first_write_seq)
       SELECT ?, key, namespace, content_hash, change_seq, ?, ?, ? FROM memories
         WHERE key = ? AND change_seq = ? AND deleted_at IS NULL
       ON CONFLICT (space, key) DO UPDATE SET content_hash = excluded.content_hash, seq = excluded.seq,
         vector = excluded.vector, namespace = excluded.namespace, write_seq = excluded.write_seq,
         first_write_seq = CASE WHEN embeddings.namespace IS excluded.namespace
           THEN coalesce(embeddings.first_write_seq, embeddings.write_seq) ELSE excluded.write_seq END`,
    );
    const advance = this.statements.get('UPDATE embedding_spaces SET cursor = max(cursor, ?) WHERE id = ?');
    const clearFailure = this.statements.get('DELETE FROM embed_failures WHERE space = ? AND key = ?');
    return this.db
      .transaction(() => {
        // Read inside the immediate transaction, under SQLite's write lock: no other process can commit
        // a vector between this read and the commit, so write_seq order is commit order.
        let clock = this.clockStmt.get() as number;
        const stored: StoredEmbedding[] = [];
        for (const { memory, vector } of items) {
          assertDimensions(vector, space, `vector for memory ${memory.namespace}/${memory.key}`);
          const res = upsert.run(
            space.id,
            vectorToBlob(vector, storage),
            clock + 1,
            clock + 1,
            memory.key,
            memory.changeSeq,
          );
          if (res.changes > 0) {
            clock += 1;
            clearFailure.run(space.id, memory.key);
            stored.push({
              key: memory.key,
              namespace: memory.namespace,
              contentHash: memory.contentHash,
              writeSeq: clock,
              vector,
            });
          }
        }
        if (stored.length > 0) this.statements.get('UPDATE embedding_clock SET value = ?').run(clock);
        if (cursor !== undefined) advance.run(cursor, space.id);
        return stored;
      })
      .immediate();
  }

  /** Records that a memory could not be embedded and moves past it. */
  recordFailures(
    spaceId: string,
    failures: ReadonlyArray<{ key: number; error: string }>,
    cursor?: number,
  ): void {
    const ins = this.db.prepare(
      'INSERT OR REPLACE INTO embed_failures (space, key, error, at) VALUES (?, ?, ?, ?)',
    );
    const advance = this.db.prepare('UPDATE embedding_spaces SET cursor = max(cursor, ?) WHERE id = ?');
    this.db
      .transaction(() => {
        for (const f of failures) ins.run(spaceId, f.key, f.error, Date.now());
        if (cursor !== undefined) advance.run(cursor, spaceId);
      })
      .immediate();
  }

  /**
   * Where a worker thread reads a namespace's vectors itself (a graph build; see
   * `namespace-vectors-reader.ts`): the module and what to pass it besides the limit and dimensions. Null for
   * an in-memory database, which no other connection can open.
   */
  offThreadReader(
    spaceId: string,
    namespace: string,
  ): { module: string; args: { path: string; spaceId: string; namespace: string } } | null {
    if (this.db.memory) return null;
    return { module: NAMESPACE_VECTORS_READER, args: { path: this.db.name, spaceId, namespace } };
  }

  /**
   * The database file a worker thread opens to store this space's vectors itself (a reindex's embed pass on
   * the compute pool: see the engine's `space-pass.ts`). Null for an in-memory database, which no other
   * connection can open.
   */
  offThreadWriterPath(): string | null {
    return this.db.memory ? null : this.db.name;
  }

  /**
   * Where a worker thread reads the keys `keyPages` would give (an index audit looking them up in a graph
   * file there; see `namespace-keys-reader.ts`): the module and its arguments. Null for an in-memory
   * database, which no other connection can open.
   */
  offThreadKeyReader(
    spaceId: string,
    namespace: string,
    afterWriteSeq = -1,
  ): {
    module: string;
    args: { path: string; spaceId: string; namespace: string; afterWriteSeq: number };
  } | null {
    if (this.db.memory) return null;
    return { module: NAMESPACE_KEYS_READER, args: { path: this.db.name, spaceId, namespace, afterWriteSeq } };
  }

  /**
   * Iterates a namespace's vectors in the order they were written, starting after `afterWriteSeq`,
   * copying each BLOB. Reads in pages with `.all()`: an open SQLite cursor held across a consumer's
   * `await` would make every write on this connection fail with "connection is busy" until it ends.
   */
  *iterate(
    spaceId: string,
    namespace: string,
    afterWriteSeq = 0,
    pageSize = 2000,
  ): Generator<StoredEmbedding> {
    const stmt = this.db.prepare(
      `SELECT key, namespace, content_hash AS contentHash, write_seq AS writeSeq, vector FROM embeddings
       WHERE space = ? AND namespace = ? AND write_seq > ? ORDER BY write_seq LIMIT ?`,
    );
    let after = afterWriteSeq;
    for (;;) {
      const rows = stmt.all(spaceId, namespace, after, pageSize) as Array<{
        key: number;
        namespace: string;
        contentHash: string;
        writeSeq: number;
        vector: Buffer;
      }>;
      for (const row of rows) yield { ...row, vector: blobToVector(row.vector) };
      if (rows.length < pageSize) return;
      after = rows.at(-1)!.writeSeq;
    }
  }

  /**
   * Every key of a namespace with a vector in the space (the index audit's checklist), or those written
   * after `afterWriteSeq`, `pageSize` at a time in write order. Each page is a query of its own, so a caller may yield between pages: at a million
   * keys one query held the serving thread for 0.3–0.46 s, a page of 5,000 for ~2 ms, and all pages cost
   * about the same. The cursor is read in the page's own snapshot, so no key is skipped; a key re-embedded
   * meanwhile may come again in a later page.
   */
  *keyPages(spaceId: string, namespace: string, pageSize = 5_000, afterWriteSeq = -1): Generator<number[]> {
    // LIMIT 0 would read the same empty page forever, and a negative LIMIT means none.
    const limit = Math.max(1, Math.floor(pageSize));
    const keysAfter = this.db
      .prepare(
        `SELECT key FROM embeddings WHERE space = ? AND namespace = ? AND write_seq > ?
         ORDER BY write_seq LIMIT ?`,
      )
      .pluck();
    const seqOf = this.db.prepare('SELECT write_seq FROM embeddings WHERE space = ? AND key = ?').pluck();
    const page = this.db.transaction((after: number) => {
      const keys = keysAfter.all(spaceId, namespace, after, limit) as number[];
      const last = keys.length > 0 ? (seqOf.get(spaceId, keys.at(-1)) as number) : after;
      return { keys, last };
    });
    for (let after = afterWriteSeq; ; ) {
      const { keys, last } = page(after);
      if (keys.length > 0) yield keys;
      if (keys.length < limit) return;
      after = last;
    }
  }

  /**
   * Of `stored` (vectors just stored in `spaceId`, each with the write_seq it was given), those whose row
   * still holds that write: not deleted, nor rewritten since. For vectors stored on another connection and
   * applied to an index here later: a delete in between found nothing to drop from the index then.
   */
  stillStored<E extends { key: number; writeSeq: number }>(spaceId: string, stored: readonly E[]): E[] {
    if (stored.length === 0) return [];
    const rows = this.statements
      .get(
        'SELECT key, write_seq FROM embeddings WHERE space = ? AND key IN (SELECT value FROM json_each(?))',
      )
      .raw()
      .all(spaceId, JSON.stringify(stored.map((e) => e.key))) as Array<[number, number]>;
    const writes = new Map(rows);
    return stored.filter((e) => writes.get(e.key) === e.writeSeq);
  }

  /** Vectors for specific keys of one namespace. */
  byKeys(spaceId: string, namespace: string, keys: readonly number[]): Map<number, Float32Array> {
    const out = new Map<number, Float32Array>();
    if (keys.length === 0) return out;
    const rows = this.byKeysStmt.all(spaceId, namespace, JSON.stringify(keys)) as Array<{
      key: number;
      vector: Buffer;
    }>;
    for (const r of rows) out.set(r.key, blobToVector(r.vector));
    return out;
  }

  count(spaceId: string, namespace: string): number {
    return (
      this.db
        .prepare('SELECT count(*) AS n FROM embeddings WHERE space = ? AND namespace = ?')
        .get(spaceId, namespace) as { n: number }
    ).n;
  }

  /** `count`, but it stops at `limit`: whether a namespace is small costs the limit, not the namespace. */
  countUpTo(spaceId: string, namespace: string, limit: number): number {
    // SQLite's LIMIT takes an integer only; a limit past 2^53 (an exact threshold of "always") counts all.
    if (!Number.isSafeInteger(limit)) {
      const whole = Math.max(0, Math.ceil(limit));
      return Number.isSafeInteger(whole)
        ? this.countUpTo(spaceId, namespace, whole)
        : this.count(spaceId, namespace);
    }
    return this.db
      .prepare('SELECT count(*) FROM (SELECT 1 FROM embeddings WHERE space = ? AND namespace = ? LIMIT ?)')
      .pluck()
      .get(spaceId, namespace, limit) as number;
  }

  /**
   * Vectors written after `writeSeq` whose memory already had one in the space at or before it (a rewrite
   * re-embedded): what a graph saved at that watermark holds already, and a load replaces rather than adds.
   */
  countRewrittenAfter(spaceId: string, namespace: string, writeSeq: number): number {
    return this.db
      .prepare(
        'SELECT count(*) FROM embeddings WHERE space = ? AND namespace = ? AND write_seq > ? AND first_write_seq <= ?',
      )
      .pluck()
      .get(spaceId, namespace, writeSeq, writeSeq) as number;
  }

  countWrittenAfter(spaceId: string, namespace: string, writeSeq: number): number {
    return this.db
      .prepare('SELECT count(*) FROM embeddings WHERE space = ? AND namespace = ? AND write_seq > ?')
      .pluck()
      .get(spaceId, namespace, writeSeq) as number;
  }

  /** The write_seq of the namespace's latest vector in the space (0 for none). */
  maxWriteSeq(spaceId: string, namespace: string): number {
    return (
      this.db
        .prepare('SELECT coalesce(max(write_seq), 0) AS s FROM embeddings WHERE space = ? AND namespace = ?')
        .get(spaceId, namespace) as { s: number }
    ).s;
  }

  failures(spaceId: string, namespace: string): number {
    return (
      this.db
        .prepare(
          'SELECT count(*) AS n FROM embed_failures f JOIN memories m ON m.key = f.key WHERE f.space = ? AND m.namespace = ?',
        )
        .get(spaceId, namespace) as { n: number }
    ).n;
  }
}
