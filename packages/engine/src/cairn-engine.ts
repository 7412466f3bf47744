import { join } from 'node:path';
import { ComputePool } from '@cairn/compute';
import {
  CairnError,
  type Embedder,
  type KeyedMemory,
  type PrunePolicy,
  type SearchFilters,
  type SearchRequest,
  type SearchResponse,
  settleWithin,
} from '@cairn/core';
import { type CaptureResult, EmbeddedPipeline } from '@cairn/pipeline';
import { type HybridRouter, warmTemporalParser } from '@cairn/router';
import type { MemoryStore, MergeRecord, SpaceInfo, TimelineResult } from '@cairn/store';
import type { VectorIndexManager } from '@cairn/vector';
import { AccessTracker } from './access-tracker.js';
import { BackgroundCheckpointer } from './background-checkpointer.js';
import type { ConsolidationReport } from './consolidator.js';
import type { DataFolderLock } from './data-folder-lock.js';
import { namedOpenFailure, openDataFolder } from './data-folder-open.js';
import { EmbedLane } from './embed-lane.js';
import { EngineHygiene } from './engine-hygiene.js';
import {
  BULK_WRITE_MEMORIES,
  checkpointsOf,
  type EngineLog,
  type EngineOptions,
  embedWritesOf,
  isLongLived,
  storeSliceOf,
  termScoringOf,
} from './engine-options.js';
import { FolderRole, type FolderRoleKind } from './folder-role.js';
import { countNamespaces, type EngineStats } from './namespace-stats.js';
import type { PruneReport } from './pruner.js';
import type { ServingSpace } from './serving-space.js';
import type { SpaceBuildStatus } from './space-builder.js';
import { SpaceSupervisor, type SpaceView } from './space-supervisor.js';
import { SpaceSwitch } from './space-switch.js';
import { StoreHealth } from './store-health.js';
import { startTermScoring } from './term-scoring-thread.js';

const noLog: EngineLog = () => {};

/**
 * Distributed: capture enqueues embedding for every space that must stay current, so memories written
 * moments before an activation are already on their way to the workers. Waiting for none to be missing
 * could wait forever under a steady stream of writes; this many in flight are tolerated.
 */
const DISTRIBUTED_IN_FLIGHT = 1_000;

/** A warming engine maps the saved vector graphs of at most this many of its largest namespaces. */
const WARM_GRAPHS = 64;

/**
 * Cairn in one process: a data folder, no Redis. Writes are captured synchronously (durable when
 * `ingest` returns); embedding and vector indexing follow on the same event loop, and HNSW builds run on
 * worker threads. With `pipeline: 'external'` the same engine is the read side of a distributed
 * deployment.
 */
export class CairnEngine {
  readonly store: MemoryStore;
  readonly pipeline: EmbeddedPipeline;
  /** The embedding space searches are served from, and the switch to another. */
  private readonly served: SpaceSwitch;
  private readonly pool: ComputePool | null;
  /** Runs the writer's embed passes with the built-in embedder (see `embedWrites`); null: on this thread. */
  private readonly embedLane: EmbedLane | null;
  private readonly timers: NodeJS.Timeout[] = [];
  private readonly log: EngineLog;
  /** Writer, follower or a distributed reader (see FolderRoleKind), and a follower's take-over. */
  private readonly role: FolderRole;
  /** The embedding spaces: reindex requests from any process, builds run by the writer. */
  private readonly spaces: SpaceSupervisor;
  /** Whether cairn.db can be trusted; every public operation goes through its guard. */
  readonly health: StoreHealth;
  /** Scores the lexical leg's new terms off the serving thread (see `termScoring`); null when inline. */
  private readonly termPool: ComputePool | null = null;
  /** Runs the WAL checkpoints off the serving thread (see `checkpoints`); null while they run inline. */
  private checkpointer: BackgroundCheckpointer | null = null;
  private closed = false;
  /** Consolidation and pruning, on the writer's schedule or when asked (see EngineHygiene). */
  private readonly hygiene: EngineHygiene;
  /** How often searches return each memory, written in the background; null with trackAccess off. */
  private readonly access: AccessTracker | null;

