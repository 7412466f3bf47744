import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import {
  ComputePool,
  DEFAULT_COMPUTE_POOL_OPTIONS,
  exactTopKOnPool,
  SHARD_TOP_K_TASK,
  type TopK,
  VectorShard,
  workerExecArgv,
} from '@cairn/compute';
import { afterEach, describe, expect, it } from 'vitest';

/** Deterministic PRNG (mulberry32), so every run sees the same matrix. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** `rows × dims` L2-normalised vectors in a SharedArrayBuffer, as the pool expects big inputs. */
function sharedUnitMatrix(rows: number, dims: number, seed: number): Float32Array {
  const rnd = prng(seed);
  const m = new Float32Array(new SharedArrayBuffer(rows * dims * 4));
  for (let r = 0; r < rows; r++) {
    let s = 0;
    for (let i = 0; i < dims; i++) {
      const x = rnd() * 2 - 1;
      m[r * dims + i] = x;
      s += x * x;
    }
    const inv = 1 / Math.sqrt(s);
    for (let i = 0; i < dims; i++) m[r * dims + i] = m[r * dims + i]! * inv;
  }
  return m;
}

/** Row vectors of `sharedUnitMatrix`, one array each. */
function rowsOf(m: Float32Array, dims: number): Float32Array[] {
  return Array.from({ length: m.length / dims }, (_, r) => m.slice(r * dims, (r + 1) * dims));
}

/** A shard holding `rows` seeded unit vectors. */
function shardOf(rows: number, dims: number, seed: number, quantization: 'f32' | 'i8' = 'f32'): VectorShard {
  const shard = new VectorShard({ dimensions: dims, quantization, capacity: Math.max(rows, 1) * 2 });
  if (rows > 0) shard.append(rowsOf(sharedUnitMatrix(rows, dims, seed), dims));
  return shard;
}

const same = (a: TopK[], b: TopK[]) => {
  expect(a.map((t) => Array.from(t.rows))).toEqual(b.map((t) => Array.from(t.rows)));
  expect(a.map((t) => Array.from(t.scores))).toEqual(b.map((t) => Array.from(t.scores)));
};

let pool: ComputePool | undefined;
afterEach(async () => {
  await pool?.close();
  pool = undefined;
});

describe('ComputePool: exact scans of a shard, split across threads', () => {
  it('resolves its task file to the compiled output, which exists after `pnpm build`', () => {
    expect(SHARD_TOP_K_TASK).toMatch(/dist[\\/]tasks[\\/]shard-top-k\.js$/);
    expect(existsSync(SHARD_TOP_K_TASK)).toBe(true);
  });

  for (const quantization of ['f32', 'i8'] as const) {
    it(`returns what one scan on the serving thread returns, ties and all (${quantization})`, async () => {
      pool = new ComputePool({ maxThreads: 2 });
      const dims = 48;
      const shard = shardOf(40_000, dims, 1, quantization);
      // Duplicated rows at both ends of the range, so the parts tie and the merge must break ties by row.
      const dup = rowsOf(sharedUnitMatrix(1, dims, 99), dims)[0]!;
      shard.set(5, dup);
      shard.set(39_990, dup);
      const queries = [dup, ...rowsOf(sharedUnitMatrix(6, dims, 2), dims)];
      const local = shard.topK(queries, 20);
      for (const parts of [2, 3]) same(await exactTopKOnPool(pool, shard, queries, 20, { parts }), local);
      expect(Array.from(local[0]!.rows.slice(0, 2))).toEqual([5, 39_990]);
      expect(pool.threads).toBeGreaterThan(0);
    });
  }

  it('scans a range of rows, and rows added after the memory grew', async () => {
    pool = new ComputePool({ maxThreads: 2 });
    const dims = 16;
    const shard = new VectorShard({ dimensions: dims, capacity: 100_000, initialRows: 10 });
    const all = rowsOf(sharedUnitMatrix(60_000, dims, 3), dims);
    shard.append(all.slice(0, 30_000));
    const q = [all[45_000]!];
    const before = await exactTopKOnPool(pool, shard, q, 5);
    expect(before[0]!.rows[0]).not.toBe(45_000);
    shard.append(all.slice(30_000));
    const after = await exactTopKOnPool(pool, shard, q, 5);
    expect(after[0]!.rows[0]).toBe(45_000);
    expect(after[0]!.scores[0]).toBeCloseTo(1, 5);
    const ranged = await exactTopKOnPool(pool, shard, q, 5, { from: 50_000, to: 60_000 });
    for (const r of ranged[0]!.rows) expect(r).toBeGreaterThanOrEqual(50_000);
    same(ranged, shard.topK(q, 5, 50_000, 60_000));
  });

  it('runs many scans of one shard at once, each with its own scratch slot', async () => {
    pool = new ComputePool({ maxThreads: 3 });
    const dims = 32;
    const shard = shardOf(50_000, dims, 4);
    const queries = Array.from({ length: 12 }, (_, i) =>
      rowsOf(sharedUnitMatrix(1 + (i % 5), dims, 100 + i), dims),
    );
    const results = await Promise.all(queries.map((q, i) => exactTopKOnPool(pool!, shard, q, 1 + i)));
    for (const [i, res] of results.entries()) same(res, shard.topK(queries[i]!, 1 + i));
    expect(pool.threads).toBeLessThanOrEqual(3);
  });

  it('returns one empty list per query for an empty shard', async () => {
    pool = new ComputePool({ maxThreads: 2 });
    const got = await exactTopKOnPool(pool, shardOf(0, 4, 1), rowsOf(sharedUnitMatrix(3, 4, 8), 4), 5);
    expect(got.map((t) => t.rows.length)).toEqual([0, 0, 0]);
  });
});

