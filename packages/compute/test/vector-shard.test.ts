import { isCairnError } from '@cairn/core';
import { describe, expect, it } from 'vitest';
import { mergeTopK, TopKHeap, VectorShard } from '../src/index.js';

/** Deterministic PRNG (mulberry32). */
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

/** Vectors with components in [-1, 1), not normalised: the shard normalises them. */
function randomVectors(n: number, dims: number, seed: number): Float32Array[] {
  const rnd = prng(seed);
  return Array.from({ length: n }, () => Float32Array.from({ length: dims }, () => rnd() * 2 - 1));
}

/** Cosines in f64, every row, best first, ties to the lower row: what an exact scan must return. */
function bruteForce(rows: Float32Array[], query: Float32Array, k: number) {
  const norm = (v: Float32Array) => Math.sqrt(v.reduce((s, x) => s + x * x, 0)) || 1;
  const qn = norm(query);
  const all = rows.map((v, row) => {
    let d = 0;
    for (let i = 0; i < v.length; i++) d += v[i]! * query[i]!;
    return { row, score: d / norm(v) / qn };
  });
  all.sort((a, b) => b.score - a.score || a.row - b.row);
  return all.slice(0, k);
}

const errorCode = (fn: () => unknown) => {
  try {
    fn();
  } catch (err) {
    return isCairnError(err) ? err.code : `not a CairnError: ${String(err)}`;
  }
  return 'no error';
};

describe('VectorShard: exact top-k with the SIMD kernels (f32)', () => {
  it('agrees with an f64 brute force over dimensions that are not multiples of 4 or 16, across chunks', () => {
    // 9,000 rows span three kernel chunks; 1..9 queries exercise the four-query kernel and the single one.
    for (const [dims, nq] of [
      [1, 1],
      [3, 4],
      [17, 5],
      [64, 9],
      [384, 2],
    ] as const) {
      const rows = randomVectors(9_000, dims, dims);
      const shard = new VectorShard({ dimensions: dims, capacity: 9_000 });
      shard.append(rows);
      const queries = randomVectors(nq, dims, 1000 + dims);
      const got = shard.topK(queries, 10);
      for (const [q, query] of queries.entries()) {
        const want = bruteForce(rows, query, 10);
        if (dims > 1) expect(Array.from(got[q]!.rows)).toEqual(want.map((w) => w.row));
        for (const [i, w] of want.entries()) expect(got[q]!.scores[i]).toBeCloseTo(w.score, 5);
      }
    }
  });

  it('returns the same for a query alone as within a batch of four', () => {
    const dims = 40;
    const shard = new VectorShard({ dimensions: dims });
    shard.append(randomVectors(5_000, dims, 1));
    const queries = randomVectors(4, dims, 2);
    const batch = shard.topK(queries, 15);
    for (const [q, query] of queries.entries()) {
      const alone = shard.topK([query], 15)[0]!;
      expect(Array.from(alone.rows)).toEqual(Array.from(batch[q]!.rows));
      for (const [i, s] of alone.scores.entries()) expect(batch[q]!.scores[i]).toBeCloseTo(s, 6);
    }
  });

  it('keeps the lower row first when scores tie, and finds a row as its own best match', () => {
    const shard = new VectorShard({ dimensions: 2 });
    shard.append([
      new Float32Array([1, 0]),
      new Float32Array([2, 0]),
      new Float32Array([0, 1]),
      new Float32Array([3, 0]),
    ]);
    const [top] = shard.topK([new Float32Array([5, 0])], 3);
    expect(Array.from(top!.rows)).toEqual([0, 1, 3]);
    expect(Array.from(top!.scores)).toEqual([1, 1, 1]);
  });

  it('returns every row when k exceeds the rows, nothing for k = 0, and zeros for a zero query', () => {
    const shard = new VectorShard({ dimensions: 8 });
    shard.append(randomVectors(6, 8, 3));
    expect(shard.topK(randomVectors(1, 8, 4), 50)[0]!.rows).toHaveLength(6);
    expect(shard.topK(randomVectors(2, 8, 4), 0).map((t) => t.rows.length)).toEqual([0, 0]);
    const zero = shard.topK([new Float32Array(8)], 3)[0]!;
    expect(Array.from(zero.scores)).toEqual([0, 0, 0]);
    expect(Array.from(zero.rows)).toEqual([0, 1, 2]);
  });

  it('re-scores chosen rows exactly, in the order given, in chunks larger than its scratch', () => {
    const dims = 384;
    const rows = randomVectors(3_000, dims, 5);
    const shard = new VectorShard({ dimensions: dims });
    shard.append(rows);
    const query = randomVectors(1, dims, 6)[0]!;
    const ids = Array.from({ length: 2_000 }, (_, i) => (i * 7919) % 3_000);
    const got = shard.rescore(query, ids);
    const exact = bruteForce(rows, query, 3_000);
    const byRow = new Map(exact.map((e) => [e.row, e.score]));
    for (const [i, id] of ids.entries()) expect(got[i]).toBeCloseTo(byRow.get(id)!, 5);
  });

  it('sees a row replaced with set()', () => {
    const shard = new VectorShard({ dimensions: 4 });
    shard.append(randomVectors(100, 4, 7));
    const target = new Float32Array([0.5, -0.5, 0.5, -0.5]);
    expect(shard.topK([target], 1)[0]!.rows[0]).not.toBe(42);
    shard.set(42, target);
    expect(shard.topK([target], 1)[0]!.rows[0]).toBe(42);
  });

  it('grows its memory page by page as rows are added', () => {
    const shard = new VectorShard({ dimensions: 384, capacity: 20_000, initialRows: 1 });
    const before = shard.memory.buffer.byteLength;
    const rows = randomVectors(12_000, 384, 8);
    for (let i = 0; i < rows.length; i += 1_000) shard.append(rows.slice(i, i + 1_000));
    expect(shard.rows).toBe(12_000);
    expect(shard.memory.buffer.byteLength).toBeGreaterThan(before + 12_000 * 384 * 4 - 65_536);
    expect(shard.topK([rows[11_999]!], 1)[0]!.rows[0]).toBe(11_999);
  });
});

