// Pipeline benchmark: ingest throughput of the embedded engine against the distributed BullMQ pipeline with
// 1 and 2 worker processes, Redis memory per queued memory, and reindex time, all in one run on one
// synthetic corpus with the built-in hashing embedder. Prints Markdown, writes bench/out/pipeline-latest.md
// and bench/results/pipeline-<date>.json.
// Usage: pnpm build && node bench/dist/pipeline.js [--n 100000] [--batch 1000] [--namespaces 8]
//          [--queued 20000] [--seed 42] [--reindex-workers 2]        (CAIRN_BENCH_N sets --n too)
// Needs redis-server on PATH: each run starts a private one (appendonly yes, as in production).
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { type Embedder, embeddingSpaceOf } from '@cairn/core';
import { resolveEmbedder } from '@cairn/embed';
import { CairnEngine, type EngineLog } from '@cairn/engine';
import { EmbeddedPipeline } from '@cairn/pipeline';
import {
  assertRedisReachable,
  CaptureProducer,
  DEFAULT_QUEUE_TOPOLOGY,
  embedJobsFor,
  encodeVector,
  type JobInput,
  QueueTopology,
  queueCounts,
  redisConnection,
  type SpaceRef,
  type StageWorkersStatus,
  shardOf,
} from '@cairn/pipeline/distributed';
import { type RedisServer, startRedisServer } from '@cairn/pipeline/testing';
import { MemoryStore, type SpaceInfo } from '@cairn/store';
import type { ParentMessage, WorkerConfig, WorkerMessage } from './pipeline-protocol.js';
import { generateCorpus, type SyntheticCorpus } from './synthetic-corpus.js';

/** Goals stated beside the figures; the benchmark reports them and never fails on them. */
const TARGETS = Object.freeze({ distributedPerSec: 3_000 });

interface PipelineOptions {
  /** Memories ingested by each run. @defaultValue 100_000 */
  n: number;
  /** Memories per `engine.ingest` call, per capture job and per producer call. @defaultValue 1_000 */
  batch: number;
  /** Namespaces the corpus is spread over (evenly across the index shards). @defaultValue 8 */
  namespaces: number;
  /** Memories enqueued with no worker running to measure Redis memory per queued memory. @defaultValue 20_000 */
  queued: number;
  /** Worker processes of the distributed reindex; 0 skips it. @defaultValue 2 */
  reindexWorkers: number;
  seed: number;
}

const DEFAULT_PIPELINE_OPTIONS: Readonly<PipelineOptions> = Object.freeze({
  n: 100_000,
  batch: 1_000,
  namespaces: 8,
  queued: 20_000,
  reindexWorkers: 2,
  seed: 42,
});

/** Worker processes of the distributed ingest runs, one fresh deployment each. */
const WORKER_COUNTS = [1, 2] as const;
/** Index shards: the QueueTopology default, which every process of a deployment must agree on. */
const SHARDS = DEFAULT_QUEUE_TOPOLOGY.shards;
/** Workers merge index deltas into snapshot files this often (ms): StageWorkerHost's default. */
const PERSIST_INTERVAL_MS = 30_000;
/** How often the benchmark counts stored memories and vectors in SQLite and samples Redis memory (ms). */
const POLL_MS = 250;
/** A run that has not finished after this long (ms) fails rather than hang the benchmark. */
const RUN_DEADLINE_MS = 30 * 60_000;
/** Workers get this long (ms) to finish active jobs when stopped; then they are killed. */
const STOP_DEADLINE_MS = 10_000;
/** The reindex target: another built-in hashing space than the default (384-d), so it needs no network. */
const REINDEX_SPEC = 'hash:768';
/** Memories per embedder call of the embedded reindex. */
const REINDEX_EMBED_BATCH = 512;
/** Jobs per `addBulk` when the benchmark fills a queue itself (embed/index footprint, distributed reindex). */
const ADD_BULK_JOBS = 20;
/** Lines of a worker's stdout/stderr kept to explain a crash. */
const TAIL_LINES = 40;

const WORKER_SCRIPT = fileURLToPath(new URL('./pipeline-worker.js', import.meta.url));
const RESULTS_DIR = resolve(import.meta.dirname, '../results');
const OUT_PATH = resolve(import.meta.dirname, '../out/pipeline-latest.md');

function parseOptions(argv: string[]): PipelineOptions {
  const { values } = parseArgs({
    args: argv,
    options: {
      n: { type: 'string' },
      batch: { type: 'string' },
      namespaces: { type: 'string' },
      queued: { type: 'string' },
      'reindex-workers': { type: 'string' },
      seed: { type: 'string' },
    },
  });
  const opts: PipelineOptions = { ...DEFAULT_PIPELINE_OPTIONS };
  const raw: Record<keyof PipelineOptions, string | undefined> = {
    n: values.n ?? process.env.CAIRN_BENCH_N,
    batch: values.batch,
    namespaces: values.namespaces,
    queued: values.queued,
    reindexWorkers: values['reindex-workers'],
    seed: values.seed,
  };
  for (const key of Object.keys(raw) as Array<keyof PipelineOptions>) {
    const r = raw[key];
    if (r === undefined) continue;
    const v = Number(r.replaceAll('_', ''));
    const min = key === 'seed' || key === 'reindexWorkers' ? 0 : 1;
    if (!Number.isInteger(v) || v < min) throw new Error(`--${key} must be an integer ≥ ${min}, got "${r}"`);
    opts[key] = v;
  }
  if (opts.batch > 1_000) throw new Error('--batch must be at most 1000 (MAX_CAPTURE_BATCH)');
  return opts;
}

