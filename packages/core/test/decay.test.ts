import { DEFAULT_DECAY, MS_PER_DAY, recencyFactor, resolveDecay } from '@cairn/core';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { cairnErrorFrom } from './helpers.js';

describe('resolveDecay', () => {
  it('derives tau from the half-life (tau = halfLife / ln 2)', () => {
    const d = resolveDecay({ halfLifeMs: 10 * MS_PER_DAY });
    expect(d.mode).toBe('fixed');
    expect(d.halfLifeMs).toBe(10 * MS_PER_DAY);
    expect(d.tauMs).toBeCloseTo((10 * MS_PER_DAY) / Math.LN2, 3);
  });

  it('derives the half-life from tau (halfLife = tau · ln 2)', () => {
    const d = resolveDecay({ tauMs: 1000 });
    expect(d.halfLifeMs).toBeCloseTo(1000 * Math.LN2, 9);
    expect(d.tauMs).toBeCloseTo(1000, 9);
  });

  it('round-trips: a half-life resolved and fed back as tau gives the same curve', () => {
    fc.assert(
      fc.property(fc.double({ min: 1, max: 1e12, noNaN: true }), (halfLifeMs) => {
        const a = resolveDecay({ halfLifeMs });
        const b = resolveDecay({ tauMs: a.tauMs });
        expect(b.halfLifeMs / halfLifeMs).toBeCloseTo(1, 9);
      }),
    );
  });

  it('refuses a spec that gives both half-life and tau', () => {
    const spec = { halfLifeMs: 1000, tauMs: 1000 } as unknown as { halfLifeMs: number };
    const err = cairnErrorFrom(() => resolveDecay(spec));
    expect(err.code).toBe('INVALID_INPUT');
    expect(err.data.field).toBe('decay');
  });

  it('refuses zero, negative, NaN and infinite durations', () => {
    for (const v of [0, -1, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(cairnErrorFrom(() => resolveDecay({ halfLifeMs: v })).data.field).toBe('decay');
      expect(cairnErrorFrom(() => resolveDecay({ tauMs: v })).data.field).toBe('decay');
    }
  });

  it("turns decay off with 'off': infinite half-life and tau", () => {
    expect(resolveDecay('off')).toEqual({
      mode: 'off',
      tauMs: Number.POSITIVE_INFINITY,
      halfLifeMs: Number.POSITIVE_INFINITY,
    });
  });

  it("defaults to 'auto', which has no curve of its own (age counts only among close calls)", () => {
    expect(DEFAULT_DECAY).toBe('auto');
    expect(resolveDecay()).toEqual(resolveDecay('auto'));
    expect(resolveDecay().mode).toBe('auto');
  });
});

describe('recencyFactor', () => {
  const now = Date.parse('2024-06-01T00:00:00Z');
  const halfLifeMs = 7 * MS_PER_DAY;
  const decay = resolveDecay({ halfLifeMs });

  it('gives 0.5 at exactly one half-life of age', () => {
    expect(recencyFactor(now, now - halfLifeMs, decay)).toBeCloseTo(0.5, 12);
  });

  it('gives 0.25 at two half-lives of age', () => {
    expect(recencyFactor(now, now - 2 * halfLifeMs, decay)).toBeCloseTo(0.25, 12);
  });

  it('gives 1 at age zero', () => {
    expect(recencyFactor(now, now, decay)).toBe(1);
  });

  it('clamps a memory stamped in the future to 1 rather than boosting it', () => {
    expect(recencyFactor(now, now + MS_PER_DAY, decay)).toBe(1);
    expect(recencyFactor(now, now + 1e12, decay)).toBe(1);
  });

  it("is always 1 when decay is 'off'", () => {
    expect(recencyFactor(now, 0, resolveDecay('off'))).toBe(1);
    expect(recencyFactor(now, now - 1e12, resolveDecay('off'))).toBe(1);
  });

  it('stays in (0, 1] and never increases with age', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 10 * 365 }),
        fc.integer({ min: 0, max: 10 * 365 }),
        fc.integer({ min: 1, max: 365 }),
        (ageDaysA, ageDaysB, halfLifeDays) => {
          const d = resolveDecay({ halfLifeMs: halfLifeDays * MS_PER_DAY });
          const a = recencyFactor(now, now - ageDaysA * MS_PER_DAY, d);
          const b = recencyFactor(now, now - ageDaysB * MS_PER_DAY, d);
          expect(a).toBeGreaterThanOrEqual(0);
          expect(a).toBeLessThanOrEqual(1);
          if (ageDaysA <= ageDaysB) expect(a).toBeGreaterThanOrEqual(b);
        },
      ),
    );
  });
});
