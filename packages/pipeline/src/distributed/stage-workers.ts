import { randomUUID } from 'node:crypto';
import { CairnError, isCairnError, settleWithin, withDefaults } from '@cairn/core';
import { type Job, type Processor, Worker, type WorkerOptions } from 'bullmq';
import type { PendingSource } from '../stage-ports.js';
import { DEFAULT_EMBED_BATCHER_OPTIONS, EmbedBatcher, type EmbedBatcherOptions } from './embed-batcher.js';
import {
  DEFAULT_EMBEDDING_CACHE_OPTIONS,
  EmbeddingCache,
  type EmbeddingCacheOptions,
} from './embedding-cache.js';
import { CAPPED_BACKOFF, type JobInput, type JobName, retryDelay } from './job-catalog.js';
import { type QueueTopology, queueName, redisConnection, shardOf } from './queue-topology.js';
import { RepeatedErrorLog } from './repeated-error-log.js';
import { requeueEmbeds } from './requeue-embeds.js';
import { Lease } from './shard-lease.js';
import {
  type CapturePorts,
  type EmbedPorts,
  type Enqueue,
  type IndexPorts,
  indexBatch,
  processCapture,
  processEmbed,
  processIndex,
  type SpaceRef,
} from './stage-processors.js';

export type StageName = JobName;
export const STAGE_NAMES: readonly StageName[] = ['capture', 'embed', 'index'];

export interface StageWorkersOptions {
  /** Which stages this process runs. */
  stages: readonly StageName[];
  /** Jobs processed at once per stage (index shards always take one at a time: one writer). @defaultValue 2 */
  concurrency: number;
  /**
   * A job's lock lasts this long (ms) and is renewed at half; a killed worker's jobs become "stalled" and
   * are taken up again after about this long. @defaultValue 30_000
   */
  lockDurationMs: number;
  /** How long an index shard's lease outlives a holder that stopped renewing it (ms). @defaultValue 15_000 */
  leaseTtlMs: number;
  /**
   * How often the reconcile sweep looks for stored memories without a vector, and an index writer checks
   * that its indexes hold every stored vector (ms); 0 disables both. @defaultValue 30_000
   */
  reconcileIntervalMs: number;
  /** Memories younger than this (ms) are left to the queues by the sweep. @defaultValue 60_000 */
  reconcileGraceMs: number;
  /** Memories re-enqueued per sweep at most. @defaultValue 20_000 */
  reconcileLimit: number;
  /** Rate limit of embedder calls across all embed workers, e.g. `{ max: 50, duration: 1000 }`. @defaultValue none */
  embedLimiter?: { max: number; duration: number };
  embedBatch: Partial<EmbedBatcherOptions>;
  cache: Partial<EmbeddingCacheOptions>;
}

export const DEFAULT_STAGE_WORKERS_OPTIONS: Readonly<Omit<StageWorkersOptions, 'stages' | 'embedLimiter'>> =
  Object.freeze({
    concurrency: 2,
    lockDurationMs: 30_000,
    leaseTtlMs: 15_000,
    reconcileIntervalMs: 30_000,
    reconcileGraceMs: 60_000,
    reconcileLimit: 20_000,
    embedBatch: DEFAULT_EMBED_BATCHER_OPTIONS,
    cache: DEFAULT_EMBEDDING_CACHE_OPTIONS,
  });

/** The ports a process provides for the stages it runs (capture and index need the data folder). */
export interface StagePorts {
  capture?: CapturePorts;
  embed?: Omit<EmbedPorts, 'cacheFor' | 'shardOf'>;
  index?: IndexPorts;
  /** Where the reconcile sweep reads; the sweep runs in a process that has the data folder. */
  reconcile?: { pending: PendingSource; spaces(): SpaceRef[] };
}

