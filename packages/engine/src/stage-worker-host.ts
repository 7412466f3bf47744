import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { ComputePool } from '@cairn/compute';
import {
  CairnError,
  type Embedder,
  type EmbeddingSpace,
  embeddingSpaceOf,
  type PrunePolicy,
  withDefaults,
} from '@cairn/core';
import { createEmbedder, parseEmbedderSpec, resolveEmbedder } from '@cairn/embed';
import {
  assertDeploymentFolder,
  bindDataFolder,
  keepDeploymentRecorded,
  MaintenanceJobs,
  QueueTopology,
  type QueueTopologyOptions,
  type SpaceRef,
  type StageName,
  type StagePorts,
  StageWorkers,
  type StageWorkersOptions,
  type StageWorkersStatus,
  shardOf,
} from '@cairn/pipeline/distributed';
import { damagedDatabaseError, isDatabaseDamage, MemoryStore } from '@cairn/store';
import { VectorIndexManager, workerIndexBuilder } from '@cairn/vector';
import {
  type ConsolidationOptions,
  type ConsolidationReport,
  Consolidator,
  DEFAULT_CONSOLIDATION_OPTIONS,
} from './consolidator.js';
import type { EngineLog, EngineOptions } from './engine-options.js';
import { OffThreadEmbedder } from './off-thread-embedder.js';
import { type PruneReport, prune } from './pruner.js';
import { RouteEmbedLoop } from './route-embed-loop.js';
import { specOf } from './space-embedder.js';

export interface StageWorkerHostOptions
  extends Partial<Omit<StageWorkersOptions, 'stages'>>,
    Pick<
      EngineOptions,
      'hnsw' | 'buildThreads' | 'exactThreshold' | 'env' | 'embedderSpec' | 'vectorStorage'
    > {
  /** The data folder (needed by capture and index; an embed-only worker never opens it). */
  dataDir: string;
  redisUrl: string;
  stages: readonly StageName[];
  queue?: Partial<Omit<QueueTopologyOptions, 'redisUrl'>>;
  /** Merge index deltas into snapshot files this often (ms). @defaultValue 30_000 */
  persistIntervalMs?: number;
  /**
   * The consolidation job, scheduled as a BullMQ repeatable job on the maintenance queue and run by a
   * worker with the index stage; `false` removes the schedule. @defaultValue DEFAULT_CONSOLIDATION_OPTIONS
   */
  consolidation?: Partial<ConsolidationOptions> | false;
  /** Pruning policies, scheduled the same way. @defaultValue none; hourly */
  prune?: { policies: readonly PrunePolicy[]; intervalMs?: number };
  log?: EngineLog;
}

/**
 * A `cairn worker` process: wires the data folder's store and vector indexes into the BullMQ stage
 * workers. An embed-only worker opens no data folder at all, so it can run on any machine that reaches
 * Redis; it learns each space's embedder from the job's space id (`<model>/<dims>`) via the spaces the
 * capture side recorded, read once from the data folder when it is available.
 */
export class StageWorkerHost {
  private constructor(
    readonly workers: StageWorkers,
    private readonly topology: QueueTopology,
    private readonly store: MemoryStore | null,
    private readonly vectors: Map<string, VectorIndexManager>,
    private readonly pool: ComputePool | null,
    private readonly timer: NodeJS.Timeout | null,
    private readonly embedPool: ComputePool | null,
    private readonly routeLoop: RouteEmbedLoop | null,
    private readonly hygiene: WorkerHygiene | null,
    private readonly log: EngineLog,
    private readonly stopRecording: () => void,
  ) {}

  static async start(opts: StageWorkerHostOptions): Promise<StageWorkerHost> {
    const topology = await QueueTopology.connect({ redisUrl: opts.redisUrl, ...opts.queue });
    const opened: { store?: MemoryStore } = {};
    try {
      return await StageWorkerHost.assemble(opts, topology, opened);
    } catch (err) {
      // An open Redis connection would keep a worker that failed to start running, doing nothing.
      opened.store?.close();
      await topology.close();
      const path = join(opts.dataDir, 'cairn.db');
      throw isDatabaseDamage(err) ? damagedDatabaseError(path, [(err as Error).message], err) : err;
    }
  }