describe('VectorShard: i8 rows', () => {
  it('keeps the f32 ranking: recall@10 against exact f64 cosines, scores within 0.02', () => {
    const dims = 384;
    const rows = randomVectors(8_000, dims, 9);
    const shard = new VectorShard({ dimensions: dims, quantization: 'i8' });
    shard.append(rows);
    // Queries near stored rows, as real searches are: each is a row plus noise.
    const noise = randomVectors(20, dims, 10);
    const queries = noise.map((n, i) => rows[i * 300]!.map((x, j) => x + 0.8 * n[j]!));
    const got = shard.topK(queries, 10);
    let hits = 0;
    for (const [q, query] of queries.entries()) {
      const want = bruteForce(rows, query, 10);
      const wanted = new Set(want.map((w) => w.row));
      hits += Array.from(got[q]!.rows).filter((r) => wanted.has(r)).length;
      expect(got[q]!.rows[0]).toBe(want[0]!.row);
      expect(Math.abs(got[q]!.scores[0]! - want[0]!.score)).toBeLessThan(0.02);
    }
    expect(hits / (10 * queries.length)).toBeGreaterThanOrEqual(0.9);
  });

  it('takes a quarter of the f32 memory per row', () => {
    const f32 = new VectorShard({ dimensions: 384, quantization: 'f32' });
    const i8 = new VectorShard({ dimensions: 384, quantization: 'i8' });
    expect(i8.layout.stride * 4).toBe(f32.layout.stride);
  });
});

describe('VectorShard: bad input gets a named error and changes nothing', () => {
  it('refuses a vector of the wrong size, rows past capacity, a row out of range, and 4 GiB shards', () => {
    const shard = new VectorShard({ dimensions: 4, capacity: 3 });
    expect(errorCode(() => shard.append([new Float32Array(5)]))).toBe('DIMENSION_MISMATCH');
    expect(errorCode(() => shard.append(new Float32Array(6)))).toBe('DIMENSION_MISMATCH');
    expect(shard.rows).toBe(0);
    shard.append(randomVectors(3, 4, 1));
    expect(errorCode(() => shard.append(randomVectors(1, 4, 2)))).toBe('INVALID_INPUT');
    expect(shard.rows).toBe(3);
    expect(errorCode(() => shard.set(3, new Float32Array(4)))).toBe('INVALID_INPUT');
    expect(errorCode(() => shard.topK([new Float32Array(3)], 1))).toBe('DIMENSION_MISMATCH');
    expect(errorCode(() => new VectorShard({ dimensions: 768, capacity: 2_000_000 }))).toBe('INVALID_INPUT');
    expect(errorCode(() => new VectorShard({ dimensions: 0 }))).toBe('INVALID_INPUT');
  });

  it('refuses a vector of the wrong size in the middle of a batch without adding any of it', () => {
    const shard = new VectorShard({ dimensions: 4 });
    const batch = [...randomVectors(2, 4, 1), new Float32Array(3)];
    expect(errorCode(() => shard.append(batch))).toBe('DIMENSION_MISMATCH');
    expect(shard.rows).toBe(0);
  });

  it('names the problem when every scratch slot is taken', () => {
    const shard = new VectorShard({ dimensions: 4, scratchSlots: 1 });
    shard.append(randomVectors(3, 4, 1));
    // Another thread holding the only slot, as seen from this one.
    Atomics.store(new Int32Array(shard.memory.buffer, 0, 2), 1, 1);
    expect(errorCode(() => shard.topK(randomVectors(1, 4, 2), 1))).toBe('BACKEND_UNAVAILABLE');
    Atomics.store(new Int32Array(shard.memory.buffer, 0, 2), 1, 0);
    expect(shard.topK(randomVectors(1, 4, 2), 1)[0]!.rows).toHaveLength(1);
  });
});

describe('TopKHeap and mergeTopK', () => {
  it('keeps the best k of a stream, and a merge of split streams equals one stream', () => {
    const rnd = prng(12);
    for (let trial = 0; trial < 100; trial++) {
      const n = Math.floor(rnd() * 300);
      const k = Math.floor(rnd() * 30);
      // Few distinct scores, so ties are common.
      const scores = Array.from({ length: n }, () => Math.floor(rnd() * 20) / 20);
      const whole = new TopKHeap(k);
      for (const [row, s] of scores.entries()) whole.push(row, s);
      const cut = Math.floor(rnd() * n);
      const parts = [
        [0, cut],
        [cut, n],
      ].map(([a, b]) => {
        const h = new TopKHeap(k);
        for (let row = a!; row < b!; row++) h.push(row, scores[row]!);
        return h.sorted();
      });
      const want = scores
        .map((score, row) => ({ row, score }))
        .sort((a, b) => b.score - a.score || a.row - b.row)
        .slice(0, k);
      expect(Array.from(whole.sorted().rows)).toEqual(want.map((w) => w.row));
      expect(Array.from(mergeTopK(parts.reverse(), k).rows)).toEqual(want.map((w) => w.row));
    }
  });
});
