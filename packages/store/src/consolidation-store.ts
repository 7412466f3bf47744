import type Database from 'better-sqlite3';
import { blobToVector } from './vector-blob.js';

/** A vector the near-duplicate pass has not looked at yet, with what the pass needs of its memory. */
export interface ConsolidationCandidate {
  key: number;
  namespace: string;
  id: string;
  kind: string;
  ts: number;
  writeSeq: number;
  vector: Float32Array;
}

/** An older memory to be marked as superseded by a newer near-duplicate of it. */
/** The newest change_seq and meta_seq of the store at one moment. */
export interface ChangeStamps {
  change: number;
  meta: number;
}

export interface MergePair {
  /** The older memory's key (it stops appearing in search). */
  key: number;
  /** The newer memory's key (it absorbs the older one). */
  byKey: number;
  /** Their cosine, verified exactly (1 for the same text). */
  cosine: number;
}

/** One merge as recorded: ids, not keys, for reports and the API. */
export interface MergeRecord {
  namespace: string;
  id: string;
  into: string;
  cosine: number;
  at: number;
  undoneAt: number | null;
}

/** A live memory sharing its text with others in its namespace (an exact-duplicate group). */
export interface DuplicateMember {
  key: number;
  id: string;
  namespace: string;
  kind: string;
  agent: string | null;
  session: string | null;
  ts: number;
  /** JSON, as stored. */
  tags: string;
  validFrom: number | null;
  validTo: number | null;
}

/**
 * The consolidation job's records (migration 12): which memory was merged into which, the near-duplicate
 * pass's cursor over a space's embeddings, and undo. A merge is `superseded_by` plus a `consolidations` row,
 * in one transaction; nothing is ever deleted, so every merge can be undone.
 */
export class ConsolidationStore {
  private readonly supersede: Database.Statement;
  private readonly record: Database.Statement;
  private readonly nextMeta: Database.Statement;
  private readonly liveOf: Database.Statement;
  private readonly anyIn: Database.Statement;
  private readonly dupCountsStmt: Database.Statement;
  private readonly sameTextStmt: Database.Statement;
  private readonly stampsStmt: Database.Statement;
  private readonly absorberStep: Database.Statement;
  private readonly restoredIn: Database.Statement;