const now = () => performance.now();
const tick = () => new Promise<void>((r) => setImmediate(r));
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
/** A sleep that does not keep the process alive (a deadline in a race that usually ends first). */
const expiry = (ms: number) => new Promise<null>((r) => setTimeout(() => r(null), ms).unref());

function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

// ── Clean-up on any exit ────────────────────────────────────────────────────────────────────────────────

/**
 * What must not outlive the benchmark, however it ends (error, Ctrl-C): worker children, the redis-server
 * (by pid, read from INFO, because the test helper keeps its ChildProcess private) and temporary folders.
 * The 'exit' handler is synchronous, so everything is SIGKILLed; the normal path closes things gracefully
 * first and removes them from here.
 */
const leftovers = { children: new Set<ChildProcess>(), pids: new Set<number>(), dirs: new Set<string>() };
process.on('exit', () => {
  for (const c of leftovers.children) c.kill('SIGKILL');
  for (const pid of leftovers.pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
  for (const d of leftovers.dirs) rmSync(d, { recursive: true, force: true });
});
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => process.exit(130));

function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(os.tmpdir(), prefix));
  leftovers.dirs.add(dir);
  return dir;
}

function removeDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
  leftovers.dirs.delete(dir);
}

// ── Worker child processes ──────────────────────────────────────────────────────────────────────────────

/** A `cairn worker` child (pipeline-worker.ts): IPC for control, its stdout/stderr kept only as a tail. */
class WorkerProcess {
  readonly ready: Promise<StageWorkersStatus>;
  readonly exited: Promise<void>;
  /** Info and warning log lines by message, with how often each appeared. */
  readonly logs = new Map<string, number>();
  /** Memories the reconcile sweep re-enqueued (summed over its log lines). */
  reconcileEnqueued = 0;
  errors = 0;
  private readonly child: ChildProcess;
  private readonly tail: string[] = [];
  private readonly statusWaiters: Array<(s: StageWorkersStatus) => void> = [];
  private closed: ((m: { graceful: boolean; status: StageWorkersStatus }) => void) | null = null;
  private stopping = false;
  private exitCode: string | null = null;

  constructor(
    readonly label: string,
    cfg: WorkerConfig,
  ) {
    this.child = spawn(process.execPath, [WORKER_SCRIPT, JSON.stringify(cfg)], {
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    });
    leftovers.children.add(this.child);
    for (const stream of [this.child.stdout!, this.child.stderr!])
      stream.on('data', (b: Buffer) => {
        this.tail.push(...b.toString().split('\n').filter(Boolean));
        this.tail.splice(0, Math.max(0, this.tail.length - TAIL_LINES));
      });
    this.exited = new Promise((r) =>
      this.child.on('exit', (code, signal) => {
        leftovers.children.delete(this.child);
        this.exitCode = String(code ?? signal);
        if (!this.stopping)
          progress(`${this.label} exited unexpectedly (${this.exitCode})\n${this.describe()}`);
        r();
      }),
    );
    this.ready = new Promise((resolve, reject) => {
      this.child.on('message', (m: WorkerMessage) => {
        if (m.type === 'ready') resolve(m.status);
        else if (m.type === 'status') this.statusWaiters.shift()?.(m.status);
        else if (m.type === 'closed') this.closed?.(m);
        else this.onLog(m);
      });
      this.child.on('exit', () => reject(new Error(`${this.label} exited before it was ready`)));
    });
  }

  get alive(): boolean {
    return this.exitCode === null;
  }

  describe(): string {
    return this.tail.length === 0 ? '(no output)' : this.tail.map((l) => `  | ${l}`).join('\n');
  }

  private onLog(m: Extract<WorkerMessage, { type: 'log' }>): void {
    if (m.level === 'error') {
      this.errors++;
      progress(`${this.label} error: ${m.msg} ${JSON.stringify(m.data ?? {})}`);
    }
    this.logs.set(m.msg, (this.logs.get(m.msg) ?? 0) + 1);
    if (typeof m.data?.enqueued === 'number' && m.msg.startsWith('reconcile'))
      this.reconcileEnqueued += m.data.enqueued;
  }

  private send(m: ParentMessage): void {
    this.child.send(m);
  }

  status(): Promise<StageWorkersStatus> {
    return new Promise((resolve) => {
      this.statusWaiters.push(resolve);
      this.send({ type: 'status' });
    });
  }

  /** Graceful stop (active jobs finish, indexes are snapshotted); SIGKILL when it overruns its deadline. */
  async stop(): Promise<{ graceful: boolean; status: StageWorkersStatus | null }> {
    if (!this.alive) return { graceful: false, status: null };
    this.stopping = true;
    const closed = new Promise<{ graceful: boolean; status: StageWorkersStatus }>((r) => {
      this.closed = r;
    });
    this.send({ type: 'stop', deadlineMs: STOP_DEADLINE_MS });
    const r = await Promise.race([closed, this.exited.then(() => null), expiry(STOP_DEADLINE_MS + 5_000)]);
    if (!r) this.kill();
    await this.exited;
    return r ?? { graceful: false, status: null };
  }

  kill(): void {
    this.stopping = true;
    this.child.kill('SIGKILL');
  }
}

async function startWorkers(n: number, cfg: WorkerConfig): Promise<WorkerProcess[]> {
  // Started together, so the index shard leases are raced for rather than all taken by the first one.
  const procs = Array.from({ length: n }, (_, i) => new WorkerProcess(`worker ${i + 1}`, cfg));
  try {
    await Promise.all(procs.map((p) => p.ready));
  } catch (err) {
    for (const p of procs) p.kill();
    throw new Error(
      `${(err as Error).message}\n${procs.map((p) => `${p.label}:\n${p.describe()}`).join('\n')}`,
    );
  }
  return procs;
}

