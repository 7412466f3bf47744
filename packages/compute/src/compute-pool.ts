import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { CairnError, withDefaults } from '@cairn/core';
import { Piscina } from 'piscina';

export interface ComputePoolOptions {
  /** Worker threads. @defaultValue max(1, availableParallelism() - 1): one core stays with the event loop. */
  maxThreads: number;
  /** Tasks waiting for a thread before `run` rejects (backpressure, not unbounded memory). @defaultValue 1024 */
  maxQueue: number;
  /** Idle threads exit after this many ms. @defaultValue 30_000 */
  idleTimeoutMs: number;
}

export const DEFAULT_COMPUTE_POOL_OPTIONS: Readonly<ComputePoolOptions> = Object.freeze({
  maxThreads: Math.max(1, availableParallelism() - 1),
  maxQueue: 1024,
  idleTimeoutMs: 30_000,
});

/** Compiled task files, resolved through `../dist/` so they work from `src/` (tests) and `dist/` alike. */
export const COSINE_TOP_K_TASK = fileURLToPath(new URL('../dist/tasks/cosine-top-k.js', import.meta.url));

/**
 * A piscina pool for CPU-heavy work that must not run on the serving thread: HNSW builds, exhaustive
 * cosine scans, batch fusion. Tasks are ES modules with a default export; pass big inputs as
 * SharedArrayBuffer-backed arrays so they are shared, not copied.
 */
export class ComputePool {
  private readonly pool: Piscina;
  private closed = false;

  constructor(opts: Partial<ComputePoolOptions> = {}) {
    const o = withDefaults(DEFAULT_COMPUTE_POOL_OPTIONS, opts);
    this.pool = new Piscina({
      filename: COSINE_TOP_K_TASK,
      minThreads: 0,
      maxThreads: o.maxThreads,
      maxQueue: o.maxQueue,
      idleTimeout: o.idleTimeoutMs,
      // Tasks are compiled JS: the parent's `@cairn/source` resolution condition (set by the test runner
      // to load TypeScript sources) must not reach them, or their imports resolve to .ts files.
      execArgv: withoutSourceCondition(process.execArgv),
    });
  }

  run<T>(taskFile: string, payload: unknown): Promise<T> {
    if (this.closed) {
      return Promise.reject(new CairnError('BACKEND_UNAVAILABLE', 'the compute pool is closed'));
    }
    return this.pool.run(payload, { filename: taskFile }) as Promise<T>;
  }

  get threads(): number {
    return this.pool.threads.length;
  }

  async close(): Promise<void> {
    // piscina's destroy() leaves the pool usable (a later run() would start threads again), so refuse here.
    this.closed = true;
    await this.pool.destroy();
  }
}

function withoutSourceCondition(argv: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if ((a === '--conditions' || a === '-C') && argv[i + 1] === '@cairn/source') i++;
    else if (a !== '--conditions=@cairn/source') out.push(a);
  }
  return out;
}
