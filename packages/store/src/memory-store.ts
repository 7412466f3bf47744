import {
  CairnError,
  type KeyedMemory,
  type MemorySource,
  type NormalizedMemory,
  type ScoringFields,
  type SearchFilters,
  withDefaults,
} from '@cairn/core';
import type Database from 'better-sqlite3';
import { LRUCache } from 'lru-cache';
import { type PruningCandidate, rankForPruning, recordAccess, restoreAccess } from './access-counts.js';
import type { CatalogChunkReader } from './catalog-chunk.js';
import { ConsolidationStore } from './consolidation-store.js';
import { compact, type DiskUsage, diskUsage, reclaimFreePages } from './disk-space.js';
import { EmbeddingSpaces } from './embedding-spaces.js';
import { EmbeddingStore } from './embedding-store.js';
import { allowedKeys, liveFilterSql } from './filter-sql.js';
import { KeyCatalog, type KeyCatalogOptions } from './key-catalog.js';
import { type LexicalOptions, LexicalSearch } from './lexical-search.js';
import { LexicalUpkeep, type UpkeepReport } from './lexical-upkeep.js';
import { MEMORY_COLUMNS, type MemoryRow, toMemory } from './memory-row.js';
import { MemoryWriter, type TakesHidden } from './memory-writer.js';
import { openDatabase } from './open-database.js';
import { around, exportNamespace, listMemories } from './record-reads.js';
import { RouteEmbeddings } from './route-embeddings.js';
import { RouteSearch } from './route-search.js';
import { DEFAULT_SESSION_CONTEXT_OPTIONS, type SessionContextOptions } from './session-context.js';
import { StatementCache } from './statement-cache.js';
import { storageFailure } from './storage-failure.js';
import type { WriteResult } from './write-result.js';

export interface MemoryStoreOptions {
  /** Path of the SQLite file. */
  path: string;
  readonly?: boolean;
  lexical?: Partial<LexicalOptions>;
  /** The in-memory catalog of per-key search fields; `false` answers every filter from SQLite. */
  catalog?: Partial<KeyCatalogOptions> | false;
  /** Contextual indexing of conversation turns (which kinds, how much of the predecessor). */
  context?: Partial<SessionContextOptions>;
}

export interface TimelineResult {
  anchor: KeyedMemory;
  /** `session` when the anchor has one, else `namespace`. */
  scope: 'session' | 'namespace';
  before: KeyedMemory[];
  after: KeyedMemory[];
}

export interface NamespaceCounts {
  namespace: string;
  live: number;
  superseded: number;
  deleted: number;
}

/**
 * The canonical store: records, their FTS5 index and their embeddings, in one SQLite file.
 * Implements the router's MemorySource and LexicalLeg contracts.
 */
export class MemoryStore implements MemorySource {
  readonly db: Database.Database;
  readonly lexical: LexicalSearch;
  /** The folder's embedding spaces: which is active, which a reindex builds. */
  readonly spaces: EmbeddingSpaces;
  /** The spaces' vectors. */
  readonly embeddings: EmbeddingStore;
  /** Multi-route recall over memories' named fields (the router's RouteLeg). */
  readonly routes: RouteSearch;
  /** The embed stage's sink for the named fields' vectors. */
  readonly routeEmbeddings: RouteEmbeddings;
  /** The consolidation job's merges of near-duplicates (undoable). */
  readonly consolidations: ConsolidationStore;
  private readonly writer: MemoryWriter | null;
  private readonly statements: StatementCache;
  private readonly catalog: KeyCatalog | null;
  /** Records read for search pages, with the `meta_seq` they were read at. */
  private readonly records = new LRUCache<number, { stamp: number; memory: KeyedMemory }>({ max: 4_096 });
  /** A writer's upkeep of the lexical index, sized to what this process wrote; null when read-only. */
  private readonly upkeep: LexicalUpkeep | null;