  private static async assemble(
    opts: StageWorkerHostOptions,
    topology: QueueTopology,
    opened: { store?: MemoryStore },
  ): Promise<StageWorkerHost> {
    const log = opts.log ?? (() => {});
    const stages = new Set(opts.stages);
    const needsStore = stages.has('capture') || stages.has('index');
    const dbPath = join(opts.dataDir, 'cairn.db');
    // A mistyped --data-dir must not become a second folder that takes the deployment's writes.
    if (needsStore) await assertDeploymentFolder(topology, opts.dataDir, () => existsSync(dbPath));
    const store = needsStore ? new MemoryStore({ path: dbPath }) : null;
    const folder = store ? { id: store.folderId(), path: resolve(opts.dataDir) } : null;
    if (store && folder) {
      opened.store = store;
      await bindDataFolder(topology, folder);
    }
    if (store && !store.spaces.activeSpace()) {
      // A fresh data folder: the first space is chosen here, once, as the embedded engine would.
      const spec = opts.embedderSpec ?? 'hash';
      const embedder = await resolveEmbedder(spec, { env: opts.env });
      // Workers starting together may each choose one: the first registered is the folder's.
      store.spaces.ensureActiveSpace(embeddingSpaceOf(embedder), {
        embedder: spec,
        ...(opts.vectorStorage ? { storage: opts.vectorStorage } : {}),
      });
    }
    const pool = stages.has('index') ? new ComputePool() : null;
    const vectors = new Map<string, VectorIndexManager>();
    const embedders = new Map<string, { embedder: Embedder; space: EmbeddingSpace }>();
    const spaceOf = (id: string) => store?.spaces.getSpace(id);
    // The spaces new memories must reach: the active one, any a reindex is filling, and the one a reindex
    // replaced while its grace period lasts (so switching back to it is instant, as in embedded mode).
    const embedSpaces = (): SpaceRef[] => {
      if (!store) return [];
      const e = store.spaces;
      const active = e.activeSpace();
      return [...(active ? [active] : []), ...e.buildingSpaces(), ...e.currentSpaces()].map((s) => ({
        id: s.id,
        embedder: specOf(s),
        dimensions: s.dimensions,
      }));
    };
    const ports: StagePorts = {};
    if (store) {
      ports.capture = { records: store, pending: store.embeddings, embedSpaces };
      ports.reconcile = { pending: store.embeddings, spaces: embedSpaces };
      ports.index = {
        embeddings: store.embeddings,
        spaceOf,
        indexFor: (id) => {
          const space = spaceOf(id);
          // Only the active space is served from an index; a space being built is indexed when activated.
          if (!space?.active) return { apply: () => {} };
          let v = vectors.get(id);
          if (!v) {
            v = new VectorIndexManager({
              dir: join(opts.dataDir, 'vectors'),
              space,
              embeddings: store.embeddings,
              keys: store,
              builder: pool ? workerIndexBuilder(pool) : undefined,
              exactThreshold: opts.exactThreshold,
              waitForBuild: true,
              // An index worker loads what its leases and searches ask for, as before; loading on writes
              // here is not measured yet in distributed mode.
              loadAfterWrites: Number.POSITIVE_INFINITY,
              hnsw: opts.hnsw,
              buildThreads: opts.buildThreads,
              log,
            });
            vectors.set(id, v);
          }
          return v;
        },
        audit: async () => {
          let added = 0;
          for (const v of vectors.values()) added += await v.audit();
          return added;
        },
        releaseShard: async (shard, save) => {
          const shards = topology.opts.shards;
          for (const v of vectors.values()) await v.release((ns) => shardOf(ns, shards) === shard, save);
        },
      };
    }
    // Its own pool, so embedding never queues behind a long HNSW merge on the index pool.
    const embedPool = stages.has('embed') ? new ComputePool({ maxThreads: 1 }) : null;
    ports.embed = {
      embedderFor: async (ref) => {
        let e = embedders.get(ref.id);
        if (!e) {
          const embedder = createEmbedder(ref.embedder, { dimensions: ref.dimensions, env: opts.env });
          const space = embeddingSpaceOf(embedder);
          if (space.id !== ref.id)
            throw new CairnError(
              'INVALID_INPUT',
              `embedder ${ref.embedder} builds space ${space.id} on this worker, not ${ref.id}; check its CAIRN_* embedder settings`,
            );
          // The built-in embedder is pure CPU: run it on its own thread (remote ones just wait on I/O).
          const local = embedPool && parseEmbedderSpec(ref.embedder).kind === 'hash';
          e = {
            embedder: local ? new OffThreadEmbedder(embedder, ref.embedder, embedPool) : embedder,
            space,
          };
          embedders.set(ref.id, e);
        }
        return e;
      },
    };
    // Hygiene runs beside the index stage: it needs the data folder and a view of the vector index. Started
    // before the stage workers, so that a failure here leaves nothing running.
    const hygiene =
      store && stages.has('index') ? await WorkerHygiene.start(store, topology, pool, opts, log) : null;
    const workers = new StageWorkers(topology, ports, { ...opts, stages: [...stages] }, log);
    try {
      await workers.start();
    } catch (err) {
      await hygiene?.close();
      throw err;
    }
    let timer: NodeJS.Timeout | null = null;
    const every = opts.persistIntervalMs ?? 30_000;
    if (stages.has('index') && every > 0) {
      // Snapshots: deltas worth it are merged into new index generations, so a restart maps a recent file.
      timer = setInterval(() => {
        // Deletes made since (by any process) leave the loaded graphs first, and with enough of them the file.
        for (const v of vectors.values()) {
          v.forgetDeletes();
          void v.persistDue();
        }
      }, every);
      timer.unref();
    }
    // Named fields' route vectors: capture workers hold the data folder and see every write.
    const routeLoop =
      store && stages.has('capture') ? new RouteEmbedLoop(store, log, undefined, opts.env) : null;
    return new StageWorkerHost(
      workers,
      topology,
      store,
      vectors,
      pool,
      timer,
      embedPool,
      routeLoop,
      hygiene,
      log,
      keepDeploymentRecorded(topology, folder, log),
    );
  }