  constructor(private readonly db: Database.Database) {
    this.nextMeta = db.prepare('SELECT coalesce(max(meta_seq), 0) + 1 FROM memories').pluck();
    // Prepared once: the job asks it for every text written since its cursor (100k after a bulk ingest).
    // `+m.namespace`: without ANALYZE's statistics (a new folder) SQLite walked the namespace's memories
    // by `memories_ns_ts` for every text, O(n) a call (1.4 ms at 4,000 memories, half a consolidation
    // run); the text's hash is what narrows it to a few rows.
    this.sameTextStmt = db.prepare(
      `SELECT m.key, m.id, m.namespace, m.kind, m.agent, m.session, m.ts, m.tags, m.valid_from AS validFrom,
              m.valid_to AS validTo
       FROM embeddings e JOIN memories m ON m.key = e.key AND m.content_hash = e.content_hash
       WHERE e.space = ? AND e.content_hash = ? AND +m.namespace = ?
         AND m.superseded_by IS NULL AND m.deleted_at IS NULL
       ORDER BY m.ts DESC, m.key DESC`,
    );
    // One subquery per max: with two aggregates in one SELECT, SQLite scans the table.
    this.stampsStmt = db.prepare(
      `SELECT coalesce((SELECT max(change_seq) FROM memories), 0) AS change,
              coalesce((SELECT max(meta_seq) FROM memories), 0) AS meta`,
    );
    this.liveOf = db.prepare(
      `SELECT m.key, m.id, m.namespace, m.change_seq AS changeSeq, m.meta_seq AS metaSeq,
              (c.key IS NOT NULL) AS undone FROM memories m
       LEFT JOIN consolidations c ON c.key = m.key AND c.undone_at IS NOT NULL
       WHERE m.key = ? AND m.superseded_by IS NULL AND m.deleted_at IS NULL`,
    );
    this.supersede = db.prepare('UPDATE memories SET superseded_by = ?, meta_seq = ? WHERE key = ?');
    // Prepared once, as the two below: a vector search in a namespace with merges asks for its candidates'
    // absorbers, and the job asks both for every candidate it verifies (a statement prepared per call was
    // 2.0 s of a 60-s consolidation run over 96,000 memories in 40 namespaces).
    this.absorberStep = db.prepare(
      `SELECT key, by_key AS byKey FROM consolidations
       WHERE namespace = ? AND undone_at IS NULL AND key IN (SELECT value FROM json_each(?))`,
    );
    this.restoredIn = db
      .prepare(
        'SELECT key FROM consolidations WHERE undone_at IS NOT NULL AND key IN (SELECT value FROM json_each(?))',
      )
      .pluck();
    this.anyIn = db
      .prepare('SELECT 1 FROM consolidations WHERE namespace = ? AND undone_at IS NULL LIMIT 1')
      .pluck();
    this.dupCountsStmt = db.prepare(
      `WITH RECURSIVE absorbed(root, key) AS (
         SELECT c.by_key, c.key FROM consolidations c
         WHERE c.namespace = ? AND c.undone_at IS NULL AND c.by_key IN (SELECT value FROM json_each(?))
         UNION
         SELECT a.root, c.key FROM consolidations c JOIN absorbed a ON c.by_key = a.key
         WHERE c.namespace = ? AND c.undone_at IS NULL
       )
       SELECT root, count(*) AS n FROM absorbed GROUP BY root`,
    );
    this.record = db.prepare(
      `INSERT INTO consolidations (key, namespace, by_key, cosine, at, undone_at) VALUES (?, ?, ?, ?, ?, NULL)
       ON CONFLICT (key) DO UPDATE SET by_key = excluded.by_key, cosine = excluded.cosine, at = excluded.at,
         undone_at = NULL`,
    );
  }

  /** Whether anything is merged in `namespace` now (one probe of the (namespace, at) index). */
  hasMerges(namespace: string): boolean {
    return Boolean(this.anyIn.get(namespace));
  }

  /** The write_seq up to which the near-duplicate pass has looked at the space's embeddings. */
  cursor(spaceId: string): number {
    return (
      (this.db.prepare('SELECT write_seq FROM consolidation_cursor WHERE space = ?').pluck().get(spaceId) as
        | number
        | undefined) ?? 0
    );
  }

  setCursor(spaceId: string, writeSeq: number): void {
    this.db
      .prepare(
        `INSERT INTO consolidation_cursor (space, write_seq) VALUES (?, ?)
         ON CONFLICT (space) DO UPDATE SET write_seq = max(write_seq, excluded.write_seq)`,
      )
      .run(spaceId, writeSeq);
  }

  /**
   * Vectors of the space written after `afterSeq`, in write order, whose memory is still live and not of a
   * skipped kind; `upTo` is the last write_seq read (the cursor to store once they are handled), including
   * rows left out.
   */
  newVectors(
    spaceId: string,
    afterSeq: number,
    limit: number,
    skipKinds: readonly string[],
    namespace?: string,
  ): { candidates: ConsolidationCandidate[]; upTo: number } {
    const rows = this.db
      .prepare(
        `SELECT e.key, e.namespace, e.write_seq AS writeSeq, e.vector, m.id, m.kind, m.ts,
                (m.superseded_by IS NULL AND m.deleted_at IS NULL) AS live
         FROM embeddings e JOIN memories m ON m.key = e.key AND m.content_hash = e.content_hash
         WHERE e.space = ? AND e.write_seq > ? ${namespace === undefined ? '' : 'AND e.namespace = ?'}
         ORDER BY e.write_seq LIMIT ?`,
      )
      .all(
        ...(namespace === undefined ? [spaceId, afterSeq, limit] : [spaceId, afterSeq, namespace, limit]),
      ) as Array<{
      key: number;
      namespace: string;
      writeSeq: number;
      vector: Buffer;
      id: string;
      kind: string;
      ts: number;
      live: number;
    }>;
    const skip = new Set(skipKinds);
    const candidates: ConsolidationCandidate[] = [];
    for (const r of rows) {
      if (!r.live || skip.has(r.kind)) continue;
      candidates.push({
        key: r.key,
        namespace: r.namespace,
        id: r.id,
        kind: r.kind,
        ts: r.ts,
        writeSeq: r.writeSeq,
        vector: blobToVector(r.vector),
      });
    }
    return { candidates, upTo: rows.at(-1)?.writeSeq ?? afterSeq };
  }