  constructor(opts: MemoryStoreOptions) {
    this.db = openDatabase(opts.path, { readonly: opts.readonly ?? false });
    this.statements = new StatementCache(this.db);
    this.catalog = opts.catalog === false ? null : new KeyCatalog(this.statements, opts.catalog);
    this.lexical = new LexicalSearch(this.db, opts.lexical, this.catalog);
    this.spaces = new EmbeddingSpaces(this.db);
    this.embeddings = new EmbeddingStore(this.db, this.spaces);
    this.routes = new RouteSearch(this.db, this.statements, this.catalog);
    this.routeEmbeddings = new RouteEmbeddings(this.db);
    this.consolidations = new ConsolidationStore(this.db);
    this.writer = opts.readonly
      ? null
      : new MemoryWriter(this.db, withDefaults(DEFAULT_SESSION_CONTEXT_OPTIONS, opts.context ?? {}));
    this.upkeep = opts.readonly ? null : new LexicalUpkeep(this.db, this.lexical);
  }

  /**
   * Stores a batch in one transaction; durable (against process crashes) when this returns. With
   * `receipt` (a queued job's name for the batch), writing it again writes nothing and answers what the
   * first write did: a retried job is a no-op.
   */
  write(batch: readonly NormalizedMemory[], opts: { receipt?: string } = {}): WriteResult[] {
    if (!this.writer) throw new CairnError('STORAGE_ERROR', 'the store is open read-only');
    this.lexical.stats.storeChanging();
    const results = this.writer.write(batch, Date.now(), opts.receipt);
    this.upkeep?.recordWrites(results);
    return results;
  }

  /**
   * Full records by id, in the order asked; unknown ids are listed in `missing`. Counts as an access unless
   * `touch` is false (a caller that hands on only some of them counts those with `touch`).
   */
  get(
    namespace: string,
    ids: readonly string[],
    opts: { touch?: boolean } = {},
  ): { memories: KeyedMemory[]; missing: string[] } {
    const found = new Map<string, KeyedMemory>();
    const stmt = this.db.prepare(
      `SELECT ${MEMORY_COLUMNS} FROM memories m WHERE m.namespace = ? AND m.id = ? AND m.deleted_at IS NULL`,
    );
    for (const id of new Set(ids)) {
      const row = stmt.get(namespace, id) as MemoryRow | undefined;
      if (row) found.set(id, toMemory(row));
    }
    if (opts.touch ?? true) this.touch([...found.values()]);
    return {
      memories: ids.filter((id) => found.has(id)).map((id) => found.get(id)!),
      missing: ids.filter((id) => !found.has(id)),
    };
  }

  /**
   * Counts one access of each of `memories`, read by `get` and handed to a caller, at once (a fetch is one
   * request, not a search's background count), and updates the objects to match. Only a writer counts.
   */
  touch(memories: readonly KeyedMemory[]): void {
    if (memories.length === 0 || !this.writer) return;
    // Stamped like every other change, so cached records (see liveByKeys) never show an old count.
    const touch = this.db.prepare(
      'UPDATE memories SET access_count = access_count + 1, last_accessed = ?, meta_seq = ? WHERE key = ?',
    );
    const now = Date.now();
    this.db
      .transaction(() => {
        let stamp = this.db
          .prepare('SELECT coalesce(max(meta_seq), 0) FROM memories')
          .pluck()
          .get() as number;
        for (const m of memories) {
          touch.run(now, ++stamp, m.key);
          m.accessCount += 1;
          m.lastAccessed = now;
        }
      })
      .immediate();
  }

