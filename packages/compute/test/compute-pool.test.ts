import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import {
  COSINE_TOP_K_TASK,
  ComputePool,
  type CosineTopKRequest,
  type CosineTopKResult,
  DEFAULT_COMPUTE_POOL_OPTIONS,
  workerExecArgv,
} from '@cairn/compute';
import { afterEach, describe, expect, it } from 'vitest';
import cosineTopK from '../src/tasks/cosine-top-k.js';

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

/** Plain JS brute force: every row's dot product with the query, sorted best first (ties by row). */
function bruteForce(req: CosineTopKRequest): CosineTopKResult {
  const { matrix, queries, dimensions: d, k } = req;
  const rows: number[][] = [];
  const scores: number[][] = [];
  for (let q = 0; q < queries.length / d; q++) {
    const all: Array<{ row: number; score: number }> = [];
    for (let r = 0; r < matrix.length / d; r++) {
      let s = 0;
      for (let i = 0; i < d; i++) s += matrix[r * d + i]! * queries[q * d + i]!;
      all.push({ row: r, score: s });
    }
    all.sort((a, b) => b.score - a.score || a.row - b.row);
    const top = all.slice(0, Math.max(0, k));
    rows.push(top.map((x) => x.row));
    scores.push(top.map((x) => x.score));
  }
  return { rows, scores };
}

let pool: ComputePool | undefined;
afterEach(async () => {
  await pool?.close();
  pool = undefined;
});

describe('ComputePool: cosine top-k', () => {
  it('resolves its task file to the compiled output, which exists after `pnpm build`', () => {
    expect(COSINE_TOP_K_TASK).toMatch(/dist[\\/]tasks[\\/]cosine-top-k\.js$/);
    expect(existsSync(COSINE_TOP_K_TASK)).toBe(true);
  });

  it('matches a brute-force JS computation on a SharedArrayBuffer-backed matrix', async () => {
    pool = new ComputePool({ maxThreads: 2 });
    const dims = 32;
    const matrix = sharedUnitMatrix(2_000, dims, 1);
    const queries = sharedUnitMatrix(7, dims, 2);
    const req: CosineTopKRequest = { matrix, queries, dimensions: dims, k: 10 };
    const got = await pool.run<CosineTopKResult>(COSINE_TOP_K_TASK, req);
    const expected = bruteForce(req);
    expect(got.rows).toEqual(expected.rows);
    expect(got.scores).toHaveLength(7);
    for (const [q, scores] of got.scores.entries()) {
      for (const [i, s] of scores.entries()) expect(s).toBeCloseTo(expected.scores[q]![i]!, 10);
    }
  });

  it('returns each query’s rows best first, with scores that never increase', async () => {
    pool = new ComputePool({ maxThreads: 1 });
    const dims = 8;
    const req = {
      matrix: sharedUnitMatrix(300, dims, 3),
      queries: sharedUnitMatrix(5, dims, 4),
      dimensions: dims,
      k: 25,
    };
    const got = await pool.run<CosineTopKResult>(COSINE_TOP_K_TASK, req);
    for (const [q, rows] of got.rows.entries()) {
      expect(rows).toHaveLength(25);
      expect(new Set(rows).size).toBe(25);
      const scores = got.scores[q]!;
      for (let i = 1; i < scores.length; i++) expect(scores[i]!).toBeLessThanOrEqual(scores[i - 1]!);
      for (const s of scores) {
        expect(s).toBeLessThanOrEqual(1 + 1e-6);
        expect(s).toBeGreaterThanOrEqual(-1 - 1e-6);
      }
    }
  });

  it('finds a row as its own best match with cosine 1', async () => {
    pool = new ComputePool({ maxThreads: 1 });
    const dims = 16;
    const matrix = sharedUnitMatrix(500, dims, 5);
    const queries = new Float32Array(new SharedArrayBuffer(3 * dims * 4));
    for (const [q, row] of [0, 250, 499].entries())
      queries.set(matrix.subarray(row * dims, (row + 1) * dims), q * dims);
    const got = await pool.run<CosineTopKResult>(COSINE_TOP_K_TASK, {
      matrix,
      queries,
      dimensions: dims,
      k: 1,
    });
    expect(got.rows).toEqual([[0], [250], [499]]);
    for (const [s] of got.scores) expect(s).toBeCloseTo(1, 5);
  });

  it('returns every row when k exceeds the row count, and nothing for k = 0', async () => {
    pool = new ComputePool({ maxThreads: 1 });
    const dims = 4;
    const req = {
      matrix: sharedUnitMatrix(6, dims, 6),
      queries: sharedUnitMatrix(2, dims, 7),
      dimensions: dims,
      k: 50,
    };
    const all = await pool.run<CosineTopKResult>(COSINE_TOP_K_TASK, req);
    expect(all.rows).toEqual(bruteForce(req).rows);
    expect(all.rows.every((r) => r.length === 6)).toBe(true);
    const none = await pool.run<CosineTopKResult>(COSINE_TOP_K_TASK, { ...req, k: 0 });
    expect(none).toEqual({ rows: [[], []], scores: [[], []] });
  });

  it('returns one empty list per query for an empty matrix', async () => {
    pool = new ComputePool({ maxThreads: 1 });
    const got = await pool.run<CosineTopKResult>(COSINE_TOP_K_TASK, {
      matrix: new Float32Array(new SharedArrayBuffer(0)),
      queries: sharedUnitMatrix(3, 4, 8),
      dimensions: 4,
      k: 5,
    });
    expect(got.rows).toEqual([[], [], []]);
  });

  it('runs many tasks concurrently, each matching brute force', async () => {
    pool = new ComputePool({ maxThreads: 3 });
    const dims = 16;
    const matrix = sharedUnitMatrix(1_000, dims, 9);
    const reqs = Array.from({ length: 12 }, (_, i) => ({
      matrix,
      queries: sharedUnitMatrix(2, dims, 100 + i),
      dimensions: dims,
      k: 1 + i,
    }));
    const results = await Promise.all(reqs.map((r) => pool!.run<CosineTopKResult>(COSINE_TOP_K_TASK, r)));
    for (const [i, res] of results.entries()) expect(res.rows).toEqual(bruteForce(reqs[i]!).rows);
    expect(pool.threads).toBeLessThanOrEqual(3);
  });
});

