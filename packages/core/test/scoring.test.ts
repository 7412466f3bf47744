import { diversify, importanceFactor, rrfTerm, tagAwareRedundancy, tagJaccard } from '@cairn/core';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

describe('rrfTerm', () => {
  it('is weight / (k + rank)', () => {
    expect(rrfTerm(1, 60, 1)).toBeCloseTo(1 / 61, 15);
    expect(rrfTerm(2, 60, 10)).toBeCloseTo(2 / 70, 15);
    expect(rrfTerm(0.5, 0, 4)).toBeCloseTo(0.125, 15);
  });

  it('contributes nothing for a leg that did not return the document', () => {
    expect(rrfTerm(1, 60, null)).toBe(0);
  });

  it('contributes nothing when the leg is weighted 0', () => {
    expect(rrfTerm(0, 60, 1)).toBe(0);
  });

  it('is strictly decreasing in rank for a positive weight', () => {
    fc.assert(
      fc.property(
        fc.double({ min: 0.01, max: 100, noNaN: true }),
        fc.integer({ min: 0, max: 1000 }),
        fc.integer({ min: 1, max: 10_000 }),
        (weight, k, rank) => {
          expect(rrfTerm(weight, k, rank)).toBeGreaterThan(rrfTerm(weight, k, rank + 1));
          expect(rrfTerm(weight, k, rank)).toBeGreaterThan(0);
        },
      ),
    );
  });
});

describe('importanceFactor', () => {
  it('is exactly 1 for the default importance 0.5, whatever the weight', () => {
    for (const w of [0, 0.3, 1]) expect(importanceFactor(0.5, w)).toBe(1);
  });

  it('spans [1 - w, 1 + w] over importance 0..1', () => {
    expect(importanceFactor(0, 0.3)).toBeCloseTo(0.7, 15);
    expect(importanceFactor(1, 0.3)).toBeCloseTo(1.3, 15);
  });

  it('clamps importance outside [0, 1]', () => {
    expect(importanceFactor(-5, 0.3)).toBe(importanceFactor(0, 0.3));
    expect(importanceFactor(7, 0.3)).toBe(importanceFactor(1, 0.3));
  });

  it('is 1 for every importance when the weight is 0', () => {
    fc.assert(
      fc.property(fc.double({ min: 0, max: 1, noNaN: true }), (imp) => {
        expect(importanceFactor(imp, 0)).toBe(1);
      }),
    );
  });

  it('never decreases as importance grows', () => {
    fc.assert(
      fc.property(
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        (a, b, w) => {
          const [lo, hi] = a <= b ? [a, b] : [b, a];
          expect(importanceFactor(lo, w)).toBeLessThanOrEqual(importanceFactor(hi, w));
        },
      ),
    );
  });
});

/** A similarity function over explicit vectors (plain cosine of small arrays). */
function cosineOf(vectors: ReadonlyArray<readonly number[] | null>) {
  return (i: number, j: number): number | null => {
    const a = vectors[i];
    const b = vectors[j];
    if (!a || !b) return null;
    let ab = 0;
    let aa = 0;
    let bb = 0;
    for (let d = 0; d < a.length; d++) {
      ab += a[d]! * b[d]!;
      aa += a[d]! * a[d]!;
      bb += b[d]! * b[d]!;
    }
    return aa === 0 || bb === 0 ? 0 : ab / Math.sqrt(aa * bb);
  };
}

