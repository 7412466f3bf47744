import { describe, expect, it } from 'vitest';
import { addedScale, factorOffset, factorParts, type HitParts } from '../src/score-parts.js';
import { buildSearchRequest, EMPTY_FORM } from '../src/search-request.js';

describe('buildSearchRequest', () => {
  it('sends only what the form sets, so the server defaults the rest', () => {
    expect(buildSearchRequest({ ...EMPTY_FORM, namespace: ' ns ', query: 'q' })).toEqual({
      namespace: 'ns',
      query: 'q',
      explain: 'hits',
      k: 10,
    });
  });

  it('maps filters, weights, decay, rerank and a listing offset', () => {
    const req = buildSearchRequest({
      ...EMPTY_FORM,
      namespace: 'ns',
      query: ' ',
      kinds: 'turn, fact,',
      tags: 'bug',
      since: '7d',
      until: '1700000000000',
      vector: '0.5',
      decay: '30d',
      rerank: 'off',
      explain: 'full',
      offset: 20,
    });
    expect(req).toEqual({
      namespace: 'ns',
      query: ' ',
      explain: 'full',
      k: 10,
      filters: { kinds: ['turn', 'fact'], tags: ['bug'], since: '7d', until: 1_700_000_000_000 },
      weights: { vector: 0.5 },
      decay: '30d',
      rerank: 'off',
      offset: 20,
    });
  });

  it('never sends an offset with a query (only listings page)', () => {
    expect(
      buildSearchRequest({ ...EMPTY_FORM, namespace: 'ns', query: 'x', offset: 10 }).offset,
    ).toBeUndefined();
  });
});

describe('score parts', () => {
  const parts = (p: Partial<HitParts>): HitParts =>
    ({ lexical: 0, vector: 0, routes: 0, agent: 1, session: 0, recency: 1, importance: 1, ...p }) as HitParts;

  it('scales the stacked bars by the largest additive sum on the page', () => {
    expect(
      addedScale([parts({ lexical: 0.01, vector: 0.002 }), parts({ lexical: 0.005, session: 0.001 })]),
    ).toBe(0.012);
  });

  it('treats a factor the server did not send as neutral, and clips bars at ×0 and ×2', () => {
    expect(factorParts(parts({ recency: 0.9 })).find((f) => f.key === 'confidence')?.value).toBe(1);
    expect(factorOffset(0.9)).toBeCloseTo(-0.1);
    expect(factorOffset(3)).toBe(1);
    expect(factorOffset(-1)).toBe(-1);
  });
});