  /**
   * The memories around one memory, in time order: within its session when it has one, else within its
   * namespace. Superseded memories are shown (they are history); deleted ones are not.
   */
  timeline(namespace: string, anchorId: string, before: number, after: number): TimelineResult {
    const anchorRow = this.db
      .prepare(
        `SELECT ${MEMORY_COLUMNS} FROM memories m WHERE m.namespace = ? AND m.id = ? AND m.deleted_at IS NULL`,
      )
      .get(namespace, anchorId) as MemoryRow | undefined;
    if (!anchorRow) {
      throw new CairnError('NOT_FOUND', `no memory with id "${anchorId}" in namespace "${namespace}"`, {
        field: 'anchor',
      });
    }
    const anchor = toMemory(anchorRow);
    const scope = anchor.session === null ? 'namespace' : 'session';
    return { anchor, scope, ...around(this.statements, namespace, anchor, before, after) };
  }

  /**
   * The live memories just before and after a hit in its session, for search neighbour expansion: neither
   * superseded (replaced, or merged by consolidation) nor deleted, as the hits themselves.
   */
  sessionNeighbors(
    namespace: string,
    anchor: { key: number; session: string; ts: number },
    before: number,
    after: number,
  ): { before: KeyedMemory[]; after: KeyedMemory[] } {
    return around(this.statements, namespace, anchor, before, after, true);
  }

  /**
   * The newest live memories of a namespace (optionally of some kinds), newest first: the recent session
   * summaries of a context pack. Walks the (namespace, ts) index backwards.
   */
  recent(namespace: string, opts: { kinds?: readonly string[]; limit: number }): KeyedMemory[] {
    return this.list(namespace, opts.kinds?.length ? { kinds: [...opts.kinds] } : {}, opts.limit);
  }

  /** Browsing without a query, newest first (see listMemories in record-reads.ts). */
  list(namespace: string, filters: SearchFilters, limit: number, offset = 0): KeyedMemory[] {
    return listMemories(this.statements, namespace, filters, limit, offset);
  }

  /** Every memory of a namespace as stored, deleted ones included (see exportNamespace in record-reads.ts). */
  exportNamespace(namespace: string): Generator<{ memory: KeyedMemory; deletedAt: number | null }> {
    return exportNamespace(this.db, namespace);
  }

  consolidatedInto(
    namespace: string,
    keys: readonly number[],
    absorbed = 0,
  ): Map<number, { dupCount: number; absorbed: Array<{ id: string; cosine: number }> }> {
    const out = new Map<number, { dupCount: number; absorbed: Array<{ id: string; cosine: number }> }>();
    const counts = this.consolidations.dupCounts(namespace, keys);
    if (counts.size === 0) return out;
    const lists =
      absorbed > 0 ? this.consolidations.absorbedBy(namespace, [...counts.keys()], absorbed) : null;
    for (const [key, dupCount] of counts) out.set(key, { dupCount, absorbed: lists?.get(key) ?? [] });
    return out;
  }

  /** Dead keys merged by consolidation → the live memory that absorbed them (see ConsolidationStore). */
  absorbersOf(namespace: string, keys: readonly number[]): Map<number, number> {
    const chains = this.consolidations.absorbers(namespace, keys);
    if (chains.size === 0) return chains;
    const live = this.allowedKeys(namespace, [...new Set(chains.values())], {});
    for (const [k, by] of chains) if (!live.has(by)) chains.delete(k);
    return chains;
  }

  /** Which memory supersedes which, within a namespace (the store keeps the newer one's id on the older). */
  supersessions(namespace: string): Array<{ id: string; supersededBy: string }> {
    return this.statements
      .get(
        // Consolidation's merges are not the caller's supersessions: an export leaves them out (an import
        // would make them permanent), and the job merges the copies again after an import.
        `SELECT id, superseded_by AS supersededBy FROM memories m WHERE namespace = ? AND superseded_by IS NOT NULL
           AND NOT EXISTS (SELECT 1 FROM consolidations c WHERE c.key = m.key AND c.undone_at IS NULL)`,
      )
      .all(namespace) as Array<{ id: string; supersededBy: string }>;
  }

  /** The data folder's identity (a random id given when its database was created; see migration 22). */
  folderId(): string {
    return (this.db.prepare('SELECT id FROM folder_identity').get() as { id: string }).id;
  }