export interface StageWorkersStatus {
  stages: StageName[];
  /** Index shards whose lease this process holds. */
  shards: number[];
  processed: Record<StageName, number>;
  failed: Record<StageName, number>;
  cache: { size: number; hits: number; misses: number };
  embedderCalls: number;
  lastReconcile: { at: number; enqueued: number } | null;
  /** The last index audit of this process's shards: vectors found missing from an index and added. */
  lastAudit: { at: number; added: number } | null;
}

/** How long a shutdown step that needs Redis may take once the graceful deadline has passed (ms). */
const FORCED_STEP_MS = 1_500;

type Log = (level: 'debug' | 'info' | 'warn' | 'error', msg: string, data?: Record<string, unknown>) => void;

/**
 * The distributed transport: BullMQ workers for any subset of the stages, running the same stage
 * functions as the embedded transport. Index shards are taken under a Redis lease, so each shard has
 * exactly one writer; a shard whose holder dies is taken over when its lease expires.
 */
export class StageWorkers {
  readonly opts: StageWorkersOptions;
  private readonly workers = new Map<string, Worker>();
  private readonly leases = new Map<number, Lease>();
  private readonly cache: EmbeddingCache;
  private readonly batchers = new Map<string, EmbedBatcher>();
  private leaseTimer: NodeJS.Timeout | null = null;
  private reconcileTimer: NodeJS.Timeout | null = null;
  private auditTimer: NodeJS.Timeout | null = null;
  /** This process's entry in the set of live index workers. */
  private readonly memberId = randomUUID();
  private claiming = false;
  /** Shards being handed over: embed workers stop indexing them in place before their state is saved. */
  private readonly releasing = new Set<number>();
  private reconcileLease: Lease | null = null;
  private closing = false;
  private readonly leaseRedis;
  /** Each BullMQ worker's own connection, disconnected at close even when the worker's close hangs. */
  private readonly connections = new Set<ReturnType<typeof redisConnection>>();
  readonly status: StageWorkersStatus;
  /** BullMQ's worker errors (a Redis that is down repeats them many times a second), logged sparingly. */
  private readonly workerErrors: RepeatedErrorLog;

  constructor(
    private readonly topology: QueueTopology,
    private readonly ports: StagePorts,
    opts: Partial<StageWorkersOptions> & Pick<StageWorkersOptions, 'stages'>,
    private readonly log: Log = () => {},
  ) {
    this.opts = withDefaults({ ...DEFAULT_STAGE_WORKERS_OPTIONS, stages: opts.stages }, opts);
    this.workerErrors = new RepeatedErrorLog(log);
    for (const s of this.opts.stages) {
      if (!STAGE_NAMES.includes(s))
        throw new CairnError('INVALID_INPUT', `unknown stage "${s}"; stages are ${STAGE_NAMES.join(', ')}`, {
          field: 'stages',
        });
      if (s !== 'embed' && !ports[s]) throw new CairnError('INTERNAL', `stage ${s} needs its ports`);
    }
    if (this.opts.stages.includes('embed') && !ports.embed)
      throw new CairnError('INTERNAL', 'stage embed needs its ports');
    this.cache = new EmbeddingCache(this.opts.cache);
    this.leaseRedis = redisConnection(topology.opts.redisUrl, 'worker');
    const zero = () => ({ capture: 0, embed: 0, index: 0 });
    this.status = {
      stages: [...this.opts.stages],
      shards: [],
      processed: zero(),
      failed: zero(),
      cache: { size: 0, hits: 0, misses: 0 },
      embedderCalls: 0,
      lastReconcile: null,
      lastAudit: null,
    };
  }