  private constructor(
    readonly dataDir: string,
    private readonly opts: EngineOptions,
    store: MemoryStore,
    embedder: Embedder | null,
    space: SpaceInfo | null,
    lock: DataFolderLock | null = null,
    /** Set when this engine opened as a follower because another process writes its folder. */
    followerBecause: string | null = null,
  ) {
    this.role = new FolderRole(dataDir, {
      external: opts.pipeline === 'external',
      lock,
      followerBecause,
      embedsOthers: isLongLived(opts),
    });
    this.log = opts.log ?? noLog;
    this.store = store;
    this.health = new StoreHealth(join(dataDir, 'cairn.db'), this.log);
    const refreshEvery = opts.refreshIntervalMs ?? 1_000;
    // Starts no thread until a task runs: the steps below that read the file (a damaged one throws there)
    // must leave nothing running that would keep a process alive after the failed open.
    this.pool = embedder && (opts.useWorkerThreads ?? true) ? new ComputePool() : null;
    this.embedLane = embedder && embedWritesOf(opts) === 'worker' ? new EmbedLane() : null;
    // chrono's first two parses cost 0.15–0.4 s (see warmTemporalParser). A long-lived engine pays them
    // while it opens, before anyone can search it: paid a turn after opening, they landed in a server's
    // first searches, or in the first search of an engine searched as soon as it opened.
    if (isLongLived(opts)) warmTemporalParser();
    this.served = new SpaceSwitch(
      { dataDir, store, pool: this.pool, opts, log: this.log },
      this.embedLane,
      { isWriter: () => !this.external, closed: () => this.closed, pipeline: () => this.pipeline },
      embedder,
      space,
    );
    this.spaces = new SpaceSupervisor({
      store,
      dataDir,
      pool: this.pool,
      opts,
      log: this.log,
      health: this.health,
      builds: opts.embedder === undefined,
      onActivated: (s, e, vectors, settled) => this.served.adopt(s, e, vectors, settled),
    });
    this.pipeline = new EmbeddedPipeline(
      this.store,
      this.store.embeddings,
      {
        // A pass in flight across a space switch stored its vectors in the old space: not the index served now.
        apply: (entries, space) => {
          if (space.id !== this.serving.space?.id) return;
          // A pass on the embed lane stored them on its own connection, and they are applied turns later: a
          // memory deleted meanwhile had no vector in the index to drop yet, and would keep this one.
          const current = this.embedLane ? this.store.embeddings.stillStored(space.id, entries) : entries;
          this.serving.vectors?.apply(current);
        },
      },
      this.served.passEmbedder(embedder, space),
      space,
      {
        embedBatchSize: opts.embedBatchSize,
        storeSlice: storeSliceOf(opts),
        routes: this.store.routeEmbeddings,
        ...(this.embedLane && {
          offThreadPass: this.embedLane.passes(store.embeddings.offThreadWriterPath()),
        }),
      },
    );
    // Threads start once nothing above can throw: started first, a damaged file's failed open left them
    // running, and `cairn serve` printed its error and never exited.
    if (checkpointsOf(opts) === 'background') this.checkpointInBackground();
    if (termScoringOf(opts) === 'worker') {
      this.termPool = startTermScoring(store, dataDir, this.log, () => this.closed);
    }
    if ((opts.integrityCheck ?? (isLongLived(opts) ? 'background' : 'off')) === 'background')
      void this.health.check();
    if (refreshEvery > 0) {
      this.every(refreshEvery, () => this.refresh());
      // A long-lived process: load the key catalog without stalling the first searches.
      // Started on the next turn: its first page reads run synchronously, and damage met there (a bad
      // page) must not fail the open; the integrity check names it and every operation refuses.
      Promise.resolve()
        .then(() => this.store.warmCatalog())
        .catch((err: Error) => {
          this.log('warn', 'key catalog load failed; filters are answered from SQLite', {
            error: err.message,
          });
        });
    }
    this.access =
      (opts.trackAccess ?? true)
        ? new AccessTracker(store, (err) =>
            this.log('warn', 'access counts not saved; the next window tries again', { error: err.message }),
          )
        : null;
    this.hygiene = new EngineHygiene(
      {
        store,
        health: this.health,
        log: this.log,
        vectors: () => this.serving.vectors,
        space: () => this.serving.space,
        isWriter: () => this.role.kind === 'writer',
        closed: () => this.closed,
        drained: () => this.pipeline.drain(),
        // The writer's lane stores a pass's vectors before this thread adds them; another process's
        // vectors reach this one's index at its next catch-up.
        indexed: () => (this.external ? this.serving.vectors?.refresh() : this.pipeline.applied()),
        flushAccess: () => this.access?.flush(),
        forgetDeletes: () => this.forgetDeletes(),
        every: (ms, fn) => this.every(ms, fn),
      },
      opts,
      embedder !== null,
    );
    const persistEvery = opts.persistIntervalMs ?? 30_000;
    if (persistEvery > 0 && embedder) this.every(persistEvery, () => void this.maintainIndex());
    if (!this.external) {
      // Memories stored by an earlier process that died before embedding them are picked up now.
      this.pipeline.kick();
    }
  }

