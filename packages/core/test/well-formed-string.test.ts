import {
  hasLoneSurrogate,
  loneSurrogateMessage,
  parsePrunePolicy,
  parseSearchRequest,
  WellFormedString,
  zodToCairnError,
} from '@cairn/core';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { cairnErrorFrom } from './helpers.js';

/** A string with one lone surrogate put somewhere in it: one surrogate more cannot pair up all of them. */
const illFormed = fc
  .tuple(fc.string({ unit: 'binary' }), fc.integer({ min: 0xd800, max: 0xdfff }), fc.nat())
  .map(([s, unit, at]) => {
    const i = at % (s.length + 1);
    return s.slice(0, i) + String.fromCharCode(unit) + s.slice(i);
  });

describe('WellFormedString', () => {
  it('takes every well-formed string, surrogate pairs (emoji, 𝔘) and NUL included', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), (s) => {
        expect(hasLoneSurrogate(s)).toBe(false);
        expect(WellFormedString.safeParse(s).success).toBe(true);
      }),
    );
    expect(WellFormedString.safeParse('a\u0000b 😀 𝔘').success).toBe(true);
  });

  it('refuses any string holding a lone surrogate, as INVALID_INPUT naming the field', () => {
    const Schema = z.strictObject({ outer: z.object({ list: z.array(WellFormedString.max(1_000_000)) }) });
    fc.assert(
      fc.property(illFormed, (s) => {
        expect(hasLoneSurrogate(s)).toBe(true);
        const r = Schema.safeParse({ outer: { list: ['fine', s] } });
        expect(r.success).toBe(false);
        const err = zodToCairnError(r.error!);
        expect(err.code).toBe('INVALID_INPUT');
        expect(err.data.field).toBe('outer.list.1');
        expect(err.message).toBe(loneSurrogateMessage('outer.list.1'));
      }),
    );
  });

  it('is refused for the surrogate alone, not also for the length the field allows', () => {
    const err = zodToCairnError(WellFormedString.min(5).safeParse('\ud800').error!, undefined, 'tag');
    expect(err.message).toBe('tag holds a lone UTF-16 surrogate: not valid Unicode text');
  });
});

describe('a lone surrogate in a search request', () => {
  it('is refused in every string field, naming it (the read path refused none of them)', () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ query: '\ud800' }, 'query'],
      [{ query: 'deploy \udc00 target' }, 'query'],
      [{ namespace: 'a\ud800' }, 'namespace'],
      [{ filters: { kinds: ['\ud800'] } }, 'filters.kinds.0'],
      [{ filters: { sessions: ['\ud800'] } }, 'filters.sessions.0'],
      [{ filters: { agents: ['\ud800'] } }, 'filters.agents.0'],
      [{ filters: { tags: ['ok', '\udfff'] } }, 'filters.tags.1'],
      [{ filters: { slots: ['\ud800'] } }, 'filters.slots.0'],
      [{ filters: { since: '\ud800' } }, 'filters.since'],
      [{ filters: { until: '\ud800' } }, 'filters.until'],
      [{ filters: { asOf: '\ud800' } }, 'filters.asOf'],
      [{ now: '2024-01-01\ud800' }, 'now'],
      [{ decay: '30d\ud800' }, 'decay'],
      [{ maxAge: '\ud800' }, 'maxAge'],
      [{ kindHalfLives: { fact: '\ud800' } }, 'kindHalfLives.fact'],
      [{ kindHalfLives: { 'f\ud800': '30d' } }, 'kindHalfLives.f\ud800'],
      [{ routeWeights: { 'f\ud800': 1 } }, 'routeWeights.f\ud800'],
      [{ boosts: [{ tag: '\ud800', factor: 2 }] }, 'boosts.0.tag'],
      [{ boosts: [{ kind: '\ud800', factor: 2 }] }, 'boosts.0.kind'],
      [{ boosts: [{ agent: '\ud800', factor: 2 }] }, 'boosts.0.agent'],
      [{ boosts: [{ path: '\ud800', factor: 2 }] }, 'boosts.0.path'],
    ];
    for (const [wire, field] of cases) {
      const err = cairnErrorFrom(() => parseSearchRequest({ namespace: 'a', query: 'q', ...wire }));
      expect(err.code, field).toBe('INVALID_INPUT');
      expect(err.data.field, field).toBe(field);
      expect(err.message, field).toBe(loneSurrogateMessage(field));
    }
  });

  it('is refused in a pruning policy too', () => {
    for (const [wire, field] of [
      [{ slot: '\ud800' }, 'slot'],
      [{ kind: '\ud800' }, 'kind'],
      [{ kind: 'k', min_age: '\ud800' }, 'min_age'],
    ] as const) {
      const err = cairnErrorFrom(() => parsePrunePolicy({ namespace: 'a', cap: 1, ...wire }));
      expect(err.data.field).toBe(field);
      expect(err.message).toBe(loneSurrogateMessage(field));
    }
  });
});