  async start(): Promise<void> {
    const stages = new Set(this.opts.stages);
    if (stages.has('capture')) {
      const ports = this.ports.capture!;
      this.startWorker('capture', 'capture', this.opts.concurrency, (job) =>
        processCapture(job.data, ports, this.enqueuer('embed'), job.id),
      );
    }
    if (stages.has('embed')) {
      const base = this.ports.embed!;
      const ports: EmbedPorts = {
        embedderFor: async (ref) => {
          const t = await base.embedderFor(ref);
          // One batcher per space: a model can back spaces of different dimensions (a reindex).
          let b = this.batchers.get(t.space.id);
          if (!b) {
            b = new EmbedBatcher(t.embedder, this.opts.embedBatch);
            this.batchers.set(t.space.id, b);
          }
          return { embedder: b, space: t.space };
        },
        cacheFor: (spaceId) => this.cache.forSpace(spaceId),
        shardOf: (ns) => shardOf(ns, this.topology.opts.shards),
        indexLocally: async (shard, batch) => {
          const index = this.ports.index;
          const holds = () =>
            !this.closing && !this.releasing.has(shard) && this.leases.get(shard)?.valid === true;
          if (!index || !holds()) return false;
          const space = index.spaceOf(batch.space);
          if (!space) return false;
          const stored = await indexBatch(batch, space, index, holds);
          if (stored === null) return false;
          this.status.processed.index++;
          return true;
        },
      };
      const w = this.startWorker('embed', 'embed', Math.max(this.opts.concurrency, 4), async (job) => {
        try {
          const r = await processEmbed(job.data, ports, this.enqueuer('index'));
          // Vectors indexed in place are visible before BullMQ reports the job completed: count now.
          this.refreshCacheStatus();
          return r;
        } catch (err) {
          // A remote embedder said "slow down" and when: pause this worker for that long without spending
          // one of the job's attempts.
          const after = isCairnError(err) ? err.data.retryAfterMs : undefined;
          if (typeof after === 'number' && after > 0) {
            await w.rateLimit(after);
            throw Worker.RateLimitError();
          }
          throw err;
        }
      });
    }
    if (stages.has('index')) {
      await this.claimShards();
      this.leaseTimer = setInterval(() => void this.claimShards(), Math.max(250, this.opts.leaseTtlMs / 3));
      this.leaseTimer.unref();
    }
    if (stages.has('index') && this.opts.reconcileIntervalMs > 0) {
      this.auditTimer = setInterval(
        () =>
          void this.auditIndexes().catch((e: Error) =>
            this.log('warn', 'index audit failed', { error: e.message }),
          ),
        this.opts.reconcileIntervalMs,
      );
      this.auditTimer.unref();
    }
    if (this.ports.reconcile && this.opts.reconcileIntervalMs > 0) {
      this.reconcileLease = new Lease(
        this.leaseRedis,
        `${this.topology.opts.prefix}:lease:reconcile`,
        this.opts.reconcileIntervalMs * 2,
      );
      this.reconcileTimer = setInterval(
        () =>
          void this.reconcile().catch((e: Error) =>
            this.log('warn', 'reconcile sweep failed', { error: e.message }),
          ),
        this.opts.reconcileIntervalMs,
      );
      this.reconcileTimer.unref();
    }
  }

  /**
   * The reconcile sweep: stored memories with no vector in an embedding space (because Redis lost their
   * jobs, or a job was purged) are enqueued again. Losing Redis therefore costs time, never memories.
   */
  async reconcile(): Promise<number> {
    const r = this.ports.reconcile;
    if (!r) return 0;
    if (this.reconcileLease && !(await this.reconcileLease.acquire())) return 0;
    let enqueued = 0;
    const cutoff = Date.now() - this.opts.reconcileGraceMs;
    for (const space of r.spaces()) {
      const missing = r.pending.missing(space.id, cutoff, this.opts.reconcileLimit);
      if (missing.length === 0) continue;
      enqueued += await requeueEmbeds(this.topology, space, missing);
    }
    this.status.lastReconcile = { at: Date.now(), enqueued };
    if (enqueued > 0) this.log('info', 'reconcile sweep re-enqueued memories without vectors', { enqueued });
    return enqueued;
  }