  static async open(options: EngineOptions): Promise<CairnEngine> {
    const { opts, store, embedder, space, lock, followerBecause } = await openDataFolder(options);
    try {
      return new CairnEngine(opts.dataDir, opts, store, embedder, space, lock, followerBecause);
    } catch (err) {
      store.close();
      lock?.release();
      throw namedOpenFailure(opts.dataDir, err);
    }
  }

  /** What searches are served from now (a switch replaces it as a whole). */
  private get serving(): ServingSpace {
    return this.served.current;
  }

  get embedder(): Embedder | null {
    return this.serving.embedder;
  }
  get space(): SpaceInfo | null {
    return this.serving.space;
  }
  get vectors(): VectorIndexManager | null {
    return this.serving.vectors;
  }
  get router(): HybridRouter {
    return this.serving.router;
  }
  /** True unless this process holds the writer role (it neither embeds nor writes index files). */
  private get external(): boolean {
    return this.role.external;
  }

  /** This process's part in its data folder (see FolderRoleKind); a follower says who writes. */
  get writerRole(): { role: FolderRoleKind; writer: string | null } {
    return this.role.view;
  }

  /**
   * Validates and stores a batch; every item not `rejected` is durable when this returns. A follower
   * stores too, and the writer embeds and indexes what it stored (within a refresh interval). With
   * `embed: false` the writer only stores as well (a bulk load that wants lexical search now and vectors
   * later): the backlog is embedded by its next pass, which the next open or embedding ingest starts.
   */
  ingest(inputs: readonly unknown[], opts: { embed?: boolean } = {}): CaptureResult {
    if (this.role.kind === 'external')
      throw new CairnError(
        'WRITER_ELSEWHERE',
        'this engine reads a distributed deployment; write through the capture queue (REDIS_URL) instead',
      );
    if (inputs.length >= BULK_WRITE_MEMORIES && checkpointsOf(this.opts) === 'on-bulk-write')
      this.checkpointInBackground();
    if (this.role.kind === 'follower' || opts.embed === false)
      return this.health.guard(() => this.pipeline.capture(inputs));
    const result = this.health.guard(() => this.pipeline.ingest(inputs));
    if (result.counts.stored + result.counts.updated > 0) this.spaces.kick();
    return result;
  }

  /**
   * Waits, at most `timeoutMs`, for what a long-lived engine loads in the background before it answers
   * at full speed: the key catalog (0.8 s at 100k memories, 6–7 s at a million), read on a term thread
   * while searches are answered from SQLite. A server awaits it before it listens: traffic from its first
   * second met the load beside the integrity check and made the first ten seconds' p99 0.4–1.2 s at 50
   * searches/s (bench/RESULTS.md, 2026-11-29). Meanwhile the largest namespaces' saved vector graphs are
   * mapped (see `VectorIndexManager.mapSaved`), and the lexical leg's per-key sums are sized and faulted in
   * (see `LexicalSearch.reserveSums`). Resolves true once the catalog is loaded, false at the
   * deadline or when the load failed (logged where it started); searches are answered either way.
   */
  async whenWarm(timeoutMs = 5_000): Promise<boolean> {
    // Never a rejection: a damaged file (its pages met by the load, even before its first await: hence the
    // async body) is the integrity check's to report, and a server must still start to say so.
    let serving = false;
    const loaded = (async () => {
      this.store.lexical.reserveSums();
      await this.store.warmCatalog();
      serving = this.store.catalogState().serving;
    })();
    const mapped = (async () => {
      const vectors = this.serving.vectors;
      if (!vectors) return;
      const largest = this.store
        .namespaces()
        .sort((a, b) => b.live - a.live)
        .slice(0, WARM_GRAPHS)
        .map((n) => n.namespace);
      await vectors.mapSaved(largest);
    })();
    // The writer's embed lane loads its modules and embedder now, not beside the first writes' searches
    // (a reader or a follower embeds nothing: its lane starts no thread unless it takes the role over).
    const { embedder, space } = this.serving;
    const lane =
      this.embedLane && embedder && space && !this.external ? this.embedLane.warm(embedder, space) : null;
    const [catalog] = await Promise.all([
      settleWithin(loaded, timeoutMs),
      settleWithin(mapped, timeoutMs),
      lane && settleWithin(lane, timeoutMs),
    ]);
    return catalog && serving;
  }

