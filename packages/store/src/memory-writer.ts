import { createHash } from 'node:crypto';
import { codeParts, type NormalizedMemory } from '@cairn/core';
import type Database from 'better-sqlite3';
import { scopeText } from './facet-tokens.js';
import { PendingLexicalIndex } from './pending-lexical-index.js';
import { RouteWriter } from './route-writer.js';
import {
  DEFAULT_SESSION_CONTEXT_OPTIONS,
  SessionContext,
  type SessionContextOptions,
} from './session-context.js';
import { storageFailure } from './storage-failure.js';
import { WriteReceipts } from './write-receipts.js';
import type { WriteResult, WriteStatus } from './write-result.js';

/** Everything a caller can change about a memory; equal fingerprints mean a re-ingest is a no-op. */
function fingerprint(m: NormalizedMemory, ts: number): string {
  return createHash('sha256')
    .update(
      JSON.stringify([
        m.contentHash,
        m.session,
        m.agent,
        ts,
        m.tags,
        m.meta,
        m.importance,
        m.supersedes,
        // Only when stated, so memories without one keep the fingerprints they were stored with.
        ...(m.confidence !== null ? [{ confidence: m.confidence }] : []),
        ...(m.validFrom !== null || m.validTo !== null ? [{ valid: [m.validFrom, m.validTo] }] : []),
        // Only when present, so memories without fields keep the fingerprints they were stored with.
        ...(Object.keys(m.fields).length > 0 ? [m.fields] : []),
      ]),
    )
    .digest('hex')
    .slice(0, 32);
}

/** A memory another one hides (it superseded it, or consolidation merged it into it), as a delete sees it. */
export interface HiddenMemory {
  id: string;
  kind: string;
  /** `meta.slot` of a fact. */
  slot: string | null;
  ts: number;
  accessCount: number;
}

/**
 * What a delete does with the memories its memory hides. They are given back (the newest version left
 * answers), or, when the deleted memory was itself hidden behind a newer one, hidden behind that one
 * instead (deleting v2 of v1 → v2 → v3 must not bring v1 back beside v3). With `takes`, the hidden ones it
 * accepts, and what those hide in turn, are deleted with it (a pruning policy: the older versions and
 * copies it covers and does not protect); the rest are given back.
 */
export type TakesHidden = (m: HiddenMemory) => boolean;

/**
 * Writes batches of memories in one transaction each: all of a batch is durable when the call returns, or
 * none of it is. Re-writing an id updates it in place; a write that changes nothing writes nothing.
 * `change_seq` moves only when what a memory says changes, because that is what needs re-embedding.
 */
export class MemoryWriter {
  private readonly select: Database.Statement<
    [string, string],
    {
      key: number;
      ts: number;
      session: string | null;
      content_hash: string;
      fingerprint: string;
      deleted_at: number | null;
      context: string;
    }
  >;
  private readonly context: SessionContext;
  private readonly routes: RouteWriter;
  /** New rows' lexical index entries, written at the end of their batch. */
  private readonly lexical: PendingLexicalIndex;
  private readonly deleteOne: Database.Transaction<
    (namespace: string, id: string, now: number, takes: TakesHidden | null) => string[]
  >;
  private readonly deleteBatch: Database.Transaction<
    (namespace: string, ids: readonly string[], now: number, takes: TakesHidden | null) => string[]
  >;
  /** The memories a memory hides, oldest write first. */
  private readonly hiddenByStmt: Database.Statement;
  private readonly insert: Database.Statement;
  private readonly updateContent: Database.Statement;
  private readonly updateMeta: Database.Statement;
  private readonly supersede: Database.Statement;
  /** Consolidation merges a write undoes: see `dissolveMerges`. */
  private readonly mergedAway: Database.Statement;
  private readonly restoreMerged: Database.Statement;
  private readonly absorbedInto: Database.Statement;
  private readonly forgetMerge: Database.Statement;
  private readonly unhide: Database.Statement;
  private readonly idOf: Database.Statement;
  private readonly nextSeq: Database.Statement<[], { seq: number; meta: number }>;
  private readonly receipts: WriteReceipts;
  private readonly writeBatch: Database.Transaction<
    (batch: readonly NormalizedMemory[], now: number, receipt: string | undefined) => WriteResult[]
  >;