  get status(): StageWorkersStatus {
    return this.workers.status;
  }

  /** Runs the reconcile sweep now (it also runs on its timer). */
  reconcile(): Promise<number> {
    return this.workers.reconcile();
  }

  /** Runs the consolidation job in this process now (it also runs on its BullMQ schedule). */
  async consolidate(req: { dryRun?: boolean; namespace?: string } = {}): Promise<ConsolidationReport> {
    if (!this.hygiene)
      throw new CairnError('INVALID_INPUT', 'consolidation runs on a worker with the index stage');
    return this.hygiene.consolidator.run(req);
  }

  /** Graceful stop: no new jobs, active ones finish within `deadlineMs`, indexes are snapshotted. */
  async close(deadlineMs = 10_000): Promise<{ graceful: boolean }> {
    if (this.timer) clearInterval(this.timer);
    this.stopRecording();
    // Side by side: each is bounded on its own, and one after another they added up (10–13 s with Redis
    // down, past Docker's stop timeout). The indexes, pools and store they use close after all three.
    // A step that fails (Redis gone mid-close, a build cut short) is logged and the others still run: the
    // process must stop, and nothing is lost (every stage is idempotent; derived state converges).
    let failed = false;
    const step = async (what: string, work: (() => Promise<unknown> | undefined) | undefined) => {
      try {
        await work?.();
      } catch (err) {
        failed = true;
        this.log('warn', `${what} failed while stopping; the next worker redoes what it left`, {
          error: (err as Error).message,
        });
      }
    };
    let r = { graceful: false };
    await Promise.all([
      step('closing the hygiene jobs', this.hygiene ? () => this.hygiene!.close() : undefined),
      step('closing the field embedding', this.routeLoop ? () => this.routeLoop!.close() : undefined),
      step('closing the stage workers', async () => {
        r = await this.workers.close(deadlineMs);
      }),
    ]);
    for (const v of this.vectors.values()) await step('closing a vector index', () => v.close());
    await step('closing the compute pool', () => this.pool?.close());
    await step('closing the embed pool', () => this.embedPool?.close());
    await step('closing the queues', () => this.topology.close());
    await step('closing the store', async () => this.store?.close());
    return { graceful: r.graceful && !failed };
  }
}

