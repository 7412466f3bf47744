import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { CairnError, embeddingSpaceOf } from '@cairn/core';
import { resolveEmbedder } from '@cairn/embed';
import { EmbeddedPipeline } from '@cairn/pipeline';
import type { SpaceInfo, SpaceProgress } from '@cairn/store';
import { VectorIndexManager } from '@cairn/vector';
import {
  buildAndSave,
  buildBatchSize,
  buildPipelineOptions,
  poolEmbedder,
  previousSpaceGraceMs,
  SpaceBuilder,
  type SpaceBuilderDeps,
  type SpaceBuildStatus,
  spaceIndexes,
} from './space-builder.js';
import { embedderOfSpace, specOf } from './space-embedder.js';
import type { StoreHealth } from './store-health.js';

/** Free space in cairn.db worth giving back, and how much to give back per refresh. */
const RECLAIM_ABOVE_BYTES = 4 * 1024 * 1024;
const RECLAIM_STEP_BYTES = 16 * 1024 * 1024;
const RETRY_AFTER_MS = 60_000;

/** One embedding space as `cairn spaces` and `GET /v1/spaces` show it. */
export interface SpaceView extends SpaceInfo {
  progress: SpaceProgress;
  /** The build this process runs for the space; null in other processes, and once it is done. */
  build: SpaceBuildStatus | null;
}

export interface SpaceSupervisorDeps extends SpaceBuilderDeps {
  health: StoreHealth;
  /** False for an engine with a fixed embedder (tests, benchmarks): it builds nothing. */
  builds: boolean;
}

/**
 * The embedding spaces of a data folder, managed from any process: a reindex is a request recorded in
 * cairn.db (see EmbeddingStore.requestBuild), activation and drop are single transactions there. The
 * data folder's writer calls `supervise()` on every refresh and runs the one build the requests ask for
 * (oldest first), so the CLI, the API and a second MCP session all reach the same running writer, and a
 * writer that dies hands its builds to the next one with its role.
 */
export class SpaceSupervisor {
  private builder: SpaceBuilder | null = null;
  /**
   * Pipelines keeping replaced spaces current in their grace period: they embed new writes into the old
   * space's table only. Its index files are not kept; activating it again catches them up from SQLite.
   */
  private readonly keepers = new Map<string, EmbeddedPipeline>();
  /** A stopped build still saving or removing its index files; stop() waits for it. */
  private retiring: Promise<void> = Promise.resolve();
  private stopped = false;
  /**
   * Spaces whose build or keeper could not start, or whose build failed, and when: each is retried after
   * RETRY_AFTER_MS, and the requests behind a failing one are served meanwhile.
   */
  private readonly failedAt = new Map<string, number>();

  constructor(private readonly deps: SpaceSupervisorDeps) {}

  /** The build this process runs, if any. */
  get build(): SpaceBuildStatus | null {
    return this.builder ? { ...this.builder.status } : null;
  }

  /** Every space with its progress, the active one marked. */
  list(): SpaceView[] {
    const { store, health } = this.deps;
    return health.guard(() =>
      store.spaces.listSpaces().map((s) => ({
        ...s,
        progress: store.spaces.progress(s.id),
        build: this.builder?.spaceId === s.id ? { ...this.builder.status } : null,
      })),
    );
  }

  /**
   * Records a reindex into the space `spec` builds, beside the active one; the writer picks it up on its
   * next supervise(). Asking again for a space that is ready but inactive (the one a reindex replaced)
   * resumes it from its cursor. Asking for the active space changes nothing.
   */
  async request(spec: string, activate: boolean): Promise<SpaceInfo> {
    const { store, health } = this.deps;
    const embedder = await resolveEmbedder(spec, { env: this.deps.opts.env });
    return health.guard(() => {
      const s = store.spaces.ensureSpace(embeddingSpaceOf(embedder), {
        embedder: spec,
        state: 'building',
        ...(this.deps.opts.vectorStorage ? { storage: this.deps.opts.vectorStorage } : {}),
      });
      return s.active ? s : store.spaces.requestBuild(s.id, activate);
    });
  }

  /**
   * Activates a space now (refused while it lacks vectors, unless `force`); every process follows. A
   * space kept current (the one a reindex replaced, within its grace period) may lag by the writes in
   * flight: the writer embeds those right after the switch. `inFlight`: how many more any space may lag
   * by (a distributed deployment's queues hold writes no process here can wait out).
   */
  activate(spaceId: string, force: boolean, inFlight = 0): SpaceInfo {
    const { store, health, opts } = this.deps;
    return health.guard(() => {
      const kept = store.spaces.currentSpaces().some((s) => s.id === spaceId);
      return store.spaces.activate(spaceId, {
        force,
        maxMissing: Math.max(inFlight, kept ? buildBatchSize(opts) : 0),
        keepPreviousMs: previousSpaceGraceMs(opts),
      });
    });
  }

  /**
   * Drops an inactive space: its vectors go in one transaction, then its index files. A build of it in
   * the writer stops on the writer's next refresh and removes whatever files it had written since.
   */
  drop(spaceId: string): number {
    const n = this.deps.health.guard(() => this.deps.store.spaces.drop(spaceId));
    rmSync(VectorIndexManager.spaceDir(join(this.deps.dataDir, 'vectors'), spaceId), {
      recursive: true,
      force: true,
    });
    return n;
  }

