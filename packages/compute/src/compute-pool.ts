import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { CairnError, settleWithin, withDefaults } from '@cairn/core';
import { Piscina } from 'piscina';

export interface ComputePoolOptions {
  /** Worker threads. @defaultValue max(1, availableParallelism() - 1): one core stays with the event loop. */
  maxThreads: number;
  /** Tasks waiting for a thread before `run` rejects (backpressure, not unbounded memory). @defaultValue 1024 */
  maxQueue: number;
  /** Idle threads exit after this many ms; `Infinity` keeps them while the pool is open. @defaultValue 30_000 */
  idleTimeoutMs: number;
  /**
   * How much lower than the serving thread the pool's threads run (Linux `nice`, per thread): when an
   * index build or a reindex's embedding and the event loop want the same core, the event loop gets it,
   * and the background work takes what is left. 0 runs them at the same priority. Only on Linux, where
   * `nice` is per thread (elsewhere it would lower the whole process). @defaultValue 10 on Linux, else 0
   */
  niceIncrement: number;
  /**
   * How long `close` waits for the tasks given before it (running or queued) before it terminates the
   * threads. A thread terminated in the middle of a native call (a usearch build or merge) aborts the whole
   * process when the call returns: the addon throws into the terminating environment (node-addon-api with
   * C++ exceptions), and nothing can catch it. A test process died so at exit once (`terminate called after
   * throwing an instance of 'Napi::Error'`). @defaultValue 10_000
   */
  closeWaitMs: number;
}

export const DEFAULT_COMPUTE_POOL_OPTIONS: Readonly<ComputePoolOptions> = Object.freeze({
  maxThreads: Math.max(1, availableParallelism() - 1),
  maxQueue: 1024,
  idleTimeoutMs: 30_000,
  niceIncrement: process.platform === 'linux' ? 10 : 0,
  closeWaitMs: 10_000,
});

/** Compiled task files, resolved through `../dist/` so they work from `src/` (tests) and `dist/` alike. */
export const SHARD_TOP_K_TASK = fileURLToPath(new URL('../dist/tasks/shard-top-k.js', import.meta.url));

/**
 * A piscina pool for CPU-heavy work that must not run on the serving thread: HNSW builds, embedding,
 * exact scans of vector shards. Tasks are ES modules with a default export; pass big inputs in shared
 * memory (a SharedArrayBuffer, or a shard's shared WebAssembly memory) so they are shared, not copied.
 */
export class ComputePool {
  private readonly pool: Piscina;
  private readonly closeWaitMs: number;
  /** Tasks given and not yet settled, which `close` waits for. */
  private readonly inFlight = new Set<Promise<unknown>>();
  private closed = false;
  /** The most threads it runs at once. */
  readonly maxThreads: number;

  constructor(opts: Partial<ComputePoolOptions> = {}) {
    const o = withDefaults(DEFAULT_COMPUTE_POOL_OPTIONS, opts);
    this.maxThreads = o.maxThreads;
    this.closeWaitMs = o.closeWaitMs;
    this.pool = new Piscina({
      filename: SHARD_TOP_K_TASK,
      minThreads: 0,
      maxThreads: o.maxThreads,
      maxQueue: o.maxQueue,
      idleTimeout: o.idleTimeoutMs,
      niceIncrement: o.niceIncrement,
      execArgv: workerExecArgv(process.execArgv),
    });
  }

  run<T>(taskFile: string, payload: unknown): Promise<T> {
    if (this.closed) {
      return Promise.reject(new CairnError('BACKEND_UNAVAILABLE', 'the compute pool is closed'));
    }
    const task = this.pool.run(payload, { filename: taskFile }) as Promise<T>;
    const settled: Promise<unknown> = task.then(
      () => this.inFlight.delete(settled),
      () => this.inFlight.delete(settled),
    );
    this.inFlight.add(settled);
    return task;
  }

  get threads(): number {
    return this.pool.threads.length;
  }

  /**
   * Refuses new tasks, waits up to `closeWaitMs` for the ones given (see there), then stops the threads.
   */
  async close(): Promise<void> {
    // piscina's destroy() leaves the pool usable (a later run() would start threads again), so refuse here.
    this.closed = true;
    await settleWithin(Promise.allSettled([...this.inFlight]), this.closeWaitMs);
    await this.pool.destroy();
  }
}

/**
 * The parent's Node flags a worker thread may inherit. Tasks are compiled JS, so the `@cairn/source`
 * resolution condition (set by the test runner to load TypeScript sources) must not reach them, or their
 * imports resolve to .ts files. And Node refuses to start a worker given a process-wide flag such as
 * `--expose-gc` or `--max-old-space-size` (ERR_WORKER_INVALID_EXEC_ARGV): inherited as is, one of them made
 * every task fail, so every index build failed. Each remaining flag is tried once on a throwaway worker,
 * whose constructor checks flags before it starts a thread.
 */
export function workerExecArgv(argv: readonly string[]): string[] {
  const out: string[] = [];
  for (const group of flagGroups(argv)) {
    if (group[0] === '--conditions=@cairn/source') continue;
    if ((group[0] === '--conditions' || group[0] === '-C') && group[1] === '@cairn/source') continue;
    if (acceptedByWorkers(group)) out.push(...group);
  }
  return out;
}

/** A flag with its separate value, if any (`--conditions x`); execArgv holds only Node's own options. */
function flagGroups(argv: readonly string[]): string[][] {
  const groups: string[][] = [];
  for (const a of argv) {
    if (a.startsWith('-') || groups.length === 0) groups.push([a]);
    else groups[groups.length - 1]!.push(a);
  }
  return groups;
}

const workerVerdicts = new Map<string, boolean>();

function acceptedByWorkers(group: readonly string[]): boolean {
  const id = group.join('\u0000');
  let ok = workerVerdicts.get(id);
  if (ok === undefined) {
    try {
      void new Worker('', { eval: true, execArgv: [...group] }).terminate();
      ok = true;
    } catch {
      ok = false;
    }
    workerVerdicts.set(id, ok);
  }
  return ok;
}