  /** The highest change sequence: it moves whenever any process stores or rewrites a memory. */
  changeSeq(): number {
    return (this.statements.get('SELECT max(change_seq) FROM memories').pluck().get() as number | null) ?? 0;
  }

  /**
   * Memories deleted (by any process) with a tombstone in (after, through] of meta_seq, of one namespace
   * when given: an index range. A memory written again since is live, and not among them.
   */
  deletedBetween(
    afterMetaSeq: number,
    throughMetaSeq: number,
    namespace?: string,
  ): Array<{ namespace: string; key: number }> {
    const sql =
      'SELECT namespace, key FROM memories WHERE meta_seq > ? AND meta_seq <= ? AND deleted_at IS NOT NULL';
    return (
      namespace === undefined
        ? this.statements.get(sql).all(afterMetaSeq, throughMetaSeq)
        : this.statements.get(`${sql} AND namespace = ?`).all(afterMetaSeq, throughMetaSeq, namespace)
    ) as Array<{ namespace: string; key: number }>;
  }

  /** The highest meta_seq: every change to a memory, a delete included, takes a new one. */
  metaSeq(): number {
    return (
      (this.statements.get('SELECT max(meta_seq) AS m FROM memories').get() as { m: number | null }).m ?? 0
    );
  }

  /** Tombstones a memory: it leaves search, get and timeline at once; its vector is dropped. */
  delete(namespace: string, id: string): boolean {
    if (!this.writer) throw new CairnError('STORAGE_ERROR', 'the store is open read-only');
    this.lexical.stats.storeChanging();
    return this.writer.delete(namespace, id);
  }

  /**
   * Deletes several memories of one namespace in one transaction; returns the ids deleted. What each hides
   * (what it superseded or absorbed) is given back, or deleted with it where `takes` accepts it (see
   * TakesHidden).
   */
  deleteMany(namespace: string, ids: readonly string[], takes: TakesHidden | null = null): string[] {
    if (!this.writer) throw new CairnError('STORAGE_ERROR', 'the store is open read-only');
    this.lexical.stats.storeChanging();
    return this.writer.deleteMany(namespace, ids, Date.now(), takes);
  }

  /**
   * What deleting `id` with `takes` would delete besides it, in the order it would go (a pruning dry run
   * lists it): see MemoryWriter.takenWith.
   */
  takenWith(namespace: string, id: string, takes: TakesHidden): string[] {
    if (!this.writer) return [];
    return this.writer.takenWith(namespace, id, takes);
  }

  /** See restoreAccess (access-counts.ts): an import's access counts. */
  restoreAccess(
    accesses: ReadonlyArray<{ namespace: string; id: string; count: number; last: number | null }>,
  ): void {
    if (!this.writer) throw new CairnError('STORAGE_ERROR', 'the store is open read-only');
    try {
      restoreAccess(this.db, this.statements, accesses);
    } catch (err) {
      throw storageFailure(err);
    }
  }

  /** See rankForPruning (access-counts.ts). */
  rankForPruning(namespace: string, cover: { kind?: string; slot?: string }): PruningCandidate[] {
    return rankForPruning(this.db, namespace, cover);
  }

  /** Counts accesses by search (see recordAccess in access-counts.ts); true at once when read-only. */
  recordAccess(
    accesses: ReadonlyArray<{ namespace: string; id: string; count: number }>,
    at: number,
  ): boolean {
    if (!this.writer || accesses.length === 0) return true;
    return recordAccess(this.db, this.statements, accesses, at);
  }