async function stopWorkers(procs: readonly WorkerProcess[]) {
  return Promise.all(procs.map((p) => p.stop()));
}

// ── Shared helpers ──────────────────────────────────────────────────────────────────────────────────────

let t0Global = now();
const progress = (msg: string) =>
  process.stderr.write(`[pipeline ${((now() - t0Global) / 1000).toFixed(1)}s] ${msg}\n`);

type Admin = ReturnType<typeof redisConnection>;

async function redisInfo(admin: Admin, section: string, field: string): Promise<string> {
  const info = await admin.info(section);
  const m = new RegExp(`^${field}:(.*)$`, 'm').exec(info);
  if (!m?.[1]) throw new Error(`INFO ${section} has no ${field}`);
  return m[1].trim();
}

const usedMemory = async (admin: Admin) => Number(await redisInfo(admin, 'memory', 'used_memory'));

/** Initialises a data folder as `StageWorkerHost.start` does on a fresh one (the first space: `hash`). */
async function openDataFolder(dir: string): Promise<{ store: MemoryStore; space: SpaceInfo }> {
  const store = new MemoryStore({ path: join(dir, 'cairn.db') });
  const embedder = await resolveEmbedder('hash');
  const space = store.spaces.ensureSpace(embeddingSpaceOf(embedder), { embedder: 'hash' });
  return { store, space };
}

/** Vectors of a space in SQLite, summed over the namespaces (each count is one covering-index range). */
function vectorCount(store: MemoryStore, spaceId: string, namespaces: readonly string[]): number {
  return namespaces.reduce((a, ns) => a + store.embeddings.count(spaceId, ns), 0);
}

/** Memories whose namespace spreads evenly over the index shards, and the corpus trimmed to exactly `n`. */
interface BenchCorpus {
  memories: SyntheticCorpus['memories'];
  namespaces: string[];
  /** Namespaces per shard. */
  shardSpread: number[];
  /** Mean bytes of one memory as JSON (what a producer sends). */
  jsonBytes: number;
}

function benchCorpus(opts: PipelineOptions): BenchCorpus {
  const corpus = generateCorpus({ mainDocs: opts.n, seed: opts.seed });
  // Namespace names are picked so each shard owns the same number of them (shardOf is a hash).
  const perShard = Math.ceil(opts.namespaces / SHARDS);
  const namespaces: string[] = [];
  const shardSpread = Array.from({ length: SHARDS }, () => 0);
  for (let k = 0; namespaces.length < opts.namespaces; k++) {
    const ns = `bench/team-${k}`;
    const s = shardOf(ns, SHARDS);
    if (shardSpread[s]! >= perShard) continue;
    shardSpread[s]!++;
    namespaces.push(ns);
  }
  // Whole sessions move to one namespace, round robin in order of first appearance (time order), so every
  // namespace grows at the same pace through the ingest.
  const bySession = new Map<string, string>();
  const memories = corpus.memories.slice(0, opts.n).map((m) => {
    let ns = bySession.get(m.session);
    if (!ns) {
      ns = namespaces[bySession.size % namespaces.length]!;
      bySession.set(m.session, ns);
    }
    return { ...m, namespace: ns };
  });
  let bytes = 0;
  for (const m of memories) bytes += Buffer.byteLength(JSON.stringify(m));
  return { memories, namespaces, shardSpread, jsonBytes: bytes / memories.length };
}

// ── Phase 1: embedded baseline ──────────────────────────────────────────────────────────────────────────

interface EmbeddedReport {
  memories: number;
  /** First ingest call → last ingest call returned (ms). */
  storedMs: number;
  /** First ingest call → every vector in SQLite and applied to the loaded indexes (ms). */
  embeddedMs: number;
  busyRetries: number;
  warnings: Record<string, number>;
}

const isConnectionBusy = (err: unknown) =>
  err instanceof Error && err.message.includes('database connection is busy');

async function embeddedPhase(
  corpus: BenchCorpus,
  opts: PipelineOptions,
  dir: string,
): Promise<EmbeddedReport> {
  const warnings: Record<string, number> = {};
  const log: EngineLog = (level, msg, data) => {
    if (level === 'warn' || level === 'error') warnings[msg] = (warnings[msg] ?? 0) + 1;
    if (level === 'error') progress(`engine error: ${msg} ${JSON.stringify(data ?? {})}`);
  };
  const engine = await CairnEngine.open({ dataDir: dir, persistIntervalMs: PERSIST_INTERVAL_MS, log });
  try {
    // Loaded namespaces, as in a serving engine (and as a worker's index stage loads the namespaces it
    // indexes), so vectors reach the index as they are embedded.
    for (const ns of corpus.namespaces) await engine.vectors?.warm(ns);
    let busyRetries = 0;
    const t0 = now();
    for (const batch of chunks(corpus.memories, opts.batch)) {
      let r: ReturnType<CairnEngine['ingest']> | undefined;
      while (!r) {
        try {
          r = engine.ingest(batch);
        } catch (err) {
          // An index build holds a read cursor on the connection: nothing was written, a client retries.
          if (!isConnectionBusy(err)) throw err;
          busyRetries++;
          await tick();
        }
      }
      if (r.counts.rejected > 0) throw new Error(`embedded ingest rejected ${r.counts.rejected} memories`);
      // The embed/index loop takes its turn between batches, as between requests in a server.
      await tick();
    }
    const storedMs = now() - t0;
    await engine.pipeline.drain();
    const embeddedMs = now() - t0;
    const p = engine.store.spaces.progress(engine.space!.id);
    if (p.embedded !== corpus.memories.length || p.total !== corpus.memories.length)
      throw new Error(
        `embedded mode: ${p.embedded} vectors for ${p.total} memories, expected ${corpus.memories.length}`,
      );
    return { memories: p.total, storedMs, embeddedMs, busyRetries, warnings };
  } finally {
    await engine.close();
  }
}