  /**
   * Checks that the indexes of the shards this process holds contain every stored vector, adding any
   * they lack. Vectors are applied in write order, so none should be; this is the backstop that makes
   * `indexed` converge to `embedded` whatever a crash or an older version left behind.
   */
  async auditIndexes(): Promise<number> {
    const audit = this.ports.index?.audit;
    if (!audit || this.closing) return 0;
    const added = await audit();
    this.status.lastAudit = { at: Date.now(), added };
    return added;
  }

  /**
   * Stops taking jobs, lets active ones finish for up to `deadlineMs`, then force-closes (their locks lapse
   * and another worker retries them). Every step that needs Redis is bounded: with Redis down, close still
   * returns within about 1.5 s, as nothing can be reported done (leases it could not release expire on their own).
   */
  async close(deadlineMs = 10_000): Promise<{ graceful: boolean }> {
    if (this.closing) return { graceful: true };
    this.closing = true;
    if (this.leaseTimer) clearInterval(this.leaseTimer);
    if (this.reconcileTimer) clearInterval(this.reconcileTimer);
    if (this.auditTimer) clearInterval(this.auditTimer);
    const all = [...this.workers.values()];
    // With Redis unreachable no active job can be reported done, so waiting for one buys nothing: its
    // lock lapses and another worker redoes it (every stage is idempotent).
    const redisUp = this.leaseRedis.status === 'ready';
    const graceful = redisUp && (await settleWithin(Promise.all(all.map((w) => w.close())), deadlineMs));
    if (!graceful) await settleWithin(Promise.all(all.map((w) => w.close(true))), FORCED_STEP_MS);
    // Leases left unreleased (Redis down: no release can land) expire on their own.
    await settleWithin(
      Promise.all([
        ...[...this.leases.values()].map((l) => l.release()),
        this.reconcileLease?.release(),
        this.leaseRedis.zrem(`${this.topology.opts.prefix}:index-members`, this.memberId),
      ]),
      redisUp ? FORCED_STEP_MS : 0,
    );
    this.leaseRedis.disconnect();
    // A worker whose close did not finish still holds a connection trying to reconnect.
    for (const c of this.connections) c.disconnect();
    this.workers.clear();
    return { graceful };
  }

  private enqueuer<N extends 'embed' | 'index'>(name: N): Enqueue<N> {
    return async (jobs) => {
      if (jobs.length === 0) return;
      const byQueue = new Map<number, (typeof jobs)[number][]>();
      for (const j of jobs) {
        const s = name === 'index' ? (j.shard ?? 0) : 0;
        byQueue.set(s, [...(byQueue.get(s) ?? []), j]);
      }
      for (const [shard, list] of byQueue)
        await this.topology
          .queue(name, shard)
          .addBulk(list.map((j) => ({ name, data: j.data as JobInput<N>, opts: { jobId: j.id } })));
    };
  }

  private startWorker(name: StageName, queue: string, concurrency: number, fn: Processor): Worker {
    const connection = redisConnection(this.topology.opts.redisUrl, 'worker');
    const opts: WorkerOptions = {
      connection,
      prefix: this.topology.opts.prefix,
      concurrency,
      lockDuration: this.opts.lockDurationMs,
      stalledInterval: Math.max(1_000, this.opts.lockDurationMs),
      // A job whose worker was killed is retried; only a job that keeps killing its workers is failed.
      maxStalledCount: 3,
      settings: {
        backoffStrategy: (attemptsMade, type, _err, job) =>
          type === CAPPED_BACKOFF ? retryDelay((job?.name ?? name) as JobName, attemptsMade) : 1_000,
      },
    };
    if (name === 'embed' && this.opts.embedLimiter) opts.limiter = this.opts.embedLimiter;
    const w = new Worker(queue, fn, opts);
    w.on('completed', () => {
      this.status.processed[name]++;
      if (name === 'embed') this.refreshCacheStatus();
    });
    w.on('failed', (job: Job | undefined, err: Error) => {
      this.status.failed[name]++;
      this.log('warn', `${queue} job failed`, {
        job: job?.id,
        attempts: job?.attemptsMade,
        error: err.message,
      });
    });
    w.on('error', (err) => this.workerErrors.error(`${queue} worker error`, err));
    // BullMQ does not close a connection it was handed.
    this.connections.add(connection);
    w.on('closed', () => {
      connection.disconnect();
      this.connections.delete(connection);
    });
    this.workers.set(queue, w);
    return w;
  }