describe('ComputePool: limits and lifecycle', () => {
  it('keeps at least one thread by default', () => {
    expect(DEFAULT_COMPUTE_POOL_OPTIONS.maxThreads).toBeGreaterThanOrEqual(1);
    expect(DEFAULT_COMPUTE_POOL_OPTIONS.maxQueue).toBeGreaterThan(0);
  });

  it('keeps defaults for options given as undefined', async () => {
    pool = new ComputePool({ maxThreads: undefined, maxQueue: undefined });
    expect(pool.maxThreads).toBe(DEFAULT_COMPUTE_POOL_OPTIONS.maxThreads);
    const got = await exactTopKOnPool(pool, shardOf(10, 4, 1), rowsOf(sharedUnitMatrix(1, 4, 2), 4), 2);
    expect(got[0]!.rows).toHaveLength(2);
  });

  it('rejects tasks past maxQueue instead of queueing without bound', async () => {
    pool = new ComputePool({ maxThreads: 1, maxQueue: 1 });
    const shard = shardOf(200, 8, 1);
    const q = rowsOf(sharedUnitMatrix(1, 8, 2), 8);
    const settled = await Promise.allSettled(
      Array.from({ length: 10 }, () => exactTopKOnPool(pool!, shard, q, 3)),
    );
    const rejected = settled.filter((s) => s.status === 'rejected');
    expect(rejected.length).toBeGreaterThan(0);
    expect(settled.some((s) => s.status === 'fulfilled')).toBe(true);
    for (const r of rejected) expect(String((r as PromiseRejectedResult).reason)).toMatch(/queue/i);
  });

  it('stops its worker threads on close', async () => {
    const closing = new ComputePool({ maxThreads: 2 });
    await exactTopKOnPool(closing, shardOf(4, 4, 1), rowsOf(sharedUnitMatrix(1, 4, 2), 4), 1);
    expect(closing.threads).toBeGreaterThan(0);
    await closing.close();
    expect(closing.threads).toBe(0);
  });

  it('lets the tasks given before close finish, then refuses new ones', async () => {
    // destroy() alone cut the running task short ("Terminating worker thread"): under a native call that
    // aborts the process (see closeWaitMs).
    const slow = fileURLToPath(new URL('./fixtures/slow-task.mjs', import.meta.url));
    const closing = new ComputePool({ maxThreads: 1 });
    await closing.run(slow, { ms: 1, answer: 'thread up' });
    const running = closing.run<string>(slow, { ms: 300, answer: 'done' });
    await new Promise((r) => setTimeout(r, 100)); // the thread (already up) has started it
    const queued = closing.run<string>(slow, { ms: 300, answer: 'late' });
    await closing.close();
    await expect(running).resolves.toBe('done');
    await expect(queued).resolves.toBe('late');
    expect(closing.threads).toBe(0);
    await expect(closing.run(slow, { ms: 1, answer: 'x' })).rejects.toThrow(/closed/);
  });

  it('terminates a task still running past the close deadline', async () => {
    const slow = fileURLToPath(new URL('./fixtures/slow-task.mjs', import.meta.url));
    const closing = new ComputePool({ maxThreads: 1, closeWaitMs: 100 });
    await closing.run(slow, { ms: 1, answer: 'thread up' });
    const running = closing.run<string>(slow, { ms: 2_000, answer: 'done' });
    await new Promise((r) => setTimeout(r, 100));
    const started = Date.now();
    await closing.close();
    expect(Date.now() - started).toBeLessThan(1_500);
    await expect(running).rejects.toThrow();
  });

  it("passes workers only the parent's flags a worker accepts, never the source condition", () => {
    expect(
      workerExecArgv([
        '--expose-gc',
        '--conditions',
        '@cairn/source',
        '--enable-source-maps',
        '--max-old-space-size=100',
        '--conditions=@cairn/source',
        '--conditions',
        'production',
      ]),
    ).toEqual(['--enable-source-maps', '--conditions', 'production']);
  });

  it('runs tasks in a process started with a flag workers refuse (node --expose-gc)', () => {
    // Before the flags were filtered, every task of such a process failed: benchmarks run with --expose-gc.
    const compute = fileURLToPath(new URL('../dist/index.js', import.meta.url));
    const script = `
      const { ComputePool, VectorShard, exactTopKOnPool } = await import(${JSON.stringify(compute)});
      const pool = new ComputePool({ maxThreads: 1 });
      const shard = new VectorShard({ dimensions: 2, capacity: 4 });
      shard.append([new Float32Array([1, 0]), new Float32Array([0, 1])]);
      const r = await exactTopKOnPool(pool, shard, [new Float32Array([0, 1])], 1);
      await pool.close();
      process.stdout.write(JSON.stringify([Array.from(r[0].rows)]));`;
    const out = execFileSync(process.execPath, ['--expose-gc', '--input-type=module', '-e', script], {
      encoding: 'utf8',
    });
    expect(JSON.parse(out)).toEqual([[1]]);
  });
});