// ── Phase 2: distributed ingest ─────────────────────────────────────────────────────────────────────────

interface DistributedReport {
  workers: number;
  memories: number;
  /** First enqueue → the producer's last enqueue returned (ms). */
  queuedMs: number;
  /** First enqueue → every memory stored in SQLite (ms; polled every POLL_MS). */
  storedMs: number;
  /** First enqueue → every memory has its vector in SQLite (ms; polled every POLL_MS). */
  doneMs: number;
  /** Index shards held by each worker. */
  shards: number[][];
  processed: Array<Record<string, number>>;
  failedJobs: number;
  /** Memories the reconcile sweep re-enqueued while the backlog was still being worked off. */
  reconcileEnqueued: number;
  workerErrors: number;
  workerLogs: Record<string, number>;
  gracefulStop: boolean[];
  redis: { beforeBytes: number; peakBytes: number; afterBytes: number };
}

/** Polls `check` every POLL_MS until it returns true; throws past the deadline or when a worker dies. */
async function waitFor(check: () => boolean, procs: readonly WorkerProcess[], what: string): Promise<void> {
  const deadline = now() + RUN_DEADLINE_MS;
  while (!check()) {
    const dead = procs.find((p) => !p.alive);
    if (dead) throw new Error(`${dead.label} died while waiting for ${what}\n${dead.describe()}`);
    if (now() > deadline)
      throw new Error(`gave up waiting for ${what} after ${RUN_DEADLINE_MS / 60_000} min`);
    await sleep(POLL_MS);
  }
}

async function distributedRun(
  workers: number,
  corpus: BenchCorpus,
  opts: PipelineOptions,
  redis: RedisServer,
  admin: Admin,
): Promise<DistributedReport> {
  const dir = tempDir('cairn-pipeline-dist-');
  const prefix = `bench-${randomUUID()}`;
  // The bench initialises the folder before the workers start, so two of them never race to create it.
  const { store, space } = await openDataFolder(dir);
  const storedStmt = store.db.prepare('SELECT count(*) AS n FROM memories').pluck();
  const n = corpus.memories.length;
  let procs: WorkerProcess[] = [];
  let topology: QueueTopology | null = null;
  let producer: CaptureProducer | null = null;
  let sampler: NodeJS.Timeout | null = null;
  try {
    procs = await startWorkers(workers, {
      dataDir: dir,
      redisUrl: redis.url,
      prefix,
      shards: SHARDS,
      persistIntervalMs: PERSIST_INTERVAL_MS,
    });
    topology = await QueueTopology.connect({ redisUrl: redis.url, prefix, shards: SHARDS });
    producer = new CaptureProducer(topology, { batchSize: opts.batch, wait: 'queued' });
    const beforeBytes = await usedMemory(admin);
    let peakBytes = beforeBytes;
    let stored = 0;
    let embedded = 0;
    let storedAt: number | null = null;
    let doneAt: number | null = null;
    const t0 = now();
    const sample = () => {
      stored = storedStmt.get() as number;
      embedded = vectorCount(store, space.id, corpus.namespaces);
      if (storedAt === null && stored >= n) storedAt = now();
      if (doneAt === null && embedded >= n) doneAt = now();
      void usedMemory(admin).then(
        (b) => {
          peakBytes = Math.max(peakBytes, b);
        },
        () => {},
      );
    };
    sampler = setInterval(sample, POLL_MS);
    for (const batch of chunks(corpus.memories, opts.batch)) {
      const r = await producer.enqueue(batch);
      if (r.counts.queued !== batch.length)
        throw new Error(
          `producer queued ${r.counts.queued} of ${batch.length} (rejected ${r.counts.rejected})`,
        );
    }
    const queuedMs = now() - t0;
    progress(
      `  ${workers} worker(s): all ${n.toLocaleString('en-US')} queued in ${(queuedMs / 1000).toFixed(1)} s`,
    );
    await waitFor(() => doneAt !== null, procs, 'every vector in SQLite');
    clearInterval(sampler);
    sampler = null;
    const p = store.spaces.progress(space.id);
    if (p.embedded !== n || p.total !== n)
      throw new Error(`${workers} worker(s): ${p.embedded} vectors for ${p.total} memories, expected ${n}`);
    const counts = await queueCounts(topology);
    const failedJobs = Object.values(counts).reduce((a, c) => a + c.failed, 0);
    const afterBytes = await usedMemory(admin);
    const stops = await stopWorkers(procs);
    const logs: Record<string, number> = {};
    for (const w of procs) for (const [msg, k] of w.logs) logs[msg] = (logs[msg] ?? 0) + k;
    // Free the prefix's keys (completed-job tails), so the next run starts from the same Redis baseline.
    for (const { queue } of topology.all()) await queue.obliterate({ force: true });
    return {
      workers,
      memories: n,
      queuedMs,
      storedMs: (storedAt ?? doneAt!) - t0,
      doneMs: doneAt! - t0,
      shards: stops.map((s) => s.status?.shards ?? []),
      processed: stops.map((s) => ({ ...(s.status?.processed ?? {}) })),
      failedJobs,
      reconcileEnqueued: procs.reduce((a, w) => a + w.reconcileEnqueued, 0),
      workerErrors: procs.reduce((a, w) => a + w.errors, 0),
      workerLogs: logs,
      gracefulStop: stops.map((s) => s.graceful),
      redis: { beforeBytes, peakBytes, afterBytes },
    };
  } finally {
    if (sampler) clearInterval(sampler);
    for (const p of procs) if (p.alive) p.kill();
    await Promise.all(procs.map((p) => p.exited));
    await producer?.close();
    await topology?.close();
    store.close();
    removeDir(dir);
  }
}

