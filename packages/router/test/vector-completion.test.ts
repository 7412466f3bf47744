import { dot, l2Normalize } from '@cairn/core';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { completeVectorList } from '../src/index.js';

const unit = (...xs: number[]) => l2Normalize(Float32Array.from(xs));
const query = unit(1, 0, 0);

/** Stored vectors by key, answering as the vector leg does (keys without a vector are left out). */
function storedVectors(byKey: Record<number, Float32Array>) {
  const asked: number[][] = [];
  return {
    asked,
    vectorsFor(_namespace: string, keys: readonly number[]) {
      asked.push([...keys]);
      return new Map(keys.filter((k) => byKey[k]).map((k) => [k, byKey[k]!] as const));
    },
  };
}

const lexical = (keys: number[]) => keys.map((key, i) => ({ key, rank: i + 1, bm25: -10 + i }));

describe('completeVectorList', () => {
  it("puts a lexical candidate the graph missed at its exact cosine's place, and re-scores the graph's", () => {
    const leg = storedVectors({ 1: unit(0.9, 0.1, 0), 2: unit(0.5, 0.5, 0), 3: unit(0.99, 0.01, 0) });
    // The graph's cosines are its quantised ones: off from the stored vectors'.
    const graph = [
      { key: 1, rank: 1, cosine: 0.9 },
      { key: 2, rank: 2, cosine: 0.8 },
    ];
    const done = completeVectorList(leg, 'ns', query, graph, lexical([9, 3]), 0, 50);
    expect(done.candidates.map((c) => c.key)).toEqual([3, 1, 2]);
    expect(done.candidates.map((c) => c.rank)).toEqual([1, 2, 3]);
    expect(done.candidates[1]!.cosine).toBeCloseTo(dot(query, unit(0.9, 0.1, 0)), 6);
    expect(done.candidates[2]!.cosine).toBeCloseTo(Math.SQRT1_2, 6);
    // Key 9 has no stored vector (not embedded yet): left out, not scored 0.
    expect(done.fromLexical).toBe(1);
    expect(leg.asked).toEqual([[1, 2, 9, 3]]);
  });

  it('keeps the floor and the limit, and counts only lexical candidates that made the list', () => {
    const leg = storedVectors({
      1: unit(1, 0, 0),
      2: unit(0.2, 1, 0),
      3: unit(0.8, 0.6, 0),
      4: unit(0, 0, 1),
    });
    const graph = [{ key: 1, rank: 1, cosine: 1 }];
    const done = completeVectorList(leg, 'ns', query, graph, lexical([4, 2, 3, 1]), 0.5, 2);
    expect(done.candidates.map((c) => c.key)).toEqual([1, 3]);
    expect(done.fromLexical).toBe(1);
  });

  it("re-scores the graph's best only; deeper graph candidates keep the graph's cosine", () => {
    const leg = storedVectors({ 1: unit(1, 0, 0), 2: unit(0, 1, 0), 3: unit(0.6, 0.8, 0) });
    const graph = [
      { key: 1, rank: 1, cosine: 0.99 },
      { key: 2, rank: 2, cosine: 0.9 },
    ];
    const done = completeVectorList(leg, 'ns', query, graph, lexical([3]), 0, 10, 1);
    expect(done.candidates.map((c) => [c.key, Number(c.cosine.toFixed(4))])).toEqual([
      [1, 1],
      [2, 0.9],
      [3, 0.6],
    ]);
    expect(leg.asked).toEqual([[1, 3]]);
  });

  it("keeps a graph candidate's own cosine when its stored vector is gone", () => {
    const leg = storedVectors({ 2: unit(0.6, 0.8, 0) });
    const done = completeVectorList(
      leg,
      'ns',
      query,
      [{ key: 1, rank: 1, cosine: 0.7 }],
      lexical([2]),
      0,
      10,
    );
    expect(done.candidates).toEqual([
      { key: 1, rank: 1, cosine: 0.7 },
      { key: 2, rank: 2, cosine: expect.closeTo(0.6, 6) },
    ]);
  });

  it('is the exact top of the union: sorted, dense ranks, each key once, within the limit', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.integer({ min: 1, max: 40 }), { maxLength: 25 }),
        fc.uniqueArray(fc.integer({ min: 1, max: 40 }), { maxLength: 25 }),
        fc.integer({ min: 1, max: 30 }),
        fc.double({ min: -1, max: 1, noNaN: true }),
        (graphKeys, lexKeys, limit, floor) => {
          const byKey: Record<number, Float32Array> = {};
          for (const k of [...graphKeys, ...lexKeys])
            byKey[k] = unit(Math.cos(k), Math.sin(k), 0.1 * (k % 3));
          const graph = graphKeys.map((key, i) => ({ key, rank: i + 1, cosine: 0 }));
          const done = completeVectorList(
            storedVectors(byKey),
            'ns',
            query,
            graph,
            lexical(lexKeys),
            floor,
            limit,
            graph.length,
          );
          const union = [...new Set([...graphKeys, ...lexKeys])]
            .map((key) => ({ key, cosine: dot(query, byKey[key]!) }))
            .filter((c) => c.cosine >= floor)
            .sort((a, b) => b.cosine - a.cosine || a.key - b.key)
            .slice(0, limit);
          expect(done.candidates.map((c) => c.key)).toEqual(union.map((c) => c.key));
          expect(done.candidates.map((c) => c.rank)).toEqual(union.map((_, i) => i + 1));
          expect(done.fromLexical).toBe(done.candidates.filter((c) => !graphKeys.includes(c.key)).length);
        },
      ),
    );
  });
});
