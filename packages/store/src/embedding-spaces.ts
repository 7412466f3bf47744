import { CairnError, type EmbeddingSpace } from '@cairn/core';
import type Database from 'better-sqlite3';
import { StatementCache } from './statement-cache.js';
import type { VectorStorage } from './vector-blob.js';

/** Activation refuses a space in which more than this share of memories failed to embed (unless forced). */
export const MAX_FAILED_SHARE_TO_ACTIVATE = 0.01;

export interface SpaceInfo extends EmbeddingSpace {
  active: boolean;
  cursor: number;
  createdAt: number;
  /** The embedder spec that fills this space (`hash`, `ollama:nomic-embed-text`, …), when known. */
  embedder: string | null;
  /** `building` while a reindex fills it side by side; `ready` once it may serve queries. */
  state: 'building' | 'ready';
  /** A building space the writer activates as soon as it is complete and its vector index is saved. */
  activateWhenReady: boolean;
  /**
   * Until when (epoch ms) an inactive space keeps receiving vectors of new writes: the space a reindex
   * replaced, for its grace period, so switching back is instant. Null: not kept current.
   */
  currentUntil: number | null;
  /** How its vectors are kept in SQLite (see VectorStorage). */
  storage: VectorStorage;
}

export interface SpaceProgress {
  space: string;
  /** Live memories (what a complete space has a vector for). */
  total: number;
  /** Live memories with a current vector in the space. */
  embedded: number;
  /** Live memories the embedder refused. */
  failed: number;
}

/**
 * The embedding spaces of a data folder (`embedding_spaces`): which model fills each, which one queries use,
 * which a reindex is building, and which a switch left current for its grace period. The switch itself is
 * one transaction, so every process reading the active space sees the old one or the new one, never two.
 * The vectors themselves are EmbeddingStore's.
 */
export class EmbeddingSpaces {
  private readonly statements: StatementCache;

  constructor(private readonly db: Database.Database) {
    this.statements = new StatementCache(db);
  }

  /**
   * Registers a space (idempotent). The first space registered becomes active and ready; a later one is
   * registered `building` (a reindex fills it) unless `state` says otherwise.
   */
  ensureSpace(
    space: EmbeddingSpace,
    opts: { embedder?: string; state?: 'building' | 'ready'; storage?: VectorStorage } = {},
  ): SpaceInfo {
    // Most opens find it as it is, and take no write lock for that (one would wait behind a long write).
    const existing = this.getSpace(space.id);
    if (existing && existing.dimensions === space.dimensions && (!opts.embedder || existing.embedder))
      return existing;
    // Immediate: processes opening a new folder together (hooks finishing at once) each register the space;
    // a read-then-insert outside one write transaction let two of them insert it (a UNIQUE failure).
    return this.db.transaction(() => this.registerSpace(space, opts)).immediate();
  }

  private registerSpace(
    space: EmbeddingSpace,
    opts: { embedder?: string; state?: 'building' | 'ready'; storage?: VectorStorage },
  ): SpaceInfo {
    const existing = this.getSpace(space.id);
    if (existing) {
      if (existing.dimensions !== space.dimensions) {
        throw new CairnError(
          'DIMENSION_MISMATCH',
          `embedding space ${space.id} is stored with ${existing.dimensions} dimensions, not ${space.dimensions}`,
        );
      }
      if (opts.embedder && !existing.embedder)
        this.db.prepare('UPDATE embedding_spaces SET embedder = ? WHERE id = ?').run(opts.embedder, space.id);
      return this.getSpace(space.id)!;
    }
    const anyActive = this.db.prepare('SELECT 1 FROM embedding_spaces WHERE active = 1').get();
    this.db
      .prepare(
        'INSERT INTO embedding_spaces (id, model_id, dimensions, created_at, active, embedder, state, storage) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
      )
      .run(
        space.id,
        space.modelId,
        space.dimensions,
        Date.now(),
        anyActive ? 0 : 1,
        opts.embedder ?? null,
        anyActive ? (opts.state ?? 'building') : 'ready',
        opts.storage ?? 'f32',
      );
    return this.getSpace(space.id)!;
  }