  constructor(db: Database.Database, context: SessionContextOptions = DEFAULT_SESSION_CONTEXT_OPTIONS) {
    this.lexical = new PendingLexicalIndex(db);
    this.context = new SessionContext(db, this.lexical, context);
    this.routes = new RouteWriter(db, this.lexical);
    this.select = db.prepare(
      'SELECT key, ts, session, content_hash, fingerprint, deleted_at, context FROM memories WHERE namespace = ? AND id = ?',
    );
    // One subquery per max: with two aggregates in one SELECT, SQLite scans the table instead of reading
    // each index's last entry (27 ms per batch at 100k memories).
    this.nextSeq = db.prepare(
      `SELECT coalesce((SELECT max(change_seq) FROM memories), 0) AS seq,
              coalesce((SELECT max(meta_seq) FROM memories), 0) AS meta`,
    );
    this.insert = db.prepare(`
      INSERT INTO memories (namespace, id, kind, title, text, parts, scope, session, agent, ts, tags, meta,
        importance, confidence, valid_from, valid_to, content_hash, fingerprint, created_at, updated_at,
        change_seq, meta_seq, context)
      VALUES (@namespace, @id, @kind, @title, @text, @parts, @scope, @session, @agent, @ts, @tags, @meta,
        @importance, @confidence, @validFrom, @validTo, @contentHash, @fingerprint, @now, @now, @seq,
        @metaSeq, @context)`);
    this.updateContent = db.prepare(`
      UPDATE memories SET kind = @kind, title = @title, text = @text, parts = @parts, session = @session,
        agent = @agent, ts = @ts, tags = @tags, meta = @meta, importance = @importance, confidence = @confidence,
        valid_from = @validFrom, valid_to = @validTo,
        content_hash = @contentHash, fingerprint = @fingerprint, updated_at = @now, change_seq = @seq,
        deleted_at = NULL, scope = @scope, meta_seq = @metaSeq, context = @context
      WHERE key = @key`);
    this.updateMeta = db.prepare(`
      UPDATE memories SET session = @session, agent = @agent, ts = @ts, tags = @tags, meta = @meta,
        importance = @importance, confidence = @confidence, valid_from = @validFrom, valid_to = @validTo,
        fingerprint = @fingerprint, updated_at = @now,
        deleted_at = NULL,
        scope = @scope, meta_seq = @metaSeq, context = @context
      WHERE key = @key`);
    this.supersede = db.prepare(
      `UPDATE memories SET superseded_by = ?, meta_seq = ?
       WHERE namespace = ? AND id = ? AND id <> ? AND superseded_by IS NULL`,
    );
    // A merged memory's row names its absorber in both places: `superseded_by` and an active consolidations
    // row. A restore only touches rows the merge still owns (superseded_by = the absorber's id).
    this.mergedAway = db.prepare(
      `SELECT c.key, b.id AS byId FROM consolidations c JOIN memories b ON b.key = c.by_key
       WHERE c.key = ? AND c.undone_at IS NULL`,
    );
    this.restoreMerged = db.prepare(
      'UPDATE memories SET superseded_by = NULL, meta_seq = ? WHERE key = ? AND superseded_by = ?',
    );
    this.absorbedInto = db
      .prepare('SELECT key FROM consolidations WHERE by_key = ? AND undone_at IS NULL')
      .pluck();
    this.forgetMerge = db.prepare('DELETE FROM consolidations WHERE key = ?');
    // Only from a dead id: a replacement still live (a file re-run writes it again) keeps it hidden, so
    // writing one file twice leaves what the first run left.
    this.unhide = db.prepare(
      `UPDATE memories SET superseded_by = NULL, meta_seq = ? WHERE key = ? AND superseded_by IS NOT NULL
         AND NOT EXISTS (SELECT 1 FROM memories s WHERE s.namespace = memories.namespace
                         AND s.id = memories.superseded_by AND s.deleted_at IS NULL)`,
    );
    this.idOf = db.prepare('SELECT id FROM memories WHERE key = ?').pluck();
    this.receipts = new WriteReceipts(db);
    this.writeBatch = db.transaction(
      (batch: readonly NormalizedMemory[], now: number, receipt: string | undefined) => {
        const done = receipt === undefined ? null : this.alreadyWritten(batch, receipt);
        if (done) return done;
        // Sequence numbers are taken inside the write transaction, so two processes writing one file
        // still get distinct, increasing numbers.
        let { seq, meta } = this.nextSeq.get()!;
        const results = this.lexical.during(() =>
          batch.map((m) =>
            this.writeOne(
              m,
              now,
              () => ++seq,
              () => ++meta,
            ),
          ),
        );
        if (receipt !== undefined)
          this.receipts.record(
            receipt,
            results.map((r) => r.status),
            now,
          );
        return results;
      },
    );
    const tombstone = db.prepare('UPDATE memories SET deleted_at = ?, meta_seq = ? WHERE key = ?');
    // Per space, so each delete probes the (space, key) index rather than scanning every vector.
    const dropVectors = db.prepare(
      'DELETE FROM embeddings WHERE space IN (SELECT id FROM embedding_spaces) AND key = ?',
    );
    const live = db.prepare(
      'SELECT key, ts, session, superseded_by AS supersededBy FROM memories WHERE namespace = ? AND id = ? AND deleted_at IS NULL',
    );
    type LiveRow = { key: number; ts: number; session: string | null; supersededBy: string | null };
    // What a memory hides: what it superseded and what the consolidation job merged into it (both name it
    // in superseded_by; migration 29's partial index finds them).
    this.hiddenByStmt = db.prepare(
      `SELECT key, id, kind, json_extract(meta, '$.slot') AS slot, ts, access_count AS accessCount
       FROM memories WHERE namespace = ? AND superseded_by = ? AND deleted_at IS NULL ORDER BY key`,
    );
    const repoint = db.prepare(
      'UPDATE memories SET superseded_by = ?, meta_seq = ? WHERE key = ? AND superseded_by = ?',
    );
    const tombstoneOne = (namespace: string, id: string, row: LiveRow, now: number) => {
      let { seq, meta } = this.nextSeq.get()!;
      tombstone.run(now, ++meta, row.key);
      dropVectors.run(row.key);
      this.routes.drop(row.key);
      // The copies the consolidation job merged into it come back, their records forgotten: duplicates of
      // a memory that no longer answers, which the job merges again where they belong (re-pointed instead,
      // a merge became a supersession no undo could reach).
      this.dissolveMerges(row.key, true, () => ++meta);
      // What it superseded comes back too (a memory named as the replacement of others, once gone, left
      // them hidden behind a dead id that no route could clear); or, when a newer version hid it too,
      // stays hidden behind that one.
      for (const h of this.hiddenBy(namespace, id))
        if (row.supersededBy !== null) repoint.run(row.supersededBy, ++meta, h.key, id);
        else this.restoreMerged.run(++meta, h.key, id);
      this.context.refreshNeighbours(
        { ...row, namespace },
        () => ++seq,
        () => ++meta,
      );
    };
    this.deleteOne = db.transaction(
      (namespace: string, id: string, now: number, takes: TakesHidden | null) => {
        const row = live.get(namespace, id) as LiveRow | undefined;
        if (!row) return [];
        const deleted: string[] = [];
        // What it takes with it, each deleted while what hid it is still there: what those hide and it
        // does not take moves up the chain, and comes back with the last delete.
        for (const h of takes ? this.takenWith(namespace, id, takes) : []) {
          const r = live.get(namespace, h) as LiveRow | undefined;
          if (!r) continue;
          tombstoneOne(namespace, h, r, now);
          deleted.push(h);
        }
        tombstoneOne(namespace, id, row, now);
        deleted.push(id);
        return deleted;
      },
    );
    // One transaction for many (a pruning pass): each delete inside it is a savepoint.
    this.deleteBatch = db.transaction(
      (namespace: string, ids: readonly string[], now: number, takes: TakesHidden | null) =>
        ids.flatMap((id) => this.deleteOne(namespace, id, now, takes)),
    );
  }

