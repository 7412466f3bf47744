import { blendFactor, blendWeight, DEFAULT_RECENCY_OPTIONS, MS_PER_DAY, timeAffinity } from '@cairn/core';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

describe('blendWeight', () => {
  it('lets age take away exactly what separates rank 1 from rank 1 + reach', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 200 }), fc.integer({ min: 0, max: 500 }), (reach, rrfK) => {
        const w = blendWeight(reach, rrfK);
        expect(1 - w).toBeCloseTo((rrfK + 1) / (rrfK + 1 + reach), 12);
      }),
    );
  });

  it('is 0 for a reach of 0 (age never counts)', () => {
    expect(blendWeight(0, 60)).toBe(0);
  });

  it('defaults: a tie-break of 8 ranks and 20 with temporal intent, at RRF k = 60', () => {
    expect(blendWeight(DEFAULT_RECENCY_OPTIONS.tieBreak, 60)).toBeCloseTo(8 / 69, 12);
    expect(blendWeight(DEFAULT_RECENCY_OPTIONS.intent, 60)).toBeCloseTo(20 / 81, 12);
  });
});

describe('timeAffinity', () => {
  const peers = { newest: 100 * MS_PER_DAY, oldest: 40 * MS_PER_DAY };
  const none = { kind: 'none' } as const;

  it('runs from 0 at the oldest peer to 1 at the newest, linearly, clamped outside', () => {
    expect(timeAffinity(peers.newest, peers, none)).toBe(1);
    expect(timeAffinity(peers.oldest, peers, none)).toBe(0);
    expect(timeAffinity(70 * MS_PER_DAY, peers, none)).toBeCloseTo(0.5, 12);
    expect(timeAffinity(500 * MS_PER_DAY, peers, none)).toBe(1);
    expect(timeAffinity(0, peers, none)).toBe(0);
  });

  it('mirrors for an earliest intent', () => {
    const earliest = { kind: 'earliest', cue: 'originally' } as const;
    expect(timeAffinity(peers.oldest, peers, earliest)).toBe(1);
    expect(timeAffinity(peers.newest, peers, earliest)).toBe(0);
  });

  it('gives every memory 1 when the peers share one time (nothing to break)', () => {
    expect(timeAffinity(5, { newest: 5, oldest: 5 }, none)).toBe(1);
  });

  it('is 1 inside a window and halves with every window length outside it', () => {
    const window = {
      kind: 'window',
      cue: 'last week',
      since: 7 * MS_PER_DAY,
      until: 14 * MS_PER_DAY,
    } as const;
    expect(timeAffinity(10 * MS_PER_DAY, peers, window)).toBe(1);
    expect(timeAffinity(21 * MS_PER_DAY, peers, window)).toBeCloseTo(0.5, 12);
    expect(timeAffinity(0, peers, window)).toBeCloseTo(0.5, 12);
    expect(timeAffinity(14 * MS_PER_DAY, peers, window)).toBeCloseTo(1, 12);
  });

  it('stays in [0, 1] and never prefers an older peer without intent', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 1e12 }),
        fc.integer({ min: 0, max: 1e12 }),
        fc.integer({ min: 0, max: 1e12 }),
        fc.integer({ min: 0, max: 1e12 }),
        (a, b, p, q) => {
          const span = { newest: Math.max(p, q), oldest: Math.min(p, q) };
          const ta = timeAffinity(a, span, none);
          const tb = timeAffinity(b, span, none);
          expect(ta).toBeGreaterThanOrEqual(0);
          expect(ta).toBeLessThanOrEqual(1);
          if (a >= b) expect(ta).toBeGreaterThanOrEqual(tb);
        },
      ),
    );
  });
});

describe('blendFactor', () => {
  it('stays within [1 − w, 1]', () => {
    fc.assert(
      fc.property(
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        (w, t) => {
          const f = blendFactor(w, t);
          expect(f).toBeGreaterThanOrEqual(1 - w - 1e-12);
          expect(f).toBeLessThanOrEqual(1 + 1e-12);
        },
      ),
    );
  });
});