  /**
   * The active space; when there is none, `space` registered as it. The look and the insert are one
   * transaction: processes opening a new folder together, each configured with another embedder, agree on
   * the first one's, where each registering its own made the later ones inactive spaces to build, which a
   * writer then reindexed the folder into unasked.
   */
  ensureActiveSpace(
    space: EmbeddingSpace,
    opts: { embedder?: string; storage?: VectorStorage } = {},
  ): SpaceInfo {
    return this.db.transaction(() => this.activeSpace() ?? this.registerSpace(space, opts)).immediate();
  }

  /** How `spaceId` keeps its vectors (f32 for a space not recorded: what every space was before). */
  storageOf(spaceId: string): VectorStorage {
    const s = this.statements.get('SELECT storage FROM embedding_spaces WHERE id = ?').pluck().get(spaceId);
    return s === 'i8' ? 'i8' : 'f32';
  }

  /**
   * Asks the data folder's writer to fill an inactive space (again) and, with `activate`, to activate it
   * once complete with its vector index saved. A space left `ready` but inactive (the one a reindex
   * replaced) has fallen behind since: it goes back to `building` and resumes from its cursor.
   */
  requestBuild(spaceId: string, activate: boolean): SpaceInfo {
    const space = this.getSpace(spaceId);
    if (!space) throw new CairnError('NOT_FOUND', `no embedding space ${spaceId}`, { field: 'space' });
    if (space.active) return space;
    this.db
      .prepare("UPDATE embedding_spaces SET state = 'building', activate_when_ready = ? WHERE id = ?")
      .run(activate ? 1 : 0, spaceId);
    return this.getSpace(spaceId)!;
  }

  /** Inactive, ready spaces still kept current at `now` (a replaced space in its grace period). */
  currentSpaces(now = Date.now()): SpaceInfo[] {
    return this.listSpaces().filter(
      (s) => !s.active && s.state === 'ready' && s.currentUntil !== null && s.currentUntil > now,
    );
  }

  /** The spaces a writer is asked to build, oldest request first. */
  buildingSpaces(): SpaceInfo[] {
    return this.listSpaces().filter((s) => s.state === 'building' && !s.active);
  }

  /**
   * How far a space is from having a vector for every live memory. The first two figures are counts kept
   * by triggers (kept-counts.ts): a row per namespace, where counting them joined every vector of the space
   * with its memory (0.3 s at 100k memories, on the thread serving searches). Failures are few: counted.
   */
  progress(spaceId: string): SpaceProgress {
    const r = this.db
      .prepare(
        `SELECT
           (SELECT coalesce(sum(live + superseded), 0) FROM namespace_rows) AS total,
           (SELECT coalesce(sum(current), 0) FROM space_vectors WHERE space = ?) AS embedded,
           (SELECT count(*) FROM embed_failures f JOIN memories m ON m.key = f.key
              WHERE f.space = ? AND m.deleted_at IS NULL) AS failed`,
      )
      .get(spaceId, spaceId) as { total: number; embedded: number; failed: number };
    return { space: spaceId, ...r };
  }