/**
 * The hygiene jobs of a worker with the index stage: consolidation over a read-only view of the active
 * space's vector indexes (it never writes index files, which the shard owners do), and pruning policies,
 * both on BullMQ job schedulers so that one worker of the deployment runs each tick.
 */
class WorkerHygiene {
  private constructor(
    readonly consolidator: Consolidator,
    private readonly jobs: MaintenanceJobs | null,
    private readonly closeView: () => Promise<void>,
  ) {}

  static async start(
    store: MemoryStore,
    topology: QueueTopology,
    pool: ComputePool | null,
    opts: StageWorkerHostOptions,
    log: EngineLog,
  ): Promise<WorkerHygiene> {
    let view: VectorIndexManager | null = null;
    const index = () => {
      const space = store.spaces.activeSpace();
      if (!space) return null;
      if (view?.space.id !== space.id) {
        void view?.close();
        view = new VectorIndexManager({
          dir: join(opts.dataDir, 'vectors'),
          space,
          embeddings: store.embeddings,
          keys: store,
          // A reader builds nothing: the pool searches its graph files for the consolidation's batches.
          builder: pool ? workerIndexBuilder(pool) : undefined,
          exactThreshold: opts.exactThreshold,
          waitForBuild: true,
          role: 'reader',
          loadAfterWrites: Number.POSITIVE_INFINITY,
          hnsw: opts.hnsw,
          buildThreads: opts.buildThreads,
          log,
        });
      } else view.refresh();
      return view;
    };
    const consolidator = new Consolidator(
      store,
      index,
      withDefaults(DEFAULT_CONSOLIDATION_OPTIONS, opts.consolidation || {}),
    );
    const policies = opts.prune?.policies ?? [];
    const jobs = await MaintenanceJobs.start(
      topology,
      [
        { name: 'consolidate', everyMs: opts.consolidation === false ? 0 : consolidator.opts.intervalMs },
        // The policies travel in the job, so any worker runs a tick alike; a worker given none leaves the
        // schedule another one set.
        {
          name: 'prune',
          everyMs: policies.length > 0 ? (opts.prune?.intervalMs ?? 3_600_000) : null,
          data: { policies },
        },
      ],
      async (name, data) => {
        if (name === 'consolidate') {
          const r = await consolidator.run();
          if (r.merged > 0) log('info', 'consolidation merged near-duplicates', { merged: r.merged });
          return { merged: r.merged, scanned: r.scanned };
        }
        const jobPolicies = (data.policies ?? []) as PrunePolicy[];
        const reports: PruneReport[] = [];
        for (const p of jobPolicies) reports.push(await prune(store, p));
        const pruned = reports.reduce((n, r) => n + r.pruned.length, 0);
        if (pruned > 0) log('info', 'pruning policies deleted memories', { pruned });
        return { pruned };
      },
      log,
    );
    return new WorkerHygiene(consolidator, jobs, async () => {
      await view?.close();
    });
  }

  async close(): Promise<void> {
    await this.consolidator.stop();
    await this.jobs?.close();
    await this.closeView();
  }
}
