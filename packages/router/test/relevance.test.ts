import { queryNames, relevanceOf } from '@cairn/router';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

const coverage = (words: Array<[string, number]>, matched: Record<number, string[]>) => ({
  words: words.map(([word, idf]) => ({ word, idf })),
  matched: new Map(Object.entries(matched).map(([k, ws]) => [Number(k), new Set(ws)])),
});

describe('queryNames', () => {
  it('takes capitalised words after the first, not question words', () => {
    expect([...queryNames('What did Caroline realize after her charity race?')]).toEqual(['caroline']);
    expect([...queryNames('Deploy target for Berlin and Tokyo')]).toEqual(['berlin', 'tokyo']);
    expect([...queryNames('When Did I go')]).toEqual([]);
  });
});

describe('relevanceOf', () => {
  const words: Array<[string, number]> = [
    ['caroline', 0.5],
    ['charity', 4],
    ['race', 3],
  ];

  it('is relevant when one of the first hits says every word, none when they say nothing', () => {
    const q = 'What did Caroline realize after her charity race?';
    expect(relevanceOf(q, coverage(words, { 1: [], 2: ['caroline', 'charity', 'race'] }), [1, 2])).toEqual({
      score: 1,
      level: 'relevant',
      missing: [],
    });
    expect(relevanceOf(q, coverage(words, { 1: [] }), [1])).toMatchObject({ score: 0, level: 'none' });
    expect(relevanceOf(q, coverage(words, {}), [])).toMatchObject({ score: 0, level: 'none' });
  });

  it('weights a missing name up: the right topic about another person is a weak match', () => {
    const q = 'What did Caroline realize after her charity race?';
    const r = relevanceOf(q, coverage(words, { 1: ['charity', 'race'] }), [1]);
    // caroline: max(0.5, 1) × 3 = 3 of 3 + 4 + 3 = 10.
    expect(r.score).toBeCloseTo(0.7, 3);
    expect(r.missing).toEqual(['caroline']);
    const lower = relevanceOf(q.toLowerCase(), coverage(words, { 1: ['charity', 'race'] }), [1]);
    expect(lower.score).toBeCloseTo(7 / 8, 3);
  });

  it('counts only the first hits', () => {
    const q = 'charity race';
    const cov = coverage(words.slice(1), { 1: [], 2: [], 3: [], 4: ['charity', 'race'] });
    expect(relevanceOf(q, cov, [1, 2, 3, 4]).level).toBe('none');
    expect(relevanceOf(q, cov, [4, 1, 2, 3]).level).toBe('relevant');
  });

  it('property: the score is in [0, 1] and grows when a hit says more of the query', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.stringMatching(/^[a-z]{2,6}$/), { minLength: 1, maxLength: 6 }),
        fc.array(fc.double({ min: 0, max: 8, noNaN: true }), { minLength: 6, maxLength: 6 }),
        fc.array(fc.boolean(), { minLength: 6, maxLength: 6 }),
        (ws, idfs, said) => {
          const cov = coverage(
            ws.map((w, i) => [w, idfs[i]!]),
            { 1: ws.filter((_, i) => said[i]) },
          );
          const r = relevanceOf(ws.join(' '), cov, [1]);
          expect(r.score).toBeGreaterThanOrEqual(0);
          expect(r.score).toBeLessThanOrEqual(1);
          const all = relevanceOf(
            ws.join(' '),
            coverage(
              ws.map((w, i) => [w, idfs[i]!]),
              { 1: ws },
            ),
            [1],
          );
          expect(all.score).toBeGreaterThanOrEqual(r.score);
          expect(all.score).toBe(1);
        },
      ),
    );
  });
});