  /**
   * Waits until every stored memory is embedded and indexed, persists the vector indexes and, when this
   * process wrote enough for it to matter, compacts the lexical index (see `MemoryStore.upkeepAfterBulkWrite`).
   * Call it after a bulk ingest; a serving process never needs to.
   * @param opts.scoreCommonWords Also score and save the common words where the write made the saved ones
   * stale (see `MemoryStore.upkeepAfterBulkWrite`), on this thread while the pool builds the vector
   * indexes, so the first searches of the next process load them instead of scoring them. `cairn ingest`
   * asks for it.
   */
  async drain(maxFailures?: number, opts: { scoreCommonWords?: boolean } = {}): Promise<void> {
    if (this.external) return;
    await this.served.retargeting;
    await this.pipeline.drain(maxFailures);
    const vectors = this.serving.vectors;
    // Indexed means a fresh process serves its first query from a saved file: build every namespace's
    // index that is not loaded (a bulk ingest never loads one), then save them all. The builds run on the
    // pool; this thread meanwhile compacts the lexical index and scores the common words.
    const indexing = (async () => {
      if (!vectors) return;
      for (const ns of this.store.namespaces()) await vectors.warm(ns.namespace);
      await vectors.flush();
    })();
    try {
      await this.store.upkeepAfterBulkWrite({ scoreCommonWords: opts.scoreCommonWords ?? false });
    } finally {
      await indexing;
    }
  }

  /**
   * Runs a search; its hits count as accesses (see `countAccesses`) unless `opts.countAccesses` is false:
   * a caller that hands on only some of them (a token budget, a context pack's exclusions) counts those
   * itself, once it knows which.
   */
  async search(req: SearchRequest, opts: { countAccesses?: boolean } = {}): Promise<SearchResponse> {
    const res = await this.health.guard(() => this.serving.router.search(req));
    // A listing is browsing, not recall: only ranked answers count as accesses.
    if ((opts.countAccesses ?? true) && !res.listing)
      this.countAccesses(
        res.namespace,
        res.hits.map((h) => h.id),
      );
    return res;
  }

  /**
   * Counts one access for each of `ids` (the memories a search returned to its caller): `accessCount` and
   * `lastAccessed`, which pruning policies protect by. Summed in memory and written in the background.
   */
  countAccesses(namespace: string, ids: readonly string[]): void {
    if (this.access && ids.length > 0) this.access.record(namespace, ids);
  }

  /**
   * Full records by id (see MemoryStore.get); a fetch counts as an access unless `touch` is false (a
   * command's own look-ups, an import's, are no one's use of a memory).
   */
  get(
    namespace: string,
    ids: readonly string[],
    opts: { touch?: boolean } = {},
  ): { memories: KeyedMemory[]; missing: string[] } {
    return this.health.guard(() => this.store.get(namespace, ids, opts));
  }

  /** Counts one access of each of `memories` (records read with `get`, touch off, then handed on). */
  touch(memories: readonly KeyedMemory[]): void {
    this.health.guard(() => this.store.touch(memories));
  }

  timeline(namespace: string, anchorId: string, before = 5, after = 5): TimelineResult {
    return this.health.guard(() => this.store.timeline(namespace, anchorId, before, after));
  }

  /** The newest live memories of a namespace, optionally of some kinds. */
  recent(namespace: string, opts: { kinds?: readonly string[]; limit: number }): KeyedMemory[] {
    return this.health.guard(() => this.store.recent(namespace, opts));
  }

  /** Every memory of a namespace, superseded and deleted ones included, oldest first (see MemoryStore). */
  exportNamespace(namespace: string): Generator<{ memory: KeyedMemory; deletedAt: number | null }> {
    return this.health.guard(() => this.store.exportNamespace(namespace));
  }