describe('diversify', () => {
  // Relevance on a 1e-4 grid: a subnormal top score overflows the 1/maxRelevance normaliser to Infinity
  // and a 0 relevance then scores NaN (reported separately); real RRF scores are never that small.
  const relevanceValue = fc.integer({ min: 0, max: 10_000 }).map((n) => n / 10_000);
  const sortedRelevance = fc
    .array(relevanceValue, { minLength: 0, maxLength: 30 })
    .map((r) => [...r].sort((a, b) => b - a));

  it('keeps relevance order when lambda is 1 and duplicate suppression is off', () => {
    fc.assert(
      fc.property(sortedRelevance, fc.integer({ min: 0, max: 40 }), (relevance, k) => {
        const res = diversify(relevance, () => 0.5, { k, lambda: 1, duplicateThreshold: 1.01 });
        expect(res.selected).toEqual(relevance.slice(0, k).map((_, i) => i));
        expect(res.duplicates.size).toBe(0);
      }),
    );
  });

  it('keeps input order on equal relevance when lambda is 1', () => {
    const res = diversify([1, 1, 1, 1], () => 0, { k: 4, lambda: 1, duplicateThreshold: 2 });
    expect(res.selected).toEqual([0, 1, 2, 3]);
  });

  it('drops an item whose similarity to a selected item reaches the threshold', () => {
    // 1 is identical to 0 (cosine 1); 2 is orthogonal.
    const sim = cosineOf([
      [1, 0],
      [1, 0],
      [0, 1],
    ]);
    const res = diversify([0.9, 0.8, 0.7], sim, { k: 3, lambda: 1, duplicateThreshold: 0.97 });
    expect(res.selected).toEqual([0, 2]);
    expect(res.duplicates.get(1)).toBe(0);
  });

  it('treats similarity exactly at the threshold as a duplicate, and just below it as distinct', () => {
    const at = diversify([1, 0.9], () => 0.9, { k: 2, lambda: 1, duplicateThreshold: 0.9 });
    expect(at.selected).toEqual([0]);
    expect([...at.duplicates]).toEqual([[1, 0]]);
    const below = diversify([1, 0.9], () => 0.8999, { k: 2, lambda: 1, duplicateThreshold: 0.9 });
    expect(below.selected).toEqual([0, 1]);
    expect(below.duplicates.size).toBe(0);
  });

  it('treats pairs without vectors as unrelated', () => {
    const sim = cosineOf([[1, 0], null, [1, 0]]);
    const res = diversify([0.9, 0.8, 0.7], sim, { k: 3, lambda: 1, duplicateThreshold: 0.97 });
    expect(res.selected).toEqual([0, 1]);
    expect(res.duplicates.get(2)).toBe(0);
  });

  it('with a low lambda prefers a dissimilar item over a more relevant near-copy', () => {
    const sim = cosineOf([
      [1, 0],
      [0.95, 0.31],
      [0, 1],
    ]);
    const res = diversify([1, 0.95, 0.6], sim, { k: 2, lambda: 0.3, duplicateThreshold: 2 });
    expect(res.selected).toEqual([0, 2]);
  });

  it('never selects an item twice, never more than k, and never selects a duplicate', () => {
    const vec = fc.option(
      fc.array(fc.double({ min: -1, max: 1, noNaN: true }), { minLength: 3, maxLength: 3 }),
      {
        nil: null,
      },
    );
    fc.assert(
      fc.property(
        fc.array(fc.tuple(relevanceValue, vec), { maxLength: 25 }),
        fc.integer({ min: 0, max: 30 }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.double({ min: 0, max: 1.5, noNaN: true }),
        (items, k, lambda, duplicateThreshold) => {
          items.sort((a, b) => b[0] - a[0]);
          const sim = cosineOf(items.map((it) => it[1]));
          const res = diversify(
            items.map((it) => it[0]),
            sim,
            { k, lambda, duplicateThreshold },
          );
          expect(res.selected.length).toBeLessThanOrEqual(k);
          expect(new Set(res.selected).size).toBe(res.selected.length);
          for (const i of res.selected) expect(res.duplicates.has(i)).toBe(false);
          for (const [dup, of] of res.duplicates) {
            expect(res.selected).toContain(of);
            expect(sim(dup, of)).toBeGreaterThanOrEqual(duplicateThreshold);
          }
          // No two picks are duplicates of each other, so a duplicate is never picked while a
          // non-duplicate is left: everything is selected, a duplicate, or left over because k was reached.
          for (const a of res.selected)
            for (const b of res.selected) {
              const s = a === b ? null : sim(a, b);
              if (s !== null && Number.isFinite(s)) expect(s).toBeLessThan(duplicateThreshold);
            }
          if (res.selected.length < k) expect(res.selected.length + res.duplicates.size).toBe(items.length);
        },
      ),
    );
  });
});

/** MMR as it was written first: every remaining item compared with the whole page, each round. */
function diversifyByWholePage(
  relevance: readonly number[],
  similarity: (i: number, j: number) => number | null,
  opts: { k: number; lambda: number; duplicateThreshold: number },
): { selected: number[]; duplicates: Map<number, number> } {
  const selected: number[] = [];
  const duplicates = new Map<number, number>();
  const remaining = new Set(relevance.map((_, i) => i));
  const maxRel = relevance.length > 0 ? Math.max(...relevance) : 1;
  const norm = maxRel > 0 && Number.isFinite(1 / maxRel) ? 1 / maxRel : 1;
  while (selected.length < opts.k && remaining.size > 0) {
    let best = -1;
    let bestValue = Number.NEGATIVE_INFINITY;
    for (const i of remaining) {
      let maxSim = 0;
      let dupOf = -1;
      for (const j of selected) {
        const s = similarity(i, j);
        if (s !== null && s >= opts.duplicateThreshold && dupOf < 0) dupOf = j;
        if (s !== null && s > maxSim) maxSim = s;
      }
      if (dupOf >= 0) {
        duplicates.set(i, dupOf);
        continue;
      }
      const value = opts.lambda * relevance[i]! * norm - (1 - opts.lambda) * maxSim;
      if (value > bestValue) {
        bestValue = value;
        best = i;
      }
    }
    for (const d of duplicates.keys()) remaining.delete(d);
    if (best < 0) break;
    selected.push(best);
    remaining.delete(best);
  }
  return { selected, duplicates };
}

describe('diversify with MMR on (lambda < 1)', () => {
  it('property: picks and drops what comparing each item with the whole page did', () => {
    const vec = fc.array(fc.double({ min: -1, max: 1, noNaN: true }), { minLength: 3, maxLength: 3 });
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.double({ min: 0, max: 10, noNaN: true }), vec), { maxLength: 30 }),
        fc.integer({ min: 0, max: 30 }),
        fc.double({ min: 0, max: 0.99, noNaN: true }),
        fc.double({ min: 0.5, max: 1.2, noNaN: true }),
        (items, k, lambda, duplicateThreshold) => {
          items.sort((a, b) => b[0] - a[0]);
          const vs = items.map((it) => it[1]);
          const sim = (i: number, j: number) => {
            const [a, b] = [vs[i]!, vs[j]!];
            const dot = a[0]! * b[0]! + a[1]! * b[1]! + a[2]! * b[2]!;
            const n = Math.hypot(...a) * Math.hypot(...b);
            return n === 0 ? null : dot / n;
          };
          const relevance = items.map((it) => it[0]);
          const opts = { k, lambda, duplicateThreshold };
          const now = diversify(relevance, sim, opts);
          const before = diversifyByWholePage(relevance, sim, opts);
          expect(now.selected).toEqual(before.selected);
          expect([...now.duplicates].sort()).toEqual([...before.duplicates].sort());
        },
      ),
    );
  });

  it('compares each item with the item picked last only: k × pool similarities, not k² × pool', () => {
    let calls = 0;
    const n = 1_000;
    const k = 100;
    const res = diversify(
      Array.from({ length: n }, (_, i) => n - i),
      (i, j) => {
        calls++;
        return ((i * 7 + j * 13) % 100) / 1_000;
      },
      { k, lambda: 0.01, duplicateThreshold: 2 },
    );
    expect(res.selected).toHaveLength(k);
    // Recomputed against the whole page each round this was ~4,950,000 (2.5 s of a server's thread).
    expect(calls).toBeLessThanOrEqual(k * n);
  });
});