// ── Phase 3: Redis memory per queued memory ─────────────────────────────────────────────────────────────

interface FootprintReport {
  memories: number;
  /** Mean JSON bytes of a memory as the producer sends it. */
  payloadJsonBytes: number;
  /** used_memory growth per memory with everything sitting in the queue (bytes). */
  captureBytes: number;
  embedBytes: number;
  /** Index jobs carry the vector as base64 of float32. */
  indexBytes: number;
  indexDimensions: number;
}

/** Bytes of Redis memory per memory that `fill` leaves queued in a fresh prefix (the prefix is freed after). */
async function queuedBytes(
  redis: RedisServer,
  admin: Admin,
  memories: number,
  fill: (topology: QueueTopology) => Promise<void>,
): Promise<number> {
  const topology = await QueueTopology.connect({
    redisUrl: redis.url,
    prefix: `bench-${randomUUID()}`,
    shards: SHARDS,
  });
  try {
    const before = await usedMemory(admin);
    await fill(topology);
    const after = await usedMemory(admin);
    return (after - before) / memories;
  } finally {
    for (const { queue } of topology.all()) await queue.obliterate({ force: true });
    await topology.close();
  }
}

async function footprintPhase(
  corpus: BenchCorpus,
  opts: PipelineOptions,
  redis: RedisServer,
  admin: Admin,
  store: MemoryStore,
  active: SpaceInfo,
  fresh: SpaceInfo,
): Promise<FootprintReport> {
  const m = Math.min(opts.queued, corpus.memories.length);
  const sample = corpus.memories.slice(0, m);
  let json = 0;
  for (const x of sample) json += Buffer.byteLength(JSON.stringify(x));

  const captureBytes = await queuedBytes(redis, admin, m, async (topology) => {
    const producer = new CaptureProducer(topology, { batchSize: opts.batch, wait: 'queued' });
    try {
      for (const batch of chunks(sample, opts.batch)) await producer.enqueue(batch);
    } finally {
      await producer.close();
    }
  });

  // Embed jobs as a capture worker enqueues them: the memories as the embed stage reads them from SQLite
  // (a space with an empty cursor lists every memory), in embedJobsFor's batches.
  const pending = store.embeddings.pending(fresh.id, m);
  const ref: SpaceRef = { id: active.id, embedder: active.embedder ?? 'hash', dimensions: active.dimensions };
  const embedJobs = embedJobsFor(ref, pending);
  const embedBytes = await queuedBytes(redis, admin, pending.length, async (topology) => {
    for (const group of chunks(embedJobs, ADD_BULK_JOBS))
      await topology
        .queue('embed')
        .addBulk(group.map((j) => ({ name: 'embed', data: j.data, opts: { jobId: j.id } })));
  });

  // Index jobs as processEmbed builds them from each embed job: one per shard, the stored vectors as base64.
  const indexJobs: Array<{ id: string; data: JobInput<'index'> }> = [];
  for (const job of embedJobs) {
    const byShard = new Map<number, JobInput<'index'>>();
    const byNs = new Map<string, number[]>();
    for (const it of job.data.items) byNs.set(it.namespace, [...(byNs.get(it.namespace) ?? []), it.key]);
    const vectors = new Map<number, Float32Array>();
    for (const [ns, keys] of byNs)
      for (const [k, v] of store.embeddings.byKeys(active.id, ns, keys)) vectors.set(k, v);
    for (const it of job.data.items) {
      const shard = shardOf(it.namespace, SHARDS);
      let j = byShard.get(shard);
      if (!j) {
        j = { space: active.id, shard, items: [], failures: [] };
        byShard.set(shard, j);
      }
      j.items.push({
        key: it.key,
        namespace: it.namespace,
        contentHash: it.contentHash,
        changeSeq: it.changeSeq,
        vector: encodeVector(vectors.get(it.key)!),
      });
    }
    for (const [shard, data] of byShard) indexJobs.push({ id: `${job.id}-idx-${shard}`, data });
  }
  const indexBytes = await queuedBytes(redis, admin, pending.length, async (topology) => {
    for (const j of indexJobs)
      await topology.queue('index', j.data.shard).add('index', j.data, { jobId: j.id });
  });
  return {
    memories: m,
    payloadJsonBytes: json / m,
    captureBytes,
    embedBytes,
    indexBytes,
    indexDimensions: active.dimensions,
  };
}

// ── Phase 4: reindex ────────────────────────────────────────────────────────────────────────────────────

interface ReindexReport {
  memories: number;
  space: string;
  embeddedMs: number;
  distributed: null | {
    workers: number;
    /** Reading the memories from SQLite and enqueuing their embed jobs (ms). */
    enqueueMs: number;
    /** Start → every vector of the new space in SQLite (ms). */
    doneMs: number;
    failedJobs: number;
  };
}

async function reindexSpace(store: MemoryStore): Promise<{ embedder: Embedder; space: SpaceInfo }> {
  const embedder = await resolveEmbedder(REINDEX_SPEC);
  const space = store.spaces.ensureSpace(embeddingSpaceOf(embedder), {
    embedder: REINDEX_SPEC,
    state: 'building',
  });
  return { embedder, space };
}