  /**
   * Full records of the live memories of `namespace` among `keys` (a search's page). Records are cached
   * with the `meta_seq` they were read at and served while the key catalog says the row is unchanged, so
   * a popular page costs no row reads (rows are wide: text, parts and facets).
   */
  liveByKeys(namespace: string, keys: readonly number[]): Map<number, KeyedMemory> {
    const catalog = this.catalog;
    if (!catalog?.sync()) return this.filterKeys(namespace, keys, {});
    const out = new Map<number, KeyedMemory>();
    const missing: number[] = [];
    const live = catalog.allowedAsOfLastSync(namespace, keys, {});
    for (const key of keys) {
      if (!live.has(key)) continue;
      const hit = this.records.get(key);
      if (hit && hit.stamp === catalog.stampOf(key)) out.set(key, copyMemory(hit.memory));
      else missing.push(key);
    }
    if (missing.length === 0) return out;
    const where = liveFilterSql(namespace, {});
    const rows = this.statements
      .get(
        `SELECT ${MEMORY_COLUMNS}, m.meta_seq AS stamp FROM memories m WHERE m.key IN (SELECT value FROM json_each(?))
           AND ${where.sql}`,
      )
      .all(JSON.stringify(missing), ...where.params) as Array<MemoryRow & { stamp: number }>;
    for (const r of rows) {
      const memory = toMemory(r);
      this.records.set(r.key, { stamp: r.stamp, memory });
      out.set(r.key, copyMemory(memory));
    }
    return out;
  }

  /** Live memories among `keys` that belong to `namespace` and pass `filters`. */
  filterKeys(namespace: string, keys: readonly number[], filters: SearchFilters): Map<number, KeyedMemory> {
    const out = new Map<number, KeyedMemory>();
    if (keys.length === 0) return out;
    const where = liveFilterSql(namespace, filters);
    // Keys travel as one JSON array so the statement's shape does not depend on how many there are.
    const rows = this.statements
      .get(
        `SELECT ${MEMORY_COLUMNS} FROM memories m WHERE m.key IN (SELECT value FROM json_each(?)) AND ${where.sql}`,
      )
      .all(JSON.stringify(keys), ...where.params) as MemoryRow[];
    for (const r of rows) out.set(r.key, toMemory(r));
    return out;
  }

  scoringByKeys(namespace: string, keys: readonly number[]): Map<number, ScoringFields> {
    const held = this.catalog?.scoring(namespace, keys);
    if (held) return held;
    const out = new Map<number, ScoringFields>();
    if (keys.length === 0) return out;
    const where = liveFilterSql(namespace, {});
    const rows = this.statements
      .get(
        `SELECT m.key, m.id, m.ts, m.kind, m.importance, m.confidence, m.session, m.agent FROM memories m
         WHERE m.key IN (SELECT value FROM json_each(?)) AND ${where.sql}`,
      )
      .all(JSON.stringify(keys), ...where.params) as ScoringFields[];
    for (const r of rows) out.set(r.key, r);
    return out;
  }

  /** The subset of `keys` that are live memories of `namespace` passing `filters` (keys only: cheap). */
  allowedKeys(namespace: string, keys: readonly number[], filters: SearchFilters): Set<number> {
    return (
      this.catalog?.allowed(namespace, keys, filters) ??
      allowedKeys(this.statements, namespace, keys, filters)
    );
  }

  /** The estimated share of the namespace's live memories passing `filters`; null when unknown. */
  passRate(namespace: string, filters: SearchFilters): number | null {
    return this.catalog?.passRate(namespace, filters) ?? null;
  }

  /** Keys of live memories in `namespace` passing `filters`, at most `limit`. */
  keysMatching(namespace: string, filters: SearchFilters, limit: number): number[] {
    const where = liveFilterSql(namespace, filters);
    return this.statements
      .get(`SELECT m.key FROM memories m WHERE ${where.sql} LIMIT ?`)
      .pluck()
      .all(...where.params, limit) as number[];
  }

  hasMatching(namespace: string, filters: SearchFilters): boolean {
    const where = liveFilterSql(namespace, filters);
    return (
      this.statements.get(`SELECT 1 FROM memories m WHERE ${where.sql} LIMIT 1`).get(...where.params) !==
      undefined
    );
  }

  countLive(namespace: string): number {
    return this.countMatching(namespace, {});
  }