  /**
   * The live memories of `namespace` with exactly this text (content hash covers kind, title and text), in
   * the space, newest first: an exact-duplicate group. Read through the embeddings' (space, content_hash)
   * index, so a group costs its own size, not the namespace's.
   */
  sameText(spaceId: string, namespace: string, contentHash: string): DuplicateMember[] {
    return this.sameTextStmt.all(spaceId, contentHash, namespace) as DuplicateMember[];
  }

  /** The distinct (namespace, content hash) pairs among the space's embeddings written in (after, upTo]. */
  textsWritten(
    spaceId: string,
    afterSeq: number,
    upTo: number,
    namespace?: string,
  ): Array<{
    namespace: string;
    contentHash: string;
  }> {
    return this.db
      .prepare(
        `SELECT DISTINCT namespace, content_hash AS contentHash FROM embeddings
         WHERE space = ? AND write_seq > ? AND write_seq <= ? ${namespace === undefined ? '' : 'AND namespace = ?'}`,
      )
      .all(
        ...(namespace === undefined ? [spaceId, afterSeq, upTo] : [spaceId, afterSeq, upTo, namespace]),
      ) as Array<{ namespace: string; contentHash: string }>;
  }

  /**
   * The memory each of `keys` was merged into, following chains (a merged memory that was merged in turn)
   * to the end; keys never merged are left out. Liveness of the result is the caller's to check.
   */
  absorbers(namespace: string, keys: readonly number[]): Map<number, number> {
    const out = new Map<number, number>();
    if (keys.length === 0 || !this.hasMerges(namespace)) return out;
    const step = this.absorberStep;
    const at = new Map<number, number>(keys.map((k) => [k, k]));
    // A chain is as long as the merges that made it; 8 hops is far beyond any the job makes in practice.
    for (let hop = 0; hop < 8 && at.size > 0; hop++) {
      const rows = step.all(namespace, JSON.stringify([...new Set(at.values())])) as Array<{
        key: number;
        byKey: number;
      }>;
      const next = new Map(rows.map((r) => [r.key, r.byKey]));
      for (const [start, cur] of at) {
        const by = next.get(cur);
        if (by === undefined) at.delete(start);
        else {
          out.set(start, by);
          at.set(start, by);
        }
      }
    }
    return out;
  }

  /** Keys among `keys` that an undo has restored: the job leaves them alone for good. */
  restored(keys: readonly number[]): Set<number> {
    if (keys.length === 0) return new Set();
    return new Set(this.restoredIn.all(JSON.stringify(keys)) as number[]);
  }

  /**
   * The newest text and metadata stamps of the store: a pass reads them before it verifies a batch and
   * hands them to `merge`, which then leaves alone any memory changed meanwhile.
   */
  stamps(): ChangeStamps {
    return this.stampsStmt.get() as ChangeStamps;
  }