async function embeddedReindex(store: MemoryStore, embedder: Embedder, space: SpaceInfo, n: number) {
  const pipeline = new EmbeddedPipeline(store, store.embeddings, { apply() {} }, embedder, space, {
    embedBatchSize: REINDEX_EMBED_BATCH,
  });
  try {
    const t0 = now();
    pipeline.kick();
    await pipeline.drain();
    const ms = now() - t0;
    const p = store.spaces.progress(space.id);
    if (p.embedded !== n) throw new Error(`embedded reindex: ${p.embedded} of ${n} vectors`);
    store.spaces.activate(space.id);
    return ms;
  } finally {
    await pipeline.close();
  }
}

async function distributedReindex(
  dir: string,
  corpus: BenchCorpus,
  workers: number,
  redis: RedisServer,
): Promise<NonNullable<ReindexReport['distributed']>> {
  const store = new MemoryStore({ path: join(dir, 'cairn.db') });
  const n = corpus.memories.length;
  const prefix = `bench-${randomUUID()}`;
  let procs: WorkerProcess[] = [];
  let topology: QueueTopology | null = null;
  try {
    const { space } = await reindexSpace(store);
    procs = await startWorkers(workers, {
      dataDir: dir,
      redisUrl: redis.url,
      prefix,
      shards: SHARDS,
      persistIntervalMs: PERSIST_INTERVAL_MS,
      // Every memory of this folder is older than the sweep's grace period, so the sweep would enqueue
      // them too, in other batches (other job ids), and they would be embedded twice.
      reconcileIntervalMs: 0,
    });
    topology = await QueueTopology.connect({ redisUrl: redis.url, prefix, shards: SHARDS });
    const ref: SpaceRef = { id: space.id, embedder: REINDEX_SPEC, dimensions: space.dimensions };
    const t0 = now();
    const jobs = embedJobsFor(ref, store.embeddings.pending(space.id, n));
    for (const group of chunks(jobs, ADD_BULK_JOBS))
      await topology
        .queue('embed')
        .addBulk(group.map((j) => ({ name: 'embed', data: j.data, opts: { jobId: j.id } })));
    const enqueueMs = now() - t0;
    await waitFor(() => vectorCount(store, space.id, corpus.namespaces) >= n, procs, 'the reindexed vectors');
    const doneMs = now() - t0;
    const counts = await queueCounts(topology);
    const failedJobs = Object.values(counts).reduce((a, c) => a + c.failed, 0);
    await stopWorkers(procs);
    for (const { queue } of topology.all()) await queue.obliterate({ force: true });
    return { workers, enqueueMs, doneMs, failedJobs };
  } finally {
    for (const p of procs) if (p.alive) p.kill();
    await Promise.all(procs.map((p) => p.exited));
    await topology?.close();
    store.close();
  }
}

// ── Report ──────────────────────────────────────────────────────────────────────────────────────────────

const int = (x: number) => Math.round(x).toLocaleString('en-US');
const sec = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const rate = (n: number, ms: number) => `${int(n / (ms / 1000))} /s`;
const ratio = (x: number) => `${x.toFixed(2)}×`;
const mib = (b: number) => `${(b / 2 ** 20).toFixed(1)} MiB`;

function table(header: string[], rows: string[][], align: string[]): string[] {
  return [`| ${header.join(' | ')} |`, `|${align.join('|')}|`, ...rows.map((r) => `| ${r.join(' | ')} |`)];
}

/** biome.json's formatter line width: the results file is written the way `biome format` would leave it. */
const JSON_LINE_WIDTH = 110;

/**
 * JSON as Biome formats it (objects one key per line, arrays on one line when they fit), so the written
 * results pass `biome check`; fractional figures are rounded to 3 decimals.
 */
function formatJson(value: unknown, indent = '', prefix = 0): string {
  const inner = `${indent}  `;
  if (Array.isArray(value)) {
    const items = value.map((v) => formatJson(v, inner, inner.length));
    const flat = `[${items.join(', ')}]`;
    // prefix: what precedes the value on its line; +1 for a trailing comma.
    if (!flat.includes('\n') && prefix + flat.length + 1 <= JSON_LINE_WIDTH) return flat;
    return `[\n${items.map((i) => inner + i).join(',\n')}\n${indent}]`;
  }
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value).filter(([, v]) => v !== undefined);
    if (entries.length === 0) return '{}';
    const lines = entries.map(([k, v]) => {
      const key = `${JSON.stringify(k)}: `;
      return `${inner}${key}${formatJson(v, inner, inner.length + key.length)}`;
    });
    return `{\n${lines.join(',\n')}\n${indent}}`;
  }
  if (typeof value === 'number' && !Number.isFinite(value)) return 'null';
  if (typeof value === 'number' && !Number.isInteger(value)) return String(Math.round(value * 1000) / 1000);
  return JSON.stringify(value) ?? 'null';
}

interface Environment {
  date: string;
  command: string;
  revision: string;
  machine: { cpu: string; cores: number; memoryGiB: number; platform: string; node: string; redis: string };
}

function environment(redisVersion: string): Environment {
  let revision = 'unknown';
  try {
    const git = (args: string[]) => execFileSync('git', args, { encoding: 'utf8' }).trim();
    revision = git(['rev-parse', '--short', 'HEAD']);
    if (git(['status', '--porcelain']).length > 0) revision += ' (uncommitted changes in the tree)';
  } catch {
    // Not a git checkout.
  }
  return {
    date: new Date().toISOString(),
    command: ['node', 'bench/dist/pipeline.js', ...process.argv.slice(2)].join(' '),
    revision,
    machine: {
      cpu: os.cpus()[0]?.model ?? 'unknown',
      cores: os.availableParallelism(),
      memoryGiB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
      platform: `${os.platform()} ${os.arch()}`,
      node: process.version,
      redis: redisVersion,
    },
  };
}