describe('cosineTopK task function', () => {
  it('keeps the lower row first when scores tie', () => {
    const matrix = new Float32Array([1, 0, 1, 0, 0, 1, 1, 0]);
    const res = cosineTopK({ matrix, queries: new Float32Array([1, 0]), dimensions: 2, k: 3 });
    expect(res.rows).toEqual([[0, 1, 3]]);
    expect(res.scores).toEqual([[1, 1, 1]]);
  });

  it('agrees with brute force over many random shapes', () => {
    const rnd = prng(11);
    for (let trial = 0; trial < 200; trial++) {
      const dims = 1 + Math.floor(rnd() * 12);
      const rows = Math.floor(rnd() * 60);
      const k = Math.floor(rnd() * 20);
      const req = {
        matrix: sharedUnitMatrix(rows, dims, trial * 2 + 1),
        queries: sharedUnitMatrix(1 + Math.floor(rnd() * 3), dims, trial * 2 + 2),
        dimensions: dims,
        k,
      };
      expect(cosineTopK(req).rows).toEqual(bruteForce(req).rows);
    }
  });
});

describe('ComputePool: limits and lifecycle', () => {
  it('keeps at least one thread by default', () => {
    expect(DEFAULT_COMPUTE_POOL_OPTIONS.maxThreads).toBeGreaterThanOrEqual(1);
    expect(DEFAULT_COMPUTE_POOL_OPTIONS.maxQueue).toBeGreaterThan(0);
  });

  it('keeps defaults for options given as undefined', async () => {
    pool = new ComputePool({ maxThreads: undefined, maxQueue: undefined });
    const got = await pool.run<CosineTopKResult>(COSINE_TOP_K_TASK, {
      matrix: sharedUnitMatrix(10, 4, 1),
      queries: sharedUnitMatrix(1, 4, 2),
      dimensions: 4,
      k: 2,
    });
    expect(got.rows[0]).toHaveLength(2);
  });

  it('rejects tasks past maxQueue instead of queueing without bound', async () => {
    pool = new ComputePool({ maxThreads: 1, maxQueue: 1 });
    const req = {
      matrix: sharedUnitMatrix(200, 8, 1),
      queries: sharedUnitMatrix(1, 8, 2),
      dimensions: 8,
      k: 3,
    };
    const settled = await Promise.allSettled(
      Array.from({ length: 10 }, () => pool!.run(COSINE_TOP_K_TASK, req)),
    );
    const rejected = settled.filter((s) => s.status === 'rejected');
    expect(rejected.length).toBeGreaterThan(0);
    expect(settled.some((s) => s.status === 'fulfilled')).toBe(true);
    for (const r of rejected) expect(String((r as PromiseRejectedResult).reason)).toMatch(/queue/i);
  });

  it('stops its worker threads on close', async () => {
    const closing = new ComputePool({ maxThreads: 2 });
    await closing.run(COSINE_TOP_K_TASK, {
      matrix: sharedUnitMatrix(4, 4, 1),
      queries: sharedUnitMatrix(1, 4, 2),
      dimensions: 4,
      k: 1,
    });
    expect(closing.threads).toBeGreaterThan(0);
    await closing.close();
    expect(closing.threads).toBe(0);
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
      const { ComputePool, COSINE_TOP_K_TASK } = await import(${JSON.stringify(compute)});
      const pool = new ComputePool({ maxThreads: 1 });
      const m = new Float32Array(new SharedArrayBuffer(16)); m.set([1, 0, 0, 1]);
      const q = new Float32Array(new SharedArrayBuffer(8)); q.set([0, 1]);
      const r = await pool.run(COSINE_TOP_K_TASK, { matrix: m, queries: q, dimensions: 2, k: 1 });
      await pool.close();
      process.stdout.write(JSON.stringify(r.rows));`;
    const out = execFileSync(process.execPath, ['--expose-gc', '--input-type=module', '-e', script], {
      encoding: 'utf8',
    });
    expect(JSON.parse(out)).toEqual([[1]]);
  });
});