  /**
   * Applies merges in one transaction. A pair is skipped when either memory stopped being live since it
   * was found, when both are in different namespaces, or when an undo restored the older one.
   * Returns the merges applied.
   */
  merge(pairs: readonly MergePair[], now = Date.now(), unchangedSince?: ChangeStamps): MergeRecord[] {
    type Live = {
      key: number;
      id: string;
      namespace: string;
      changeSeq: number;
      metaSeq: number;
      undone: number;
    };
    // A memory rewritten or re-tagged after its pair was verified is left alone (the job yields to writes of
    // its own process between checks): a rewritten one is checked again when its new vector is read; a
    // re-tagged one stays unmerged, a missed merge rather than a wrong one.
    const changed = (m: Live) =>
      unchangedSince !== undefined &&
      (m.changeSeq > unchangedSince.change || m.metaSeq > unchangedSince.meta);
    return this.db
      .transaction(() => {
        const applied: MergeRecord[] = [];
        for (const p of pairs) {
          if (p.key === p.byKey) continue;
          const older = this.liveOf.get(p.key) as Live | undefined;
          const newer = this.liveOf.get(p.byKey) as Live | undefined;
          if (!older || !newer || older.undone || older.namespace !== newer.namespace) continue;
          if (changed(older) || changed(newer)) continue;
          this.supersede.run(newer.id, this.nextMeta.get(), older.key);
          this.record.run(older.key, older.namespace, newer.key, p.cosine, now);
          applied.push({
            namespace: older.namespace,
            id: older.id,
            into: newer.id,
            cosine: p.cosine,
            at: now,
            undoneAt: null,
          });
        }
        return applied;
      })
      .immediate();
  }

  /**
   * Undoes merges in `namespace`: the memories `ids` (every merged one when `ids` is absent) are live again,
   * unless something other than consolidation superseded them since. The job never merges them again.
   */
  undo(namespace: string, ids?: readonly string[], now = Date.now()): MergeRecord[] {
    return this.db
      .transaction(() => {
        const rows = this.db
          .prepare(
            `SELECT c.key, m.id, b.id AS into_id, c.cosine, c.at, m.superseded_by AS supersededBy
             FROM consolidations c JOIN memories m ON m.key = c.key JOIN memories b ON b.key = c.by_key
             WHERE c.namespace = ? AND c.undone_at IS NULL
               ${ids === undefined ? '' : 'AND m.id IN (SELECT value FROM json_each(?))'}`,
          )
          .all(...(ids === undefined ? [namespace] : [namespace, JSON.stringify(ids)])) as Array<{
          key: number;
          id: string;
          into_id: string;
          cosine: number;
          at: number;
          supersededBy: string | null;
        }>;
        const restore = this.db.prepare(
          'UPDATE memories SET superseded_by = NULL, meta_seq = ? WHERE key = ? AND superseded_by = ?',
        );
        const stamp = this.db.prepare('UPDATE consolidations SET undone_at = ? WHERE key = ?');
        const out: MergeRecord[] = [];
        for (const r of rows) {
          restore.run(this.nextMeta.get(), r.key, r.into_id);
          stamp.run(now, r.key);
          out.push({ namespace, id: r.id, into: r.into_id, cosine: r.cosine, at: r.at, undoneAt: now });
        }
        return out;
      })
      .immediate();
  }

  /**
   * Records merges that were undone elsewhere (`cairn import` of an export), in one transaction: the job
   * never merges those memories again. Only a record: the memories' rows are not touched, except that a
   * merge this folder made of one of them meanwhile (or a half-finished import's) is undone. The target need
   * not be live (it may have been merged or superseded since the undo). Returns how many were recorded.
   */
  recordUndone(
    merges: ReadonlyArray<{
      key: number;
      byKey: number;
      namespace: string;
      cosine: number;
      at: number;
      undoneAt: number;
    }>,
  ): number {
    const active = this.db.prepare(
      `SELECT b.id AS intoId FROM consolidations c JOIN memories b ON b.key = c.by_key
       WHERE c.key = ? AND c.undone_at IS NULL`,
    );
    const restore = this.db.prepare(
      'UPDATE memories SET superseded_by = NULL, meta_seq = ? WHERE key = ? AND superseded_by = ?',
    );
    const put = this.db.prepare(
      `INSERT INTO consolidations (key, namespace, by_key, cosine, at, undone_at) VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT (key) DO UPDATE SET by_key = excluded.by_key, cosine = excluded.cosine, at = excluded.at,
         undone_at = excluded.undone_at
       WHERE consolidations.undone_at IS NULL`,
    );
    return this.db
      .transaction(() => {
        let recorded = 0;
        for (const m of merges) {
          const merged = active.get(m.key) as { intoId: string } | undefined;
          if (merged) restore.run(this.nextMeta.get(), m.key, merged.intoId);
          recorded += put.run(m.key, m.namespace, m.byKey, m.cosine, m.at, m.undoneAt).changes;
        }
        return recorded;
      })
      .immediate();
  }