  /** The live memories `id` hides (see TakesHidden), oldest write first. */
  hiddenBy(namespace: string, id: string): Array<HiddenMemory & { key: number }> {
    return this.hiddenByStmt.all(namespace, id) as Array<HiddenMemory & { key: number }>;
  }

  /**
   * What deleting `id` with `takes` deletes besides it, in the order it goes: the hidden memories `takes`
   * accepts and, below each, what they hide in turn, found breadth first (a chain of thousands of versions
   * is a loop, not a recursion) and listed deepest first.
   */
  takenWith(namespace: string, id: string, takes: TakesHidden): string[] {
    const order = [id];
    const seen = new Set(order);
    for (let i = 0; i < order.length; i++)
      for (const h of this.hiddenBy(namespace, order[i]!))
        if (!seen.has(h.id) && takes(h)) {
          seen.add(h.id);
          order.push(h.id);
        }
    return order.slice(1).reverse();
  }

  /**
   * Deletes several memories of one namespace in one transaction; returns the ids deleted, each after the
   * ones it took with it (see TakesHidden).
   */
  deleteMany(
    namespace: string,
    ids: readonly string[],
    now = Date.now(),
    takes: TakesHidden | null = null,
  ): string[] {
    try {
      return this.deleteBatch.immediate(namespace, ids, now, takes);
    } catch (err) {
      throw storageFailure(err);
    }
  }