function report(
  env: Environment,
  opts: PipelineOptions,
  corpus: BenchCorpus,
  embedded: EmbeddedReport,
  distributed: DistributedReport[],
  footprint: FootprintReport,
  reindex: ReindexReport,
): string {
  const n = embedded.memories;
  const embeddedRate = n / (embedded.embeddedMs / 1000);
  const out: string[] = [];
  out.push(`## Pipeline: embedded vs distributed (BullMQ), ${int(n)} memories`, '');
  out.push(
    `- **Date:** ${env.date.slice(0, 10)} · **Revision:** ${env.revision} · **Command:** \`${env.command}\``,
    `- **Machine:** ${env.machine.cpu}, ${env.machine.cores} cores, ${env.machine.memoryGiB} GiB, ${env.machine.platform}, Node ${env.machine.node}, Redis ${env.machine.redis} (private, appendonly yes, appendfsync everysec)`,
    `- Built-in hashing embedder (384-d); synthetic corpus (seed ${opts.seed}) over ${corpus.namespaces.length} namespaces, ` +
      `${corpus.shardSpread.join('/')} per index shard (${SHARDS} shards); mean memory ${int(corpus.jsonBytes)} bytes of JSON; batches of ${int(opts.batch)}.`,
    '- Embedded: one `CairnEngine`, namespaces loaded, `ingest` per batch, then `pipeline.drain()`. Distributed: a fresh data folder and queue prefix per run, ' +
      `worker processes running StageWorkerHost with capture + embed + index (default concurrency, locks and leases; persist every ${PERSIST_INTERVAL_MS / 1000} s), ` +
      `the producer in the benchmark process (\`CaptureProducer\`, wait \`'queued'\`); "done" is every vector in SQLite, polled every ${POLL_MS} ms.`,
    '',
  );
  const rows: string[][] = [
    [
      'embedded: stored (durable, lexically searchable)',
      sec(embedded.storedMs),
      `**${rate(n, embedded.storedMs)}**`,
      '',
    ],
    [
      'embedded: embedded + in index',
      sec(embedded.embeddedMs),
      `**${rate(n, embedded.embeddedMs)}**`,
      '1.00×',
    ],
  ];
  for (const d of distributed) {
    const w = `${d.workers} worker${d.workers > 1 ? 's' : ''}`;
    const e2e = n / (d.doneMs / 1000);
    rows.push(
      [`distributed, ${w}: all enqueued (wait 'queued')`, sec(d.queuedMs), rate(n, d.queuedMs), ''],
      [`distributed, ${w}: all stored`, sec(d.storedMs), rate(n, d.storedMs), ''],
      [
        `distributed, ${w}: **end to end** (every vector in SQLite)`,
        sec(d.doneMs),
        `**${rate(n, d.doneMs)}**`,
        ratio(e2e / embeddedRate),
      ],
    );
  }
  out.push(
    ...table(['phase', 'time', 'memories/s', 'vs embedded'], rows, ['---', '---:', '---:', '---:']),
    '',
  );
  const best = Math.max(...distributed.map((d) => n / (d.doneMs / 1000)));
  out.push(
    `Target ≥ ${int(TARGETS.distributedPerSec)} memories/s end to end: best distributed run ${int(best)} /s, ` +
      `${best >= TARGETS.distributedPerSec ? 'met' : '**not met**'}.`,
    '',
  );
  out.push(
    ...table(
      [
        'run',
        'index shards per worker',
        'jobs processed per worker (capture/embed/index)',
        'failed jobs',
        'reconcile re-enqueued',
        'Redis used_memory before / peak / after',
      ],
      distributed.map((d) => [
        `${d.workers} worker${d.workers > 1 ? 's' : ''}`,
        d.shards.map((s) => `[${s.join(',')}]`).join(' '),
        d.processed.map((p) => `${p.capture ?? 0}/${p.embed ?? 0}/${p.index ?? 0}`).join(' · '),
        int(d.failedJobs),
        int(d.reconcileEnqueued),
        `${mib(d.redis.beforeBytes)} / ${mib(d.redis.peakBytes)} / ${mib(d.redis.afterBytes)}`,
      ]),
      ['---', '---', '---', '---:', '---:', '---'],
    ),
    '',
  );
  out.push(`### Redis memory per queued memory (${int(footprint.memories)} memories, no worker running)`, '');
  out.push(
    ...table(
      ['job', 'used_memory per memory', 'vs its JSON'],
      [
        [
          `capture (producer, batches of ${int(opts.batch)})`,
          `**${int(footprint.captureBytes)} B**`,
          `${ratio(footprint.captureBytes / footprint.payloadJsonBytes)} of ${int(footprint.payloadJsonBytes)} B`,
        ],
        ['embed (as capture enqueues them, 500 per job)', `${int(footprint.embedBytes)} B`, ''],
        [
          `index (${footprint.indexDimensions}-d vector as base64, one job per shard)`,
          `${int(footprint.indexBytes)} B`,
          '',
        ],
      ],
      ['---', '---:', '---:'],
    ),
    '',
  );
  out.push(
    `### Reindex of ${int(reindex.memories)} memories into \`${reindex.space}\` (${REINDEX_SPEC})`,
    '',
  );
  const rrows: string[][] = [
    [
      `embedded (\`EmbeddedPipeline\`, embedBatchSize ${REINDEX_EMBED_BATCH})`,
      sec(reindex.embeddedMs),
      rate(reindex.memories, reindex.embeddedMs),
    ],
  ];
  if (reindex.distributed)
    rrows.push([
      `distributed, ${reindex.distributed.workers} workers (embed jobs enqueued by the bench in ${sec(reindex.distributed.enqueueMs)})`,
      sec(reindex.distributed.doneMs),
      rate(reindex.memories, reindex.distributed.doneMs),
    ]);
  out.push(...table(['path', 'time', 'memories/s'], rrows, ['---', '---:', '---:']), '');
  if (reindex.memories < 100_000)
    out.push(
      `**Extrapolated** (linear, not measured): embedded reindex of 100,000 memories ≈ ${sec((reindex.embeddedMs * 100_000) / reindex.memories)}` +
        (reindex.distributed
          ? `; distributed ≈ ${sec((reindex.distributed.doneMs * 100_000) / reindex.memories)}.`
          : '.'),
      '',
    );
  return out.join('\n');
}