  /**
   * The merges of a namespace, newest first (undone ones included, with `undoneAt`). A merge dissolved by
   * deleting or rewriting a memory of it is not listed: the writer forgets its row (`dissolveMerges`).
   */
  list(namespace: string, limit = 100): MergeRecord[] {
    return (
      this.db
        .prepare(
          `SELECT c.namespace, m.id, b.id AS into_id, c.cosine, c.at, c.undone_at AS undoneAt
           FROM consolidations c JOIN memories m ON m.key = c.key JOIN memories b ON b.key = c.by_key
           WHERE c.namespace = ? ORDER BY c.at DESC, c.key DESC LIMIT ?`,
        )
        .all(namespace, limit) as Array<Omit<MergeRecord, 'into'> & { into_id: string }>
    ).map(({ into_id, ...r }) => ({ ...r, into: into_id }));
  }

  /**
   * How many memories were merged into each of `keys`, directly or through a chain (a merged memory that
   * had absorbed others brings them along); undone merges do not count.
   */
  dupCounts(namespace: string, keys: readonly number[]): Map<number, number> {
    const out = new Map<number, number>();
    if (keys.length === 0) return out;
    // Asked on every search: a namespace nothing was ever merged in answers from one index probe.
    if (!this.hasMerges(namespace)) return out;
    const rows = this.dupCountsStmt.all(namespace, JSON.stringify(keys), namespace) as Array<{
      root: number;
      n: number;
    }>;
    for (const r of rows) out.set(r.root, r.n);
    return out;
  }

  /**
   * The memories merged into each of `keys` (for `explain: 'full'`), directly or through a chain, as
   * `dupCounts` counts them: newest merge first, at most `limit` each, each with the cosine of its own merge.
   */
  absorbedBy(
    namespace: string,
    keys: readonly number[],
    limit = 20,
  ): Map<number, Array<{ id: string; cosine: number }>> {
    const out = new Map<number, Array<{ id: string; cosine: number }>>();
    if (keys.length === 0) return out;
    const rows = this.db
      .prepare(
        `WITH RECURSIVE absorbed(root, key, cosine, at) AS (
           SELECT c.by_key, c.key, c.cosine, c.at FROM consolidations c
           WHERE c.namespace = ? AND c.undone_at IS NULL AND c.by_key IN (SELECT value FROM json_each(?))
           UNION
           SELECT a.root, c.key, c.cosine, c.at FROM consolidations c JOIN absorbed a ON c.by_key = a.key
           WHERE c.namespace = ? AND c.undone_at IS NULL
         ),
         ranked AS (
           SELECT root, key, cosine, row_number() OVER (PARTITION BY root ORDER BY at DESC, key DESC) AS n
           FROM absorbed
         )
         SELECT r.root AS byKey, m.id, r.cosine FROM ranked r JOIN memories m ON m.key = r.key
         WHERE r.n <= ? ORDER BY r.root, r.n`,
      )
      .all(namespace, JSON.stringify(keys), namespace, limit) as Array<{
      byKey: number;
      id: string;
      cosine: number;
    }>;
    for (const r of rows) {
      const list = out.get(r.byKey) ?? [];
      list.push({ id: r.id, cosine: r.cosine });
      out.set(r.byKey, list);
    }
    return out;
  }
}