  /**
   * With a `receipt` (a queued job's name for this batch), a second write under the same name writes
   * nothing and answers what the first did (see WriteReceipts).
   */
  write(batch: readonly NormalizedMemory[], now = Date.now(), receipt?: string): WriteResult[] {
    if (batch.length === 0) return [];
    try {
      return this.writeBatch.immediate(batch, now, receipt);
    } catch (err) {
      // The transaction rolled back: nothing of the batch is stored. Say why in Cairn's terms.
      throw storageFailure(err);
    }
  }

  /**
   * Tombstones a memory and drops its vectors; the memories beside it in its session stop carrying its
   * words as context, and the ones the consolidation job merged into it are given back. False when there
   * is no live memory with that id.
   */
  delete(namespace: string, id: string, now = Date.now()): boolean {
    try {
      return this.deleteOne.immediate(namespace, id, now, null).length > 0;
    } catch (err) {
      throw storageFailure(err);
    }
  }

  /**
   * A write to a memory the consolidation job merged (it was rewritten: the caller cares about it) brings it
   * back, and a changed text of a memory that absorbed others gives them back too: they were duplicates of
   * words it no longer says. The merges are forgotten, not undone: the job may merge them again once they
   * are written again (it looks only at what was written since its last run). With `keepHidden`, the merge of `key` is forgotten and the memory stays hidden:
   * the caller's supersede takes over.
   */
  private dissolveMerges(
    key: number,
    textChanged: boolean,
    takeMetaSeq: () => number,
    keepHidden = false,
  ): void {
    const own = this.mergedAway.get(key) as { key: number; byId: string } | undefined;
    if (own) {
      // A supersede replaces the merge: clear the job's superseded_by so the caller's can be set.
      this.restoreMerged.run(takeMetaSeq(), key, own.byId);
      this.forgetMerge.run(key);
    }
    if (keepHidden || !textChanged) return;
    const byId = this.idOf.get(key) as string;
    for (const k of this.absorbedInto.all(key) as number[]) {
      this.restoreMerged.run(takeMetaSeq(), k, byId);
      this.forgetMerge.run(k);
    }
  }

  /** The results of a batch written before under `receipt`, or null when it was not (or is not this batch). */
  private alreadyWritten(batch: readonly NormalizedMemory[], receipt: string): WriteResult[] | null {
    const statuses = this.receipts.find(receipt);
    if (!statuses || statuses.length !== batch.length) return null;
    const results: WriteResult[] = [];
    for (const [i, m] of batch.entries()) {
      const row = this.select.get(m.namespace, m.id);
      if (!row) return null;
      results.push({ id: m.id, namespace: m.namespace, status: statuses[i]!, key: row.key });
    }
    return results;
  }