  countMatching(namespace: string, filters: SearchFilters): number {
    const where = liveFilterSql(namespace, filters);
    return (
      this.db.prepare(`SELECT count(*) AS n FROM memories m WHERE ${where.sql}`).get(...where.params) as {
        n: number;
      }
    ).n;
  }

  /** Every namespace with a memory (deleted ones included), by name: counts kept by triggers (kept-counts.ts). */
  namespaces(): NamespaceCounts[] {
    return this.db
      .prepare(
        'SELECT namespace, live, superseded, deleted FROM namespace_rows WHERE rows > 0 ORDER BY namespace',
      )
      .all() as NamespaceCounts[];
  }

  /** Scores every namespace's common words, or those of `only` (see `LexicalUpkeep.warmCommonWords`). */
  warmCommonWords(only?: readonly string[]): Promise<number> {
    return this.upkeep?.warmCommonWords(only) ?? Promise.resolve(0);
  }

  /** The lexical index's upkeep after a bulk write, sized to it (see `LexicalUpkeep.afterBulkWrite`). */
  upkeepAfterBulkWrite(opts: { scoreCommonWords?: boolean } = {}): Promise<UpkeepReport> {
    return this.upkeep?.afterBulkWrite(opts) ?? Promise.resolve({ merged: false, scored: [], refreshed: [] });
  }

  /** Merges the FTS5 index's segments (see `LexicalUpkeep.compact`). Returns the steps taken. */
  compactLexicalIndex(pagesPerStep?: number): Promise<number> {
    return this.upkeep?.compact(pagesPerStep) ?? Promise.resolve(0);
  }

  /**
   * Loads the in-memory key catalog in the background (a long-lived process calls this once at start);
   * searches are answered from SQLite until it is done. Without it the first search loads it at once.
   */
  warmCatalog(): Promise<void> {
    return this.catalog?.warm() ?? Promise.resolve();
  }

  /**
   * Where a load of the key catalog reads its rows (a worker thread with its own read connection; see
   * KeyCatalog.useChunkReader); null: on this thread.
   */
  useCatalogReader(reader: CatalogChunkReader | null): void {
    this.catalog?.useChunkReader(reader);
  }

  /**
   * Whether the key catalog serves now (loaded and up to date), or is still loading, or is off (turned off
   * by the options, or outgrown: see KeyCatalogOptions.maxKeys); and how many of its rows a reader thread read.
   */
  catalogState(): { state: 'loaded' | 'loading' | 'off'; serving: boolean; rowsFromReader: number } {
    const serving = this.catalog?.sync() ?? false;
    const state = serving ? 'loaded' : !this.catalog || this.catalog.outgrown ? 'off' : 'loading';
    return { state, serving, rowsFromReader: this.catalog?.rowsFromReader ?? 0 };
  }

  /** The file's size and free space (see disk-space.ts). */
  diskUsage(): DiskUsage {
    return diskUsage(this.db);
  }

  /** Gives up to `pages` free pages back to the filesystem (incremental auto-vacuum); returns free bytes left. */
  reclaimFreePages(pages: number): number {
    return reclaimFreePages(this.db, pages);
  }

  /** VACUUM into incremental auto-vacuum: needs the data folder to itself (`cairn compact`). */
  compact(): { before: number; after: number } {
    return compact(this.db);
  }

  close(): void {
    this.catalog?.stop();
    this.routes.clear();
    this.lexical.close();
    if (this.db.open) {
      // Best effort: statistics for the next process. A damaged or full file must not stop the close.
      if (!this.db.readonly)
        try {
          this.db.pragma('optimize');
        } catch {
          // The database is closed below either way.
        }
      this.db.close();
    }
  }
}

/** A copy a caller may change without changing the cached record. */
function copyMemory(m: KeyedMemory): KeyedMemory {
  return { ...m, tags: [...m.tags], meta: { ...m.meta }, fields: { ...m.fields } };
}
