import { blobToVector } from '@cairn/store';
import { ExactMatrix } from '@cairn/vector';
import fc from 'fast-check';
import { exactSearch, MetricKind } from 'usearch';
import { describe, expect, it } from 'vitest';
import { cosineOf, randomUnitVectors, VectorFixture } from './helpers.js';

const D = 4;
const AXES = [
  new Float32Array([1, 0, 0, 0]),
  new Float32Array([0, 1, 0, 0]),
  new Float32Array([0, 0, 1, 0]),
  new Float32Array([0, 0, 0, 1]),
];

/**
 * Lays vectors out in one shared pool after some unrelated bytes and returns Buffer slices of it: what a
 * driver that hands out slices of a pooled allocation (as better-sqlite3 may) gives you for BLOB columns.
 */
function pooledBlobs(vectors: readonly Float32Array[], leadingBytes = 64): Buffer[] {
  const pool = new ArrayBuffer(leadingBytes + vectors.length * D * 4 + 64);
  // Junk before, between and after: a reader that ignores byteOffset sees this instead of the vector.
  new Float32Array(pool).fill(0.5);
  return vectors.map((v, i) => {
    const offset = leadingBytes + i * D * 4;
    new Float32Array(pool, offset, D).set(v);
    return Buffer.from(pool, offset, D * 4);
  });
}

describe('usearch exactSearch and byteOffset (upstream pitfall, usearch 2.25–2.26)', () => {
  it('reads from the start of the buffer, ignoring a query view’s byteOffset', () => {
    const dataset = new Float32Array([...AXES[0]!, ...AXES[1]!, ...AXES[2]!]);
    // The pool holds axis 0 at offset 0 and axis 1 at byte 16; the view we pass is axis 1.
    const pool = new Float32Array([...AXES[0]!, ...AXES[1]!]);
    const view = pool.subarray(D);
    expect(view.byteOffset).toBe(D * 4);
    expect([...view]).toEqual([...AXES[1]!]);

    const viaView = exactSearch(dataset, view, D, 1, MetricKind.Cos);
    const viaCopy = exactSearch(dataset, view.slice(), D, 1, MetricKind.Cos);
    expect(Number(viaCopy.keys[0])).toBe(1);
    // Documents the upstream bug: the native code read axis 0 from offset 0 of the underlying buffer.
    // If this starts failing, usearch has fixed it and the defensive copies may be revisited.
    expect(Number(viaView.keys[0])).not.toBe(1);
  });

  it('reads from the start of the buffer, ignoring a dataset view’s byteOffset', () => {
    const pool = new Float32Array([...AXES[3]!, ...AXES[0]!, ...AXES[1]!, ...AXES[2]!]);
    const dataset = pool.subarray(D); // rows: axis 0, axis 1, axis 2
    const q = new Float32Array(AXES[2]!);
    expect(Number(exactSearch(dataset.slice(), q, D, 1, MetricKind.Cos).keys[0])).toBe(2);
    expect(Number(exactSearch(dataset, q, D, 1, MetricKind.Cos).keys[0])).not.toBe(2);
  });
});

describe('blobToVector + ExactMatrix over pooled BLOBs', () => {
  it('finds the correct nearest key for vectors and a query decoded from Buffer slices with a non-zero byteOffset', () => {
    const blobs = pooledBlobs(AXES);
    for (const b of blobs) expect(b.byteOffset).toBeGreaterThan(0);
    const vectors = blobs.map(blobToVector);
    // The decoded vectors must be offset-0 copies, or native code would read the pool's junk.
    for (const v of vectors) {
      expect(v.byteOffset).toBe(0);
      expect(v.buffer.byteLength).toBe(D * 4);
    }

    const keys = [101, 202, 303, 404];
    const matrix = new ExactMatrix(D, 2);
    for (const [i, v] of vectors.entries()) matrix.upsert(keys[i]!, v);

    for (let target = 0; target < AXES.length; target++) {
      const query = blobToVector(blobs[target]!);
      const [best] = matrix.search(query, 1);
      expect(best?.key).toBe(keys[target]);
      expect(best?.cosine).toBeCloseTo(1, 6);
      // The same decoded query passed straight to native code (no defensive copy in between) is only
      // correct because blobToVector copied it to offset 0.
      const dataset = new Float32Array(vectors.flatMap((v) => [...v]));
      expect(Number(exactSearch(dataset, query, D, 1, MetricKind.Cos).keys[0])).toBe(target);
    }
  });

  it('finds the correct nearest key for vectors read back from a real SQLite BLOB column', async () => {
    const fx = new VectorFixture(D * 8);
    try {
      const vectors = randomUnitVectors(300, D * 8, 7);
      const { keys } = fx.add('ns', vectors);
      // Raw better-sqlite3 BLOBs, straight from the embeddings table.
      const rows = fx.store.db.prepare('SELECT key, vector FROM embeddings ORDER BY key').all() as Array<{
        key: number;
        vector: Buffer;
      }>;
      expect(rows).toHaveLength(300);
      const matrix = new ExactMatrix(D * 8, 16);
      for (const r of rows) matrix.upsert(r.key, blobToVector(r.vector));
      for (const i of [0, 149, 299]) {
        const row = rows.find((r) => r.key === keys[i])!;
        expect(matrix.search(blobToVector(row.vector), 1)[0]?.key).toBe(keys[i]);
      }
    } finally {
      await fx.cleanup();
    }
  });

  it('answers correctly for a query that is itself a view with a non-zero byteOffset', () => {
    const matrix = new ExactMatrix(D);
    for (const [i, v] of AXES.entries()) matrix.upsert(i + 10, v);
    const pool = new Float32Array([...AXES[0]!, ...AXES[3]!]);
    expect(matrix.search(pool.subarray(D), 1)[0]?.key).toBe(13);
  });
});