  /**
   * Makes a space the one queries use, in one transaction: every process that reads the active space
   * afterwards sees the new one, and none sees two. Refuses a space with memories still missing a vector
   * or with more than 1% of them failed, unless `force`. `maxMissing` tolerates that many memories still
   * without a vector: the ones written in the last moments of a live reindex, which the activating writer
   * embeds next (a live one never finds zero under a steady stream of writes). `keepPreviousMs` keeps the
   * space this one replaces current for that long (see SpaceInfo.currentUntil).
   */
  activate(
    spaceId: string,
    opts: { force?: boolean; maxMissing?: number; keepPreviousMs?: number; now?: number } = {},
  ): SpaceInfo {
    const force = opts.force ?? false;
    const maxMissing = opts.maxMissing ?? 0;
    const now = opts.now ?? Date.now();
    return this.db
      .transaction(() => {
        const space = this.getSpace(spaceId);
        if (!space) throw new CairnError('NOT_FOUND', `no embedding space ${spaceId}`, { field: 'space' });
        const p = this.progress(spaceId);
        if (!force && p.embedded + p.failed + maxMissing < p.total)
          throw new CairnError(
            'INVALID_INPUT',
            `embedding space ${spaceId} is incomplete (${p.embedded + p.failed} of ${p.total} memories); finish the reindex or force it`,
            { field: 'space', reason: 'incomplete' },
          );
        // A space most memories failed in (an embedder returning the wrong dimensions, say) would quietly
        // turn the vector leg off; a few refusals (over-long texts) are normal.
        if (!force && p.failed > Math.max(0, p.total * MAX_FAILED_SHARE_TO_ACTIVATE))
          throw new CairnError(
            'INVALID_INPUT',
            `embedding space ${spaceId} failed for ${p.failed} of ${p.total} memories (cairn spaces shows why); fix the embedder and reindex, or force it`,
            { field: 'space', reason: 'failures' },
          );
        const previous = this.activeSpace();
        this.db.prepare('UPDATE embedding_spaces SET active = (id = ?)').run(spaceId);
        this.db
          .prepare(
            "UPDATE embedding_spaces SET state = 'ready', activate_when_ready = 0, current_until = NULL WHERE id = ?",
          )
          .run(spaceId);
        if (previous && previous.id !== spaceId && (opts.keepPreviousMs ?? 0) > 0)
          this.db
            .prepare('UPDATE embedding_spaces SET current_until = ? WHERE id = ?')
            .run(now + opts.keepPreviousMs!, previous.id);
        return this.getSpace(spaceId)!;
      })
      .immediate();
  }

  /** Deletes an inactive space and its vectors; returns how many vectors went. */
  drop(spaceId: string): number {
    return this.db
      .transaction(() => {
        const space = this.getSpace(spaceId);
        if (!space) throw new CairnError('NOT_FOUND', `no embedding space ${spaceId}`, { field: 'space' });
        if (space.active)
          throw new CairnError(
            'INVALID_INPUT',
            `embedding space ${spaceId} is active; activate another one first`,
            {
              field: 'space',
            },
          );
        const n = this.db.prepare('DELETE FROM embeddings WHERE space = ?').run(spaceId).changes;
        this.db.prepare('DELETE FROM embed_failures WHERE space = ?').run(spaceId);
        this.db.prepare('DELETE FROM embedding_spaces WHERE id = ?').run(spaceId);
        // Its rows counted down to 0 as its vectors went; a space created later under this id starts clean.
        this.db.prepare('DELETE FROM space_vectors WHERE space = ?').run(spaceId);
        return n;
      })
      .immediate();
  }

  getSpace(id: string): SpaceInfo | undefined {
    const row = this.statements.get('SELECT * FROM embedding_spaces WHERE id = ?').get(id) as
      | SpaceRow
      | undefined;
    return row && spaceOf(row);
  }

  /** Every space, oldest first, in one query (the writer reads them on every refresh). */
  listSpaces(): SpaceInfo[] {
    return (this.db.prepare('SELECT * FROM embedding_spaces ORDER BY created_at').all() as SpaceRow[]).map(
      spaceOf,
    );
  }

  activeSpace(): SpaceInfo | undefined {
    const id = this.db.prepare('SELECT id FROM embedding_spaces WHERE active = 1').pluck().get() as
      | string
      | undefined;
    return id === undefined ? undefined : this.getSpace(id);
  }
}

interface SpaceRow {
  id: string;
  model_id: string;
  dimensions: number;
  active: number;
  cursor: number;
  created_at: number;
  embedder: string | null;
  state: string;
  activate_when_ready: number;
  current_until: number | null;
  storage: string;
}

function spaceOf(row: SpaceRow): SpaceInfo {
  return {
    id: row.id,
    modelId: row.model_id,
    dimensions: row.dimensions,
    active: row.active === 1,
    cursor: row.cursor,
    createdAt: row.created_at,
    embedder: row.embedder,
    state: row.state === 'building' ? 'building' : 'ready',
    activateWhenReady: row.activate_when_ready === 1,
    currentUntil: row.current_until,
    storage: row.storage === 'i8' ? 'i8' : 'f32',
  };
}
