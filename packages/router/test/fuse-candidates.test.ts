import { resolveDecay } from '@cairn/core';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { applyRecency, fuseCandidates, sortFused } from '../src/index.js';
import { fusionOptions, memory } from './helpers.js';

const opts = fusionOptions();
const ranked = (keys: number[]) =>
  keys.map((key, i) => ({ key, rank: i + 1, bm25: -10 + i, cosine: 1 - i / 100 }));

describe('fuseCandidates', () => {
  it('scores by weighted RRF, counts each document once and sorts best first', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.integer({ min: 1, max: 60 }), { maxLength: 30 }),
        fc.uniqueArray(fc.integer({ min: 1, max: 60 }), { maxLength: 30 }),
        (lexKeys, vecKeys) => {
          const live = new Map([...lexKeys, ...vecKeys].map((k) => [k, memory(k)]));
          const fused = sortFused(fuseCandidates(ranked(lexKeys), ranked(vecKeys), live, opts));
          expect(new Set(fused.map((f) => f.key)).size).toBe(fused.length);
          expect(fused.length).toBe(new Set([...lexKeys, ...vecKeys]).size);
          for (const f of fused) {
            const expected =
              (f.bm25Rank ? 1 / (60 + f.bm25Rank) : 0) + (f.vecRank ? 1 / (60 + f.vecRank) : 0);
            expect(f.rrf).toBeCloseTo(expected, 12);
          }
          for (let i = 1; i < fused.length; i++)
            expect(fused[i - 1]!.score).toBeGreaterThanOrEqual(fused[i]!.score);
        },
      ),
    );
  });

  it('is monotonic in rank: a better rank in one leg, all else equal, never scores lower', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.integer({ min: 1, max: 100 }), { minLength: 2, maxLength: 40 }),
        (keys) => {
          const live = new Map(keys.map((k) => [k, memory(k)]));
          const fused = fuseCandidates(ranked(keys), [], live, opts);
          const byKey = new Map(fused.map((f) => [f.key, f.score]));
          for (let i = 1; i < keys.length; i++)
            expect(byKey.get(keys[i - 1]!)!).toBeGreaterThan(byKey.get(keys[i]!)!);
        },
      ),
    );
  });

  it('drops candidates that are not live before scoring them', () => {
    const live = new Map([[1, memory(1)]]);
    const fused = fuseCandidates(ranked([1, 2]), ranked([3, 1]), live, opts);
    expect(fused.map((f) => f.key)).toEqual([1]);
  });

  it('multiplies by importance, and a caller-given decay multiplies by exp(-age / tau) from now', () => {
    const day = 86_400_000;
    const live = new Map([
      [1, memory(1, { ts: 0, importance: 1 })],
      [2, memory(2, { ts: 30 * day, importance: 0.5 })],
    ]);
    const decayOpts = { ...opts, now: 30 * day, decay: resolveDecay({ halfLifeMs: 30 * day }) };
    const decayed = fuseCandidates(ranked([1, 2]), [], live, decayOpts);
    const plan = { weight: 0, reach: 0, intent: { kind: 'none' as const }, peerMargin: 0, peerDepth: 0 };
    expect(applyRecency(decayed, decayOpts, plan, new Set())).toBeNull();
    const one = decayed.find((f) => f.key === 1)!;
    expect(one.recency).toBeCloseTo(0.5, 10);
    expect(one.parts.importance).toBeCloseTo(1.3, 10);
    expect(one.score).toBeCloseTo((1 / 61) * 0.5 * 1.3, 12);
    const noVector = fuseCandidates([], ranked([1]), live, { ...opts, weights: { lexical: 1, vector: 0 } });
    expect(noVector).toEqual([]);
  });

  it('fuses named-field routes into their parent: one candidate, its best rank per leg (or the sum), the routes listed', () => {
    const routeList = (route: string, leg: 'lexical' | 'vector', keys: number[]) => ({
      route,
      leg,
      candidates: keys.map((key, i) => ({ key, rank: i + 1 })),
    });
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.integer({ min: 1, max: 30 }), { maxLength: 15 }),
        fc.uniqueArray(fc.integer({ min: 1, max: 30 }), { maxLength: 15 }),
        fc.uniqueArray(fc.integer({ min: 1, max: 30 }), { maxLength: 15 }),
        fc.constantFrom('best' as const, 'sum' as const),
        fc.double({ min: 0, max: 3, noNaN: true }),
        (lexKeys, factKeys, nextKeys, routeFusion, routeWeight) => {
          const live = new Map([...lexKeys, ...factKeys, ...nextKeys].map((k) => [k, memory(k)]));
          const lists = [
            routeList('facts', 'lexical', factKeys),
            routeList('facts', 'vector', nextKeys),
            routeList('next', 'lexical', nextKeys),
          ];
          const o = { ...opts, routeFusion, routeWeight, routeWeights: { next: 0.25 } };
          const fused = fuseCandidates(ranked(lexKeys), [], live, o, lists);
          expect(new Set(fused.map((f) => f.key)).size).toBe(fused.length);
          const term = (w: number, keys: number[], key: number) =>
            keys.includes(key) ? w / (60 + keys.indexOf(key) + 1) : 0;
          for (const f of fused) {
            const own = term(1, lexKeys, f.key);
            const factLex = term(routeWeight, factKeys, f.key);
            const nextLex = term(0.25, nextKeys, f.key);
            const factVec = term(routeWeight, nextKeys, f.key);
            const lexical = routeFusion === 'sum' ? own + factLex + nextLex : Math.max(own, factLex, nextLex);
            expect(f.rrf).toBeCloseTo(lexical + factVec, 12);
            expect(f.rrf).toBeCloseTo(f.parts.lexical + f.parts.vector + f.parts.routes, 12);
            const routes = [
              ...(own > 0 ? ['text'] : []),
              // A route weighted 0 is not searched, so it finds nothing.
              ...(routeWeight > 0 && (factKeys.includes(f.key) || nextKeys.includes(f.key)) ? ['facts'] : []),
              ...(nextKeys.includes(f.key) ? ['next'] : []),
            ];
            expect(f.routes).toEqual(routes);
          }
        },
      ),
    );
  });

  it('leaves scores as they were when the namespace has no routes', () => {
    const live = new Map([1, 2, 3].map((k) => [k, memory(k)]));
    const plain = fuseCandidates(ranked([1, 2]), ranked([3]), live, opts);
    const withNone = fuseCandidates(ranked([1, 2]), ranked([3]), live, opts, []);
    expect(withNone).toEqual(plain);
    expect(plain.every((f) => f.routes === undefined && f.parts.routes === 0)).toBe(true);
  });
});