  private refreshCacheStatus(): void {
    this.status.cache = { size: this.cache.size, hits: this.cache.hits, misses: this.cache.misses };
    this.status.embedderCalls = [...this.batchers.values()].reduce((n, b) => n + b.calls, 0);
  }

  /**
   * Index shards are shared out fairly: each index worker announces itself in a sorted set (scored by
   * its last heartbeat) and holds at most ceil(shards / live workers). A worker over its share hands one
   * shard back per cycle, after its writer has finished the active job, and a newcomer picks it up.
   */
  private async claimShards(): Promise<void> {
    // A cycle that waits for a writer to finish must not overlap the next tick's cycle.
    if (this.closing || this.claiming) return;
    this.claiming = true;
    try {
      await this.claimShardsOnce();
    } finally {
      this.claiming = false;
    }
  }

  private async claimShardsOnce(): Promise<void> {
    const ports = this.ports.index!;
    const shards = this.topology.opts.shards;
    const now = Date.now();
    const members = `${this.topology.opts.prefix}:index-members`;
    const live = await this.leaseRedis
      .multi()
      .zadd(members, now, this.memberId)
      .zremrangebyscore(members, 0, now - this.opts.leaseTtlMs)
      .zcard(members)
      .exec()
      .then((r) => Number(r?.[2]?.[1] ?? 1))
      .catch(() => 1);
    const share = Math.ceil(shards / Math.max(1, live));
    let held = [...this.leases.values()].filter((l) => l.held).length;
    for (let shard = 0; shard < shards; shard++) {
      let lease = this.leases.get(shard);
      if (!lease) {
        lease = new Lease(
          this.leaseRedis,
          `${this.topology.opts.prefix}:lease:index-${shard}`,
          this.opts.leaseTtlMs,
        );
        this.leases.set(shard, lease);
      }
      const had = lease.held;
      if (!had && held >= share) continue;
      const qn = queueName('index', shard);
      if (had && held > share) {
        // Over the fair share: stop this shard's writer (it finishes its job), then free the lease.
        const w = this.workers.get(qn);
        this.workers.delete(qn);
        await w?.close();
        // Save and forget the shard's index state while still its writer, then let the lease go.
        this.releasing.add(shard);
        try {
          await ports
            .releaseShard?.(shard, true)
            .catch((e: Error) =>
              this.log('warn', 'saving a handed-over shard failed', { shard, error: e.message }),
            );
          await lease.release();
        } finally {
          this.releasing.delete(shard);
        }
        held--;
        this.log('info', 'index shard handed over', { shard, share, workers: live });
        continue;
      }
      const holds = await lease.acquire().catch(() => false);
      if (holds && !had && !this.closing) {
        this.startWorker('index', qn, 1, (job) => processIndex(job.data, ports));
        held++;
        this.log('info', 'index shard acquired', { shard });
      } else if (!holds && had) {
        this.log('warn', 'index shard lease lost; stopping its writer', { shard });
        const w = this.workers.get(qn);
        this.workers.delete(qn);
        held--;
        await w?.close();
        // Another process may own the files now: forget the state without writing anything.
        await ports.releaseShard?.(shard, false).catch(() => {});
      }
    }
    this.status.shards = [...this.leases.entries()].filter(([, l]) => l.held).map(([s]) => s);
  }
}