// ── Main ────────────────────────────────────────────────────────────────────────────────────────────────

async function main(): Promise<void> {
  const opts = parseOptions(process.argv.slice(2));
  t0Global = now();
  progress(`generating ${int(opts.n)} memories over ${opts.namespaces} namespaces`);
  const corpus = benchCorpus(opts);
  const n = corpus.memories.length;
  const redis = await startRedisServer({ appendonly: true });
  leftovers.dirs.add(redis.dir);
  const admin = redisConnection(redis.url, 'producer');
  const embeddedDir = tempDir('cairn-pipeline-embedded-');
  const reindexDir = tempDir('cairn-pipeline-reindex-');
  try {
    await assertRedisReachable(admin, redis.url);
    leftovers.pids.add(Number(await redisInfo(admin, 'server', 'process_id')));
    const env = environment(await redisInfo(admin, 'server', 'redis_version'));

    progress(`embedded: ingesting ${int(n)} memories into ${embeddedDir}`);
    const embedded = await embeddedPhase(corpus, opts, embeddedDir);
    progress(`  stored ${sec(embedded.storedMs)}, embedded ${sec(embedded.embeddedMs)}`);
    // The distributed reindex runs on a copy, so both reindexes start from the same folder.
    if (opts.reindexWorkers > 0) cpSync(embeddedDir, reindexDir, { recursive: true });

    const distributed: DistributedReport[] = [];
    for (const workers of WORKER_COUNTS) {
      progress(`distributed: ${workers} worker process(es), ${int(n)} memories`);
      const d = await distributedRun(workers, corpus, opts, redis, admin);
      progress(`  stored ${sec(d.storedMs)}, done ${sec(d.doneMs)} (${rate(n, d.doneMs)})`);
      distributed.push(d);
    }

    const store = new MemoryStore({ path: join(embeddedDir, 'cairn.db') });
    let footprint: FootprintReport;
    let embeddedMs: number;
    let spaceId: string;
    try {
      const active = store.spaces.activeSpace()!;
      const { embedder, space } = await reindexSpace(store);
      spaceId = space.id;
      progress(`Redis footprint: ${int(Math.min(opts.queued, n))} memories per job type, no workers`);
      footprint = await footprintPhase(corpus, opts, redis, admin, store, active, space);
      progress(`embedded reindex into ${space.id}`);
      embeddedMs = await embeddedReindex(store, embedder, space, n);
      progress(`  ${sec(embeddedMs)}`);
    } finally {
      store.close();
    }
    let dreindex: ReindexReport['distributed'] = null;
    if (opts.reindexWorkers > 0) {
      progress(`distributed reindex with ${opts.reindexWorkers} worker process(es)`);
      dreindex = await distributedReindex(reindexDir, corpus, opts.reindexWorkers, redis);
      progress(`  ${sec(dreindex.doneMs)}`);
    }
    const reindex: ReindexReport = { memories: n, space: spaceId, embeddedMs, distributed: dreindex };

    const md = report(env, opts, corpus, embedded, distributed, footprint, reindex);
    process.stdout.write(`${md}\n`);
    mkdirSync(resolve(OUT_PATH, '..'), { recursive: true });
    writeFileSync(OUT_PATH, `${md}\n`);
    mkdirSync(RESULTS_DIR, { recursive: true });
    const jsonPath = join(RESULTS_DIR, `pipeline-${env.date.slice(0, 10)}.json`);
    const figures = {
      embedded: {
        ...embedded,
        storedPerSec: n / (embedded.storedMs / 1000),
        embeddedPerSec: n / (embedded.embeddedMs / 1000),
      },
      distributed: distributed.map((d) => ({
        ...d,
        endToEndPerSec: n / (d.doneMs / 1000),
        storedPerSec: n / (d.storedMs / 1000),
        vsEmbedded: d.doneMs === 0 ? null : embedded.embeddedMs / d.doneMs,
      })),
      redisFootprint: footprint,
      reindex: {
        ...reindex,
        embeddedPerSec: n / (embeddedMs / 1000),
        distributedPerSec: dreindex ? n / (dreindex.doneMs / 1000) : null,
        extrapolated100kMs:
          n < 100_000
            ? {
                embedded: (embeddedMs * 100_000) / n,
                distributed: dreindex ? (dreindex.doneMs * 100_000) / n : null,
              }
            : null,
      },
    };
    const json = {
      ...env,
      options: opts,
      settings: {
        shards: SHARDS,
        persistIntervalMs: PERSIST_INTERVAL_MS,
        pollMs: POLL_MS,
        redisAppendonly: true,
      },
      corpus: {
        memories: n,
        namespaces: corpus.namespaces,
        shardSpread: corpus.shardSpread,
        meanJsonBytes: corpus.jsonBytes,
      },
      targets: TARGETS,
      figures,
      markdown: md,
    };
    writeFileSync(jsonPath, `${formatJson(json)}\n`);
    progress(`done; written to ${OUT_PATH} and ${jsonPath}`);
  } finally {
    admin.disconnect();
    await redis.close();
    leftovers.pids.clear();
    leftovers.dirs.delete(redis.dir);
    removeDir(embeddedDir);
    removeDir(reindexDir);
  }
}

await main();
