import {
  DEFAULT_INPUT_LIMITS,
  DEFAULT_RECENCY_OPTIONS,
  DEFAULT_SEARCH_OPTIONS,
  hasFilters,
  MS_PER_DAY,
  parseSearchRequest,
  resolveSearch,
  type SearchRequest,
  searchDefaultsFor,
  withDefaults,
} from '@cairn/core';
import { describe, expect, it } from 'vitest';
import { cairnErrorFrom } from './helpers.js';

describe('parseSearchRequest', () => {
  it('parses a minimal request', () => {
    expect(parseSearchRequest({ namespace: 'a', query: 'hello' })).toEqual({
      namespace: 'a',
      query: 'hello',
    });
  });

  it('takes relative windows back from now, and a hard window (maxAge) that tightens since', () => {
    const now = Date.UTC(2024, 5, 1);
    const rel = parseSearchRequest({
      namespace: 'a',
      query: 'q',
      now,
      filters: { since: '90d', until: '12h' },
    });
    expect(rel.filters).toEqual({ since: now - 90 * MS_PER_DAY, until: now - 12 * 3_600_000 });
    // The window wins over an older since, and a newer since wins over the window.
    const resolved = (wire: Record<string, unknown>) =>
      resolveSearch(parseSearchRequest({ namespace: 'a', query: 'q', now, ...wire }));
    expect(resolved({ maxAge: '30d', filters: { since: 0 } }).filters).toEqual({
      since: now - 30 * MS_PER_DAY,
    });
    expect(resolved({ maxAge: '30d', filters: { since: '1d' } }).filters.since).toBe(now - MS_PER_DAY);
    // An engine caller (no wire parsing) gets the same window, and a bad offset is named.
    expect(resolveSearch({ namespace: 'a', query: 'q', now, maxAge: 7 * MS_PER_DAY }).filters.since).toBe(
      now - 7 * MS_PER_DAY,
    );
    expect(cairnErrorFrom(() => resolveSearch({ namespace: 'a', query: '', offset: 1.5 }))).toMatchObject({
      data: { field: 'offset' },
    });
    expect(cairnErrorFrom(() => resolved({ maxAge: 'soon' }))).toMatchObject({ data: { field: 'maxAge' } });
    expect(
      cairnErrorFrom(() => parseSearchRequest({ namespace: 'a', query: 'q', filters: { since: '90x' } })),
    ).toMatchObject({
      code: 'INVALID_INPUT',
      data: { field: 'filters.since' },
    });
  });

  it('converts decay, now and time filters from their wire forms', () => {
    const req = parseSearchRequest({
      namespace: 'a',
      query: 'q',
      decay: '7d',
      now: '2024-06-01T00:00:00Z',
      filters: { since: '2024-01-01T00:00:00Z', until: 1_717_200_000_000, kinds: ['fact'], tags: ['x'] },
    });
    expect(req.decay).toEqual({ halfLifeMs: 7 * MS_PER_DAY });
    expect(req.now).toBe(Date.UTC(2024, 5, 1));
    expect(req.filters).toEqual({
      since: Date.UTC(2024, 0, 1),
      until: 1_717_200_000_000,
      kinds: ['fact'],
      tags: ['x'],
    });
  });

  it("keeps decay 'off' and object decay specs", () => {
    expect(parseSearchRequest({ namespace: 'a', query: 'q', decay: 'off' }).decay).toBe('off');
    expect(parseSearchRequest({ namespace: 'a', query: 'q', decay: { tauMs: 5 } }).decay).toEqual({
      tauMs: 5,
    });
  });

  it.each([
    ['namespace', { query: 'q' }],
    ['namespace', { namespace: 'has space', query: 'q' }],
    ['query', { namespace: 'a' }],
    ['query', { namespace: 'a', query: 7 }],
    ['query', { namespace: 'a', query: 'x'.repeat(DEFAULT_INPUT_LIMITS.maxQueryChars + 1) }],
    ['k', { namespace: 'a', query: 'q', k: 0 }],
    ['k', { namespace: 'a', query: 'q', k: 1.5 }],
    ['k', { namespace: 'a', query: 'q', k: DEFAULT_INPUT_LIMITS.maxK + 1 }],
    [
      'candidatePool',
      { namespace: 'a', query: 'q', candidatePool: DEFAULT_INPUT_LIMITS.maxCandidatePool + 1 },
    ],
    ['weights.lexical', { namespace: 'a', query: 'q', weights: { lexical: -1 } }],
    ['weights.vector', { namespace: 'a', query: 'q', weights: { vector: 'high' } }],
    ['decay', { namespace: 'a', query: 'q', decay: 'fortnightly' }],
    ['decay', { namespace: 'a', query: 'q', decay: { halfLifeMs: 1, tauMs: 2 } }],
    ['decay.halfLifeMs', { namespace: 'a', query: 'q', decay: { halfLifeMs: -5 } }],
    ['now', { namespace: 'a', query: 'q', now: '1700000000000' }],
    ['filters.since', { namespace: 'a', query: 'q', filters: { since: 'yesterday' } }],
    ['filters.until', { namespace: 'a', query: 'q', filters: { until: -3 } }],
    ['filters.kinds.0', { namespace: 'a', query: 'q', filters: { kinds: [''] } }],
    ['mmrLambda', { namespace: 'a', query: 'q', mmrLambda: 2 }],
    ['agentBoost', { namespace: 'a', query: 'q', agentBoost: -0.1 }],
    ['sessionMatch', { namespace: 'a', query: 'q', sessionMatch: 'high' }],
    ['sessionSupport', { namespace: 'a', query: 'q', sessionSupport: 1.5 }],
    ['explain', { namespace: 'a', query: 'q', explain: 'everything' }],
  ])('names the field %s when it is invalid', (field, input) => {
    const err = cairnErrorFrom(() => parseSearchRequest(input));
    expect(err.code).toBe('INVALID_INPUT');
    expect(err.data.field).toBe(field);
    expect(err.message).toContain(field.split('.')[0]);
  });

  it('names an unknown top-level field', () => {
    const err = cairnErrorFrom(() => parseSearchRequest({ namespace: 'a', query: 'q', topK: 3 }));
    expect(err.code).toBe('INVALID_INPUT');
    expect(err.data.field).toBe('topK');
    expect(err.message).toContain('topK');
  });

  it('prefixes the message with the context it is given', () => {
    const err = cairnErrorFrom(() => parseSearchRequest({ namespace: 'a', query: 'q', k: 0 }, 'queries.3'));
    expect(err.message.startsWith('queries.3: ')).toBe(true);
    expect(err.data.field).toBe('k');
  });
});