  /** Which memory supersedes which in a namespace. */
  supersessions(namespace: string): Array<{ id: string; supersededBy: string }> {
    return this.health.guard(() => this.store.supersessions(namespace));
  }

  /** The live memories of a namespace passing `filters`, newest first: browsing without a query. */
  list(namespace: string, filters: SearchFilters, limit: number, offset = 0): KeyedMemory[] {
    return this.health.guard(() => this.store.list(namespace, filters, limit, offset));
  }

  delete(namespace: string, id: string): boolean {
    const deleted = this.health.guard(() => this.store.delete(namespace, id));
    if (deleted) this.forgetDeletes();
    return deleted;
  }

  /**
   * Memories deleted since the last look, by this process (at once) or another (`cairn delete` beside a
   * server, a follower: on the next refresh): their vectors leave the served index, so it neither returns
   * nor counts them (see the vector package's `Tombstones`).
   */
  private forgetDeletes(): void {
    this.serving.vectors?.forgetDeletes();
  }

  /**
   * Catches up with other processes: a space activated elsewhere (a finished reindex) is swapped in, and
   * an external engine's vector indexes take in new vectors and graph generations.
   */
  refresh(): void {
    if (this.closed || this.health.status.state === 'damaged') return;
    if (this.role.kind === 'follower') this.tryTakeOver();
    if (this.role.kind === 'writer') {
      this.embedOthersWrites();
      this.spaces.supervise();
    }
    this.forgetDeletes();
    if (this.opts.embedder !== undefined) {
      if (this.external) this.serving.vectors?.refresh();
      return;
    }
    const active = this.store.spaces.activeSpace();
    if (active && active.id !== this.serving.space?.id) {
      try {
        this.served.activate(active);
      } catch (err) {
        this.log('error', 'cannot serve the newly activated embedding space', {
          space: active.id,
          error: (err as Error).message,
        });
      }
    }
    if (this.external) this.serving.vectors?.refresh();
  }

  /**
   * A follower asks for the writer lock on every refresh (see FolderRole.takeOverIfFree). Taking it over,
   * this process serves as the writer: its vector indexes are reopened as the writer's, and everything
   * stored meanwhile is embedded.
   */
  private tryTakeOver(): void {
    const took = this.role.takeOverIfFree();
    if (!took) return;
    this.served.serveAsWriter();
    this.log('info', 'took over the writer role of the data folder', {
      dataDir: this.dataDir,
      was: took.was,
    });
    this.pipeline.kick();
  }

  /** Followers store without embedding: the writer notices their writes by the change sequence. */
  private embedOthersWrites(): void {
    if (!this.role.othersWrote(this.store.changeSeq())) return;
    this.pipeline.kick();
    this.spaces.kick();
  }

  /**
   * Asks for a reindex into the space `spec` builds, beside the active one: the space is registered
   * `building` in cairn.db, and the data folder's writer fills it, builds and saves its vector indexes, and
   * (with `activate`) switches to it. From any process: a follower's request is run by the writer on its
   * next refresh; if the writer dies, the process that takes its role over resumes it.
   */
  async requestReindex(spec: string, opts: { activate: boolean }): Promise<SpaceInfo> {
    if (this.role.kind === 'external')
      throw new CairnError(
        'WRITER_ELSEWHERE',
        'this engine reads a distributed deployment, whose reindex runs through the embed workers: run cairn reindex with REDIS_URL on a machine that has the data folder (it enqueues the memories and builds the new space’s indexes); the API cannot start one',
      );
    const space = await this.spaces.request(spec, opts.activate);
    if (this.role.kind === 'writer') {
      // A reindex writes a vector for every memory: a bulk write (see `checkpoints`).
      if (checkpointsOf(this.opts) === 'on-bulk-write') this.checkpointInBackground();
      this.spaces.supervise();
    }
    return space;
  }

  /** The reindex this process runs, if any (the writer's view; other processes read `progress`). */
  get build(): SpaceBuildStatus | null {
    return this.spaces.build;
  }

  /** Every embedding space with its progress; the build this process runs is attached to its space. */
  listSpaces(): SpaceView[] {
    return this.spaces.list();
  }