describe('ExactMatrix', () => {
  it('returns the top k by cosine, best first', () => {
    const vectors = randomUnitVectors(50, 12, 1);
    const matrix = new ExactMatrix(12, 8);
    for (const [i, v] of vectors.entries()) matrix.upsert(i, v);
    const q = randomUnitVectors(1, 12, 99)[0]!;
    const got = matrix.search(q, 5);
    const expected = vectors
      .map((v, i) => ({ key: i, cosine: cosineOf(v, q) }))
      .sort((a, b) => b.cosine - a.cosine)
      .slice(0, 5);
    expect(got.map((g) => g.key)).toEqual(expected.map((e) => e.key));
    for (const [i, g] of got.entries()) expect(g.cosine).toBeCloseTo(expected[i]!.cosine, 5);
  });

  it('grows past its initial capacity without losing rows', () => {
    const matrix = new ExactMatrix(D, 1);
    const vectors = randomUnitVectors(100, D, 3);
    for (const [i, v] of vectors.entries()) matrix.upsert(i, v);
    expect(matrix.size).toBe(100);
    for (const [i, v] of vectors.entries()) expect(matrix.search(v, 1)[0]?.key).toBe(i);
  });

  it('replaces the vector of an existing key in place', () => {
    const matrix = new ExactMatrix(D);
    matrix.upsert(1, AXES[0]!);
    matrix.upsert(2, AXES[1]!);
    matrix.upsert(1, AXES[2]!);
    expect(matrix.size).toBe(2);
    expect(matrix.search(AXES[2]!, 1)[0]?.key).toBe(1);
    expect(matrix.search(AXES[0]!, 2).map((r) => r.cosine)).toEqual([0, 0]);
  });

  it('returns nothing for an empty matrix or k <= 0, and at most size results', () => {
    const matrix = new ExactMatrix(D);
    expect(matrix.search(AXES[0]!, 5)).toEqual([]);
    matrix.upsert(1, AXES[0]!);
    expect(matrix.search(AXES[0]!, 0)).toEqual([]);
    expect(matrix.search(AXES[0]!, 10)).toHaveLength(1);
  });

  it('keeps a copy of the vectors it is given', () => {
    const matrix = new ExactMatrix(D);
    const v = new Float32Array(AXES[0]!);
    matrix.upsert(1, v);
    v.set(AXES[1]!);
    expect(matrix.search(AXES[0]!, 1)[0]?.cosine).toBeCloseTo(1, 6);
  });

  it('agrees with brute force for any data and any query view offset', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 40 }),
        fc.integer({ min: 1, max: 10 }),
        fc.nat({ max: 5 }),
        fc.integer({ min: 1, max: 1_000_000 }),
        (n, k, pad, seed) => {
          const vectors = randomUnitVectors(n + 1, 8, seed);
          const q = vectors.pop()!;
          const matrix = new ExactMatrix(8, 4);
          for (const [i, v] of vectors.entries()) matrix.upsert(i, v);
          const backing = new Float32Array(8 + 2 * pad);
          backing.set(q, pad);
          const got = matrix.search(backing.subarray(pad, pad + 8), k);
          const expected = vectors
            .map((v, i) => ({ key: i, cosine: cosineOf(v, q) }))
            .sort((a, b) => b.cosine - a.cosine);
          expect(got).toHaveLength(Math.min(k, n));
          for (const [i, g] of got.entries()) expect(g.cosine).toBeCloseTo(expected[i]!.cosine, 4);
        },
      ),
      { numRuns: 200 },
    );
  });
});

describe('ExactMatrix.searchMany (a background job’s batch, in i8)', () => {
  it('keeps its i8 rows current through writes and removals made while it first makes them', async () => {
    const dims = 16;
    const m = new ExactMatrix(dims, 8);
    const first = randomUnitVectors(400, dims, 91);
    for (const [i, v] of first.entries()) m.upsert(i, v);
    const added = randomUnitVectors(40, dims, 92);
    const rewritten = randomUnitVectors(40, dims, 93);
    let slice = 0;
    // Slices of two rows: between them a removal moves the last row (not made yet) into an early slot
    // (made already), a row is rewritten and a new one grows the matrix.
    await m.searchMany([first[0]!], 1, 2 * dims, () => {
      const i = slice++;
      if (i >= 40) return;
      m.remove(i * 3);
      m.upsert(i * 3 + 1, rewritten[i]!);
      m.upsert(1_000 + i, added[i]!);
    });
    expect(slice).toBeGreaterThan(40);
    const live = [...m.keyList()];
    const lists = await m.searchMany(
      live.map((key) => m.get(key)!.slice()),
      1,
      1e9,
    );
    // Each live vector finds itself first: every i8 row holds its memory's vector.
    expect(lists.map((l) => l[0]?.key)).toEqual(live);
  });
});