describe('resolveSearch', () => {
  it('fills every default', () => {
    const r = resolveSearch({ namespace: 'a', query: 'q', now: 1000 });
    expect(r).toMatchObject({
      k: DEFAULT_SEARCH_OPTIONS.k,
      candidatePool: DEFAULT_SEARCH_OPTIONS.candidatePool,
      weights: { lexical: 1, vector: 1 },
      rrfK: 60,
      importanceWeight: DEFAULT_SEARCH_OPTIONS.importanceWeight,
      mmrLambda: 1,
      duplicateThreshold: DEFAULT_SEARCH_OPTIONS.duplicateThreshold,
      filters: {},
      now: 1000,
      explain: 'hits',
    });
    expect(r.decay.mode).toBe('auto');
    expect(r.recency).toEqual(DEFAULT_RECENCY_OPTIONS);
  });

  it('merges partial recency options with the defaults and refuses bad ones by field', () => {
    const r = resolveSearch({ namespace: 'a', query: 'q', recency: { tieBreak: 2 } });
    expect(r.recency).toEqual({ ...DEFAULT_RECENCY_OPTIONS, tieBreak: 2 });
    expect(
      cairnErrorFrom(() => resolveSearch({ namespace: 'a', query: 'q', recency: { peerMargin: 2 } })).data
        .field,
    ).toBe('recency');
    expect(() => parseSearchRequest({ namespace: 'a', query: 'q', recency: { reach: 3 } })).toThrow(
      /recency/,
    );
  });

  it('keeps defaults for options explicitly set to undefined', () => {
    const r = resolveSearch({
      namespace: 'a',
      query: 'q',
      k: undefined,
      rrfK: undefined,
      weights: { vector: undefined },
    });
    expect(r.k).toBe(DEFAULT_SEARCH_OPTIONS.k);
    expect(r.rrfK).toBe(DEFAULT_SEARCH_OPTIONS.rrfK);
    expect(r.weights.vector).toBe(1);
  });

  it('merges partial weights with the default weights', () => {
    expect(resolveSearch({ namespace: 'a', query: 'q', weights: { vector: 0 } }).weights).toEqual({
      lexical: 1,
      vector: 0,
    });
  });

  it('refuses both legs off for a query (nothing would rank), and lets a listing carry them', () => {
    const both = { lexical: 0, vector: 0 };
    const err = cairnErrorFrom(() => resolveSearch({ namespace: 'a', query: 'kafka', weights: both }));
    expect(err.data.field).toBe('weights');
    expect(err.message).toMatch(/cannot both be 0/);
    expect(resolveSearch({ namespace: 'a', query: '  ', weights: both }).weights).toEqual(both);
  });

  it('raises the candidate pool to at least k', () => {
    expect(resolveSearch({ namespace: 'a', query: 'q', k: 80, candidatePool: 10 }).candidatePool).toBe(80);
  });

  it('resolves decay off to a disabled decay', () => {
    expect(resolveSearch({ namespace: 'a', query: 'q', decay: 'off' }).decay.mode).toBe('off');
    expect(resolveSearch({ namespace: 'a', query: 'q', decay: { halfLifeMs: 1000 } }).decay.mode).toBe(
      'fixed',
    );
    const wireForm = { namespace: 'a', query: 'q', decay: '30d' } as unknown as SearchRequest;
    expect(cairnErrorFrom(() => resolveSearch(wireForm)).data.field).toBe('decay');
    expect(parseSearchRequest({ namespace: 'a', query: 'q', decay: 'auto' }).decay).toBe('auto');
  });

  it('names the field of an invalid programmatic request', () => {
    expect(cairnErrorFrom(() => resolveSearch({ namespace: 'a', query: 'q', k: 0 })).data.field).toBe('k');
    expect(
      cairnErrorFrom(() => resolveSearch({ namespace: 'a', query: 'q', candidatePool: 0 })).data.field,
    ).toBe('candidatePool');
    expect(
      cairnErrorFrom(() => resolveSearch({ namespace: 'a', query: 'q', weights: { lexical: -1 } })).data
        .field,
    ).toBe('weights');
    for (const field of ['agentBoost', 'sessionMatch', 'sessionSupport'] as const) {
      expect(
        cairnErrorFrom(() => resolveSearch({ namespace: 'a', query: 'q', [field]: -1 })).data.field,
      ).toBe(field);
    }
    expect(
      cairnErrorFrom(() => resolveSearch({ namespace: 'a', query: 'q', sessionSupport: 2 })).data.field,
    ).toBe('sessionSupport');
    // The namespace is validated on its own here, so zod reports no path; the message still names it.
    const nsErr = cairnErrorFrom(() => resolveSearch({ namespace: 'bad ns', query: 'q' }));
    expect(nsErr.code).toBe('INVALID_INPUT');
    expect(nsErr.message).toMatch(/^namespace /);
    const longQuery = 'x'.repeat(DEFAULT_INPUT_LIMITS.maxQueryChars + 1);
    expect(cairnErrorFrom(() => resolveSearch({ namespace: 'a', query: longQuery })).data.field).toBe(
      'query',
    );
  });
});