  private writeOne(
    m: NormalizedMemory,
    now: number,
    takeSeq: () => number,
    takeMetaSeq: () => number,
  ): WriteResult {
    const existing = this.select.get(m.namespace, m.id);
    // A memory re-sent without a ts keeps the time it was first stored, so re-running a file is a no-op.
    // A deleted one written again is a new memory, of now: it kept the dead memory's date.
    const ts = !m.tsGiven && existing && existing.deleted_at === null ? existing.ts : m.ts;
    const fp = fingerprint(m, ts);
    if (existing && existing.fingerprint === fp && existing.deleted_at === null) {
      // Still re-assert supersession: it is idempotent, and a re-run must restore what the file says.
      for (const old of m.supersedes) this.supersede.run(m.id, takeMetaSeq(), m.namespace, old, m.id);
      return { id: m.id, namespace: m.namespace, status: 'unchanged', key: existing.key };
    }
    const row = {
      ...m,
      ts,
      parts: codeParts(`${m.title ?? ''} ${m.text}`),
      scope: scopeText({ ...m, ts, slot: typeof m.meta.slot === 'string' ? m.meta.slot : null }),
      tags: JSON.stringify(m.tags),
      meta: JSON.stringify(m.meta),
      fingerprint: fp,
      now,
    };
    let status: WriteStatus;
    let key: number;
    if (!existing) {
      // A new row's key is above every other, so among memories of the same ts it comes last.
      const context = this.context.contextFor({ ...m, ts, key: Number.MAX_SAFE_INTEGER });
      key = Number(
        this.insert.run({ ...row, context, seq: takeSeq(), metaSeq: takeMetaSeq() }).lastInsertRowid,
      );
      this.lexical.memoryInserted(key, {
        title: m.title,
        text: m.text,
        parts: row.parts,
        scope: row.scope,
        context,
      });
      this.routes.write(key, m.namespace, m.fields);
      status = 'stored';
    } else {
      key = existing.key;
      // A deleted memory written again is a new memory: not hidden behind whatever superseded it before
      // its delete (it stayed invisible, named as replaced by a memory that may be gone too).
      if (existing.deleted_at !== null) this.unhide.run(takeMetaSeq(), key);
      // Its update's trigger takes its words out of the index: they must be in it (an insert earlier in
      // this batch).
      this.lexical.settleMemory(key);
      const context = this.context.contextFor({ ...m, ts, key });
      const fieldsChanged = this.routes.write(key, m.namespace, m.fields);
      // New words to match, its own, its context's or its fields', take a new change_seq: caches of scored
      // terms re-score it, and a writer in another process sees by it that there is something to embed
      // (the embed stage finds its unchanged text's vector by content hash).
      if (
        existing.content_hash !== m.contentHash ||
        existing.deleted_at !== null ||
        existing.context !== context ||
        fieldsChanged
      ) {
        this.updateContent.run({ ...row, context, key, seq: takeSeq(), metaSeq: takeMetaSeq() });
      } else {
        this.updateMeta.run({ ...row, context, key, metaSeq: takeMetaSeq() });
      }
      status = 'updated';
      // The memories beside it where it was are no longer beside it (moved), or are beside new words.
      this.context.refreshNeighbours({ ...existing, namespace: m.namespace }, takeSeq, takeMetaSeq);
    }
    // The memories now beside it in its session have it as a neighbour.
    this.context.refreshNeighbours({ ...m, ts, key }, takeSeq, takeMetaSeq);
    if (existing) this.dissolveMerges(key, existing.content_hash !== m.contentHash, takeMetaSeq);
    for (const old of m.supersedes) {
      // The caller's word wins over the consolidation job's: an explicit supersede of a merged memory
      // replaces the merge (which an undo could otherwise reverse).
      const merged = this.select.get(m.namespace, old);
      if (merged && merged.key !== key) this.dissolveMerges(merged.key, false, takeMetaSeq, true);
      this.supersede.run(m.id, takeMetaSeq(), m.namespace, old, m.id);
    }
    return { id: m.id, namespace: m.namespace, status, key };
  }
}