describe('tag-aware redundancy', () => {
  it('is max(cosine, w · Jaccard), null when neither is known', () => {
    expect(tagJaccard(['a', 'b'], ['b', 'c'])).toBeCloseTo(1 / 3);
    expect(tagJaccard([], [])).toBe(0);
    expect(tagAwareRedundancy(0.1, ['x'], ['x'], 0.35)).toBeCloseTo(0.35);
    expect(tagAwareRedundancy(0.9, ['x'], ['x'], 0.35)).toBeCloseTo(0.9);
    expect(tagAwareRedundancy(null, ['x'], ['y'], 0.35)).toBeNull();
    expect(tagAwareRedundancy(null, ['x'], ['x'], 0)).toBeNull();
  });

  it('never makes a duplicate out of tags, whatever the tag weight and the threshold', () => {
    const tags = fc.array(fc.constantFrom('a', 'b', 'c', 'd'), { maxLength: 4 });
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.integer({ min: 1, max: 100 }), tags), { minLength: 1, maxLength: 20 }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        (items, lambda, w, duplicateThreshold) => {
          items.sort((x, y) => y[0] - x[0]);
          // No vectors (cosine unknown), tags as the redundancy only: whatever the weight and threshold.
          const res = diversify(
            items.map((it) => it[0] / 100),
            () => null,
            { k: items.length, lambda, duplicateThreshold },
            (i, j) => tagAwareRedundancy(null, items[i]![1], items[j]![1], w),
          );
          expect(res.duplicates.size).toBe(0);
          expect(res.selected).toHaveLength(items.length);
        },
      ),
    );
  });
});