  /**
   * Builds and saves the vector indexes of an inactive space now, in the pool (a distributed reindex,
   * whose workers filled the space, calls it before the switch: index workers and API nodes then load
   * files instead of serving a rebuild).
   */
  async buildIndexes(spaceId: string): Promise<void> {
    const space = this.deps.health.guard(() => this.deps.store.spaces.getSpace(spaceId));
    if (!space) throw new CairnError('NOT_FOUND', `no embedding space ${spaceId}`, { field: 'space' });
    const vectors = spaceIndexes(this.deps, space);
    try {
      await buildAndSave(vectors, this.deps.store);
    } finally {
      await vectors.close();
    }
  }

  /** New writes landed: the build under way, and the spaces kept current, embed them too. */
  kick(): void {
    this.builder?.kick();
    for (const k of this.keepers.values()) k.kick();
  }

  /**
   * A dropped space left its pages free in cairn.db: give them back to the filesystem, 16 MiB a refresh
   * (a short write transaction each), so the file shrinks online. Needs incremental auto-vacuum: every
   * folder created since it exists, older ones after one `cairn compact`.
   */
  private reclaimDisk(): void {
    const { store, health } = this.deps;
    health.guard(() => {
      const usage = store.diskUsage();
      if (usage.autoVacuum === 'incremental' && usage.freeBytes > RECLAIM_ABOVE_BYTES)
        store.reclaimFreePages(RECLAIM_STEP_BYTES / usage.pageSize);
    });
  }

  /** Starts a keeper for each space in its grace period, and stops those whose period ended. */
  private keepCurrent(): void {
    const { store, health, log } = this.deps;
    const current = health.guard(() => store.spaces.currentSpaces());
    for (const [id, keeper] of this.keepers)
      if (!current.some((s) => s.id === id)) {
        this.keepers.delete(id);
        this.retire(keeper.close());
      }
    for (const space of current) {
      if (this.keepers.has(space.id) || this.failedRecently(space.id)) continue;
      try {
        const spec = specOf(space);
        const keeper = new EmbeddedPipeline(
          store,
          store.embeddings,
          { apply: () => {} },
          poolEmbedder(embedderOfSpace(space, this.deps.opts.env), spec, this.deps.pool),
          space,
          buildPipelineOptions(this.deps),
        );
        this.keepers.set(space.id, keeper);
        keeper.kick();
      } catch (err) {
        this.failedAt.set(space.id, Date.now());
        log('error', 'cannot keep the previous embedding space current; trying again in a minute', {
          space: space.id,
          error: (err as Error).message,
        });
      }
    }
  }

  /**
   * The writer's turn: runs one build at a time, the oldest request first, and stops one whose space was
   * dropped or activated by another process.
   */
  supervise(): void {
    if (this.stopped || !this.deps.builds) return;
    this.keepCurrent();
    this.reclaimDisk();
    const { store, health, log } = this.deps;
    const wanted = health.guard(() => store.spaces.buildingSpaces());
    if (this.builder) {
      const current = this.builder;
      const row = wanted.find((s) => s.id === current.spaceId);
      if (current.status.phase !== 'activated' && !current.failed && row) {
        // Asked to activate since it finished (a second `cairn reindex --activate`): look again now.
        if (row.activateWhenReady && current.status.phase === 'waiting') current.kick();
        return;
      }
      this.builder = null;
      if (current.failed) this.failedAt.set(current.spaceId, Date.now());
      const now = health.guard(() => store.spaces.getSpace(current.spaceId));
      // Activated by another process while built here: serve from these indexes, not a second writer.
      if (now?.active && current.status.phase !== 'activated') current.handOver(now);
      else this.retire(current.stop({ discard: !now }));
    }
    const next = wanted.find((s) => !this.failedRecently(s.id));
    if (!next) return;
    try {
      this.builder = new SpaceBuilder(
        this.deps,
        next,
        embedderOfSpace(next, this.deps.opts.env),
        specOf(next),
      );
    } catch (err) {
      this.failedAt.set(next.id, Date.now());
      log('error', 'cannot start the reindex of an embedding space; trying again in a minute', {
        space: next.id,
        error: (err as Error).message,
      });
    }
  }

  private failedRecently(spaceId: string): boolean {
    const at = this.failedAt.get(spaceId);
    return at !== undefined && Date.now() - at < RETRY_AFTER_MS;
  }

  /** Keeps a closing build or keeper for stop() to wait for; its error is logged, never unhandled. */
  private retire(closing: Promise<void>): void {
    const safe = closing.catch((err: Error) => {
      this.deps.log('warn', 'a stopped reindex did not close cleanly', { error: err.message });
    });
    this.retiring = Promise.all([this.retiring, safe]).then(() => {});
  }

  /** Stops the build under way (what it stored is kept; the next writer resumes it) and waits for it. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.builder?.stop();
    await Promise.all([...this.keepers.values()].map((k) => k.close()));
    this.keepers.clear();
    await this.retiring;
  }
}