describe('searchDefaultsFor', () => {
  it("takes the embedder's vector weight unless the configuration sets one", () => {
    expect(searchDefaultsFor({ fusionWeight: 0.05 }, undefined).weights).toEqual({
      lexical: 1,
      vector: 0.05,
    });
    expect(searchDefaultsFor({}, undefined).weights).toEqual(DEFAULT_SEARCH_OPTIONS.weights);
    expect(searchDefaultsFor(null, { k: 5 })).toMatchObject({
      k: 5,
      weights: DEFAULT_SEARCH_OPTIONS.weights,
    });
    expect(
      searchDefaultsFor({ fusionWeight: 0.05 }, { weights: { lexical: 1, vector: 0.7 } }).weights,
    ).toEqual({ lexical: 1, vector: 0.7 });
    // A caller's own weights still win over the served defaults.
    const served = searchDefaultsFor({ fusionWeight: 0.05 }, undefined);
    expect(resolveSearch({ namespace: 'n', query: 'q', weights: { vector: 1 } }, served).weights).toEqual({
      lexical: 1,
      vector: 1,
    });
  });
});

describe('hasFilters', () => {
  it('is false for empty filters and empty lists', () => {
    expect(hasFilters({})).toBe(false);
    expect(hasFilters({ kinds: [], tags: [], sessions: [], agents: [] })).toBe(false);
  });

  it('is true for any list value or time bound, including a zero bound', () => {
    expect(hasFilters({ kinds: ['fact'] })).toBe(true);
    expect(hasFilters({ since: 0 })).toBe(true);
    expect(hasFilters({ until: 0 })).toBe(true);
  });
});

describe('withDefaults', () => {
  const defaults: Readonly<{ batchSize: number; name: string; flag: boolean }> = Object.freeze({
    batchSize: 10,
    name: 'x',
    flag: true,
  });

  it('keeps a default when the option is undefined', () => {
    expect(withDefaults(defaults, { batchSize: undefined })).toEqual({
      batchSize: 10,
      name: 'x',
      flag: true,
    });
  });

  it('returns a copy of the defaults when no options are given', () => {
    const out = withDefaults(defaults, undefined);
    expect(out).toEqual(defaults);
    expect(out).not.toBe(defaults);
  });

  it('overrides with defined values, including falsy ones', () => {
    expect(withDefaults(defaults, { batchSize: 0, name: '', flag: false })).toEqual({
      batchSize: 0,
      name: '',
      flag: false,
    });
  });

  it('never mutates the defaults', () => {
    withDefaults(defaults, { batchSize: 99 });
    expect(defaults.batchSize).toBe(10);
  });
});
