import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { type EmbeddingSpace, embeddingSpaceOf, type MemoryInput, normalizeMemory } from '@cairn/core';
import { MemoryStore, type StoredEmbedding } from '@cairn/store';
import {
  type IndexBuilder,
  type IndexBuildRequest,
  type IndexBuildResult,
  inProcessIndexBuilder,
  type LogFn,
  type TaskRunner,
  VectorIndexManager,
  type VectorIndexOptions,
} from '@cairn/vector';

export const DIMS = 16;
export const T0 = Date.parse('2024-01-01T00:00:00Z');

/** Deterministic PRNG (mulberry32), so every run sees the same vectors. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function unit(v: Float32Array): Float32Array {
  let s = 0;
  for (const x of v) s += x * x;
  const inv = s > 0 ? 1 / Math.sqrt(s) : 0;
  for (let i = 0; i < v.length; i++) v[i] = v[i]! * inv;
  return v;
}

export function randomUnitVectors(n: number, dims: number, seed: number): Float32Array[] {
  const rnd = prng(seed);
  return Array.from({ length: n }, () => unit(Float32Array.from({ length: dims }, () => rnd() * 2 - 1)));
}

export function cosineOf(a: Float32Array, b: Float32Array): number {
  let ab = 0;
  let aa = 0;
  let bb = 0;
  for (let i = 0; i < a.length; i++) {
    ab += a[i]! * b[i]!;
    aa += a[i]! * a[i]!;
    bb += b[i]! * b[i]!;
  }
  return ab / Math.sqrt(aa * bb);
}

export interface LogLine {
  level: Parameters<LogFn>[0];
  msg: string;
  data: Record<string, unknown> | undefined;
}

/**
 * The in-process builder inserts on one thread (usearch 2.26's multi-threaded batch `add` leaves a few
 * nodes unreachable at random), so graphs are deterministic enough for tests that assert a nearest key.
 */
export const singleThreadIndexBuilder: IndexBuilder = inProcessIndexBuilder;

/** An IndexBuilder that counts its builds and can be held at a gate or made to fail. */
export class CountingBuilder implements IndexBuilder {
  builds = 0;
  failNext = 0;
  /** Each build's buffers, in bytes: what the manager allocated for it. */
  readonly bufferBytes: number[] = [];
  private gate: Promise<void> | null = null;
  private release: (() => void) | null = null;

  hold(): void {
    this.gate = new Promise((r) => {
      this.release = r;
    });
  }

  open(): void {
    this.release?.();
    this.gate = null;
  }

  async build(req: IndexBuildRequest): Promise<IndexBuildResult> {
    this.builds++;
    this.bufferBytes.push(req.keys.buffer.byteLength + req.vectors.buffer.byteLength);
    if (this.gate) await this.gate;
    if (this.failNext > 0) {
      this.failNext--;
      throw new Error('simulated build failure');
    }
    return singleThreadIndexBuilder.build(req);
  }
}

/** A real MemoryStore and index folder in a temporary directory, plus helpers to fill them. */
export class VectorFixture {
  readonly dir = mkdtempSync(join(tmpdir(), 'cairn-vector-'));
  readonly indexDir = join(this.dir, 'index');
  readonly store = new MemoryStore({ path: join(this.dir, 'cairn.db') });
  readonly space: EmbeddingSpace;
  readonly logs: LogLine[] = [];
  readonly builder = new CountingBuilder();
  private readonly managers: VectorIndexManager[] = [];

  constructor(dims = DIMS, modelId = 'test-model') {
    this.space = embeddingSpaceOf({ modelId, dimensions: dims });
    this.store.spaces.ensureSpace(this.space);
  }

  readonly log: LogFn = (level, msg, data) => {
    this.logs.push({ level, msg, data });
  };

  manager(opts: Partial<VectorIndexOptions> = {}): VectorIndexManager {
    const m = new VectorIndexManager({
      dir: this.indexDir,
      space: this.space,
      embeddings: this.store.embeddings,
      keys: this.store,
      builder: this.builder,
      waitForBuild: true,
      log: this.log,
      ...opts,
    });
    this.managers.push(m);
    return m;
  }

  /**
   * Writes one memory per vector into `namespace` and stores its embedding. Returns the store keys
   * (in vector order) and the stored embeddings, ready for `VectorIndexManager.apply`.
   */
  add(
    namespace: string,
    vectors: readonly Float32Array[],
    extra: (i: number) => Partial<MemoryInput> = () => ({}),
    idPrefix = 'm',
  ): { keys: number[]; stored: StoredEmbedding[] } {
    const results = this.store.write(
      vectors.map((_, i) =>
        normalizeMemory(
          { namespace, id: `${idPrefix}${i}`, text: `${namespace} memory ${idPrefix}${i}`, ...extra(i) },
          T0,
        ),
      ),
    );
    const byKey = new Map(results.map((r, i) => [r.key, vectors[i]!]));
    const pending = this.store.embeddings.pending(this.space.id, 100_000);
    const stored = this.store.embeddings.put(
      this.space,
      pending.filter((p) => byKey.has(p.key)).map((memory) => ({ memory, vector: byKey.get(memory.key)! })),
      Math.max(0, ...pending.map((p) => p.changeSeq)),
    );
    return { keys: results.map((r) => r.key), stored };
  }

  warnings(): LogLine[] {
    return this.logs.filter((l) => l.level === 'warn');
  }

  async cleanup(): Promise<void> {
    this.builder.open();
    for (const m of this.managers) await m.close();
    this.store.close();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/**
 * A minimal TaskRunner on node:worker_threads: it loads the task module in a fresh worker and calls its
 * default export, the contract @cairn/compute's pool fulfils. SharedArrayBuffers in the payload are shared.
 */
export class ThreadRunner implements TaskRunner {
  readonly files: string[] = [];

  run<T>(taskFile: string, payload: unknown): Promise<T> {
    this.files.push(taskFile);
    // An ES module worker (a data: URL, so the test needs no extra file) that imports the task by file URL.
    const source = `
      import { parentPort, workerData } from 'node:worker_threads';
      try {
        const task = await import(workerData.url);
        parentPort.postMessage({ ok: true, r: await task.default(workerData.payload) });
      } catch (e) {
        parentPort.postMessage({ ok: false, e: String(e) });
      }
    `;
    return new Promise<T>((resolve, reject) => {
      const worker = new Worker(new URL(`data:text/javascript,${encodeURIComponent(source)}`), {
        workerData: { url: pathToFileURL(taskFile).href, payload },
      });
      worker.once('message', (msg: { ok: boolean; r?: T; e?: string }) => {
        void worker.terminate();
        if (msg.ok) resolve(msg.r as T);
        else reject(new Error(msg.e));
      });
      worker.once('error', reject);
    });
  }
}