  /**
   * Activates a space (refused while it lacks vectors, unless `force`); every process follows within a
   * refresh. Reading a distributed deployment, up to DISTRIBUTED_IN_FLIGHT memories may still be on their
   * way through the queues: the workers embed them into the new space as they come.
   */
  activateSpace(spaceId: string, opts: { force?: boolean } = {}): SpaceInfo {
    const inFlight = this.role.kind === 'external' ? DISTRIBUTED_IN_FLIGHT : 0;
    const space = this.spaces.activate(spaceId, opts.force ?? false, inFlight);
    this.refreshAfterCommit();
    return space;
  }

  /**
   * Builds and saves an inactive space's vector indexes in this process's pool: a distributed reindex
   * does it before activating, so no process serves searches from an index still being built.
   */
  buildSpaceIndexes(spaceId: string): Promise<void> {
    return this.spaces.buildIndexes(spaceId);
  }

  /** Drops an inactive space with its vectors and index files; returns how many vectors went. */
  dropSpace(spaceId: string): number {
    const n = this.spaces.drop(spaceId);
    this.refreshAfterCommit();
    return n;
  }

  /** The change is committed: a refresh that fails now is logged, not reported as the change failing. */
  private refreshAfterCommit(): void {
    try {
      this.refresh();
    } catch (err) {
      this.log('warn', 'refresh after an embedding-space change failed; the next one tries again', {
        error: (err as Error).message,
      });
    }
  }

  /** The periodic index upkeep: audit the loaded indexes against SQLite, then (as the writer) persist them. */
  private async maintainIndex(): Promise<void> {
    const vectors = this.serving.vectors;
    if (!vectors) return;
    try {
      await vectors.audit();
      if (!this.external) await vectors.persistDue();
    } catch (err) {
      this.log('warn', 'vector index upkeep failed; the next round tries again', {
        error: (err as Error).message,
      });
    }
  }

  /** Runs the consolidation job now, after the embedding backlog settles (see EngineHygiene.consolidate). */
  consolidate(req: { dryRun?: boolean; namespace?: string } = {}): Promise<ConsolidationReport> {
    return this.hygiene.consolidate(req);
  }

  /** Undoes consolidation merges in `namespace` (`ids`, or every one); the job never merges them again. */
  undoConsolidation(namespace: string, ids?: readonly string[]): MergeRecord[] {
    return this.hygiene.undoConsolidation(namespace, ids);
  }

  /**
   * The namespace's consolidation merges, newest first: those in force and those undone. A merge a delete or
   * a rewrite dissolved leaves no record (see ConsolidationStore.list).
   */
  consolidations(namespace: string, limit?: number): MergeRecord[] {
    return this.hygiene.consolidations(namespace, limit);
  }

  /** Applies a pruning policy now (see EngineHygiene.prune); `dryRun` lists what it would delete. */
  prune(policy: PrunePolicy, opts: { dryRun?: boolean; now?: number } = {}): Promise<PruneReport> {
    return this.hygiene.prune(policy, opts);
  }

  /** Counts per namespace; `only` limits the (per-namespace) work to the namespaces a caller may see. */
  stats(only?: (namespace: string) => boolean): EngineStats {
    return this.health.guard(() => countNamespaces(this.store, this.serving, this.dataDir, only));
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const t of this.timers) clearInterval(t);
    await this.hygiene.stop();
    this.access?.close();
    await this.spaces.stop();
    await this.health.close();
    await this.pipeline.close();
    await this.embedLane?.close();
    await this.serving.vectors?.close();
    await this.pool?.close();
    this.store.lexical.useTermScorer(null);
    this.store.useCatalogReader(null);
    // The pool's close lets a warm-up word or a catalog chunk under way finish before it stops its threads.
    await this.termPool?.close();
    await this.checkpointer?.stop();
    this.store.close();
    this.role.release();
  }

  /** Moves this connection's WAL checkpoints to a thread of their own (once; see `checkpoints`). */
  private checkpointInBackground(): void {
    if (this.checkpointer || this.closed) return;
    this.checkpointer = new BackgroundCheckpointer(join(this.dataDir, 'cairn.db'), this.store.db, this.log);
    this.checkpointer.start();
  }

  private every(ms: number, fn: () => void): void {
    // A timer's error would be an uncaught exception: the process would die on, say, a damaged cairn.db,
    // which the health guard reports to every caller instead.
    const t = setInterval(() => {
      try {
        fn();
      } catch (err) {
        this.log('warn', 'background upkeep failed; the next round tries again', {
          error: (err as Error).message,
        });
      }
    }, ms);
    t.unref();
    this.timers.push(t);
  }
}
