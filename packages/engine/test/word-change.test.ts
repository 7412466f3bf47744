import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { editDistanceWithin, saysTheSameWords, wordsOf } from '../src/word-change.js';

/** The textbook Levenshtein distance over words, for the property below. */
function distance(x: readonly string[], y: readonly string[]): number {
  const d = Array.from({ length: x.length + 1 }, (_, i) => [i, ...new Array<number>(y.length).fill(0)]);
  for (let j = 1; j <= y.length; j++) d[0]![j] = j;
  for (let i = 1; i <= x.length; i++)
    for (let j = 1; j <= y.length; j++)
      d[i]![j] = Math.min(
        d[i - 1]![j - 1]! + (x[i - 1] === y[j - 1] ? 0 : 1),
        d[i - 1]![j]! + 1,
        d[i]![j - 1]! + 1,
      );
  return d[x.length]![y.length]!;
}

describe('saysTheSameWords', () => {
  it('keeps a near-duplicate: a word more or one replaced in ten', () => {
    expect(
      saysTheSameWords(
        'Deploy to staging failed because the auth token expired at midnight UTC',
        'The deploy to staging failed because the auth token expired at midnight UTC',
        0.1,
      ),
    ).toBe(true);
  });

  it('tells apart the same words in another order, and a statement from its negation', () => {
    const pairs = [
      [
        'Copied the production database into the staging environment before the schema migration',
        'Copied the staging database into the production environment before the schema migration',
      ],
      [
        'The user wants tests written before code and never wants mocks',
        'The user wants mocks written before code and never wants tests',
      ],
      ['Do not run the migration script on Friday', 'Do run the migration script on Friday'],
      [
        'We always deploy the billing service on Tuesdays after the weekly planning meeting with the whole team',
        "We don't deploy the billing service on Tuesdays after the weekly planning meeting with the whole team",
      ],
    ];
    for (const [a, b] of pairs) expect(saysTheSameWords(a!, b!, 0.1), `${a} / ${b}`).toBe(false);
  });

  it("reads a contraction's negation as one: don't and do not are the same words", () => {
    expect(wordsOf("Don't run it — it's late")).toEqual(['do', "n't", 'run', 'it', "it's", 'late']);
    expect(saysTheSameWords("don't run the script", 'do not run the script', 0.25)).toBe(true);
  });

  it('agrees with the textbook distance within the band, whatever the words', () => {
    const words = fc.array(fc.constantFrom('a', 'b', 'c', 'd'), { maxLength: 24 });
    fc.assert(
      fc.property(words, words, fc.integer({ min: 0, max: 6 }), (x, y, k) => {
        expect(editDistanceWithin(x, y, k)).toBe(distance(x, y) <= k);
      }),
      { numRuns: 5_000 },
    );
  });
});
