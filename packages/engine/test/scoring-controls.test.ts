import { confidenceFactor } from '@cairn/core';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DAY, useEngines } from './helpers.js';

const engines = useEngines();
const NOW = Date.UTC(2026, 5, 1);

describe('confidence and per-kind half-lives move scores in the documented direction', () => {
  it('property: the confidence factor is 1 when unstated, at most 1, and never falls as confidence rises', () => {
    fc.assert(
      fc.property(
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        (a, b, w) => {
          const [lo, hi] = a <= b ? [a, b] : [b, a];
          expect(confidenceFactor(null, w)).toBe(1);
          expect(confidenceFactor(hi, w)).toBeLessThanOrEqual(1);
          expect(confidenceFactor(lo, w)).toBeLessThanOrEqual(confidenceFactor(hi, w));
          expect(confidenceFactor(lo, w)).toBeCloseTo(1 - w * (1 - lo), 12);
        },
      ),
    );
  });

  it('a low-confidence memory ranks below an unstated one that says the same, and the explain shows the factor', async () => {
    const engine = await engines.open({ consolidation: false });
    engine.ingest([
      {
        namespace: 'a',
        id: 'sure',
        text: 'The staging database password rotates every Monday',
        ts: NOW - 2 * DAY,
      },
      {
        namespace: 'a',
        id: 'guess',
        text: 'The staging database password rotates every Monday.',
        ts: NOW - DAY,
        confidence: 0.2,
      },
    ]);
    await engine.drain();
    // Same words: near-duplicate suppression is off here so that both are ranked.
    const q = {
      namespace: 'a',
      query: 'when does the staging password rotate',
      now: NOW,
      duplicateThreshold: 2,
    };
    const res = await engine.search(q);
    expect(res.hits.map((h) => h.id)).toEqual(['sure', 'guess']);
    expect(res.hits[1]!.parts.confidence).toBeCloseTo(1 - 0.3 * 0.8, 12);
    expect(res.hits[0]!.parts.confidence).toBe(1);
    expect(engine.get('a', ['guess']).memories[0]!.confidence).toBe(0.2);
    // Off, the newer one wins the tie as before.
    const off = await engine.search({ ...q, confidenceWeight: 0 });
    expect(off.hits[0]!.id).toBe('guess');
  });

  it("a kind's half-life ages it, in fixed and auto decay, and leaves other kinds alone", async () => {
    const engine = await engines.open({ consolidation: false });
    engine.ingest([
      {
        namespace: 'a',
        id: 'sum',
        kind: 'summary',
        text: 'Session summary: migrated billing to Postgres 16',
        ts: NOW - 30 * DAY,
      },
      {
        namespace: 'a',
        id: 'fact',
        kind: 'fact',
        text: 'Billing runs on Postgres 16 since the migration',
        ts: NOW - 30 * DAY,
      },
    ]);
    await engine.drain();
    const q = { namespace: 'a', query: 'billing postgres 16 migration', now: NOW, k: 2 } as const;
    const base = await engine.search(q);
    const parts = (r: typeof base, id: string) => r.hits.find((h) => h.id === id)!.parts.recency;
    // Auto: a listed kind's curve multiplies in; an unlisted kind keeps the blend.
    const auto = await engine.search({ ...q, kindHalfLives: { summary: 7 * DAY } });
    expect(parts(auto, 'sum')).toBeCloseTo(parts(base, 'sum') * 2 ** (-30 / 7), 9);
    expect(parts(auto, 'fact')).toBe(parts(base, 'fact'));
    expect(auto.hits[0]!.id).toBe('fact');
    // Fixed: the kind's own half-life replaces the search's; 'off' does not age at all.
    const fixed = await engine.search({
      ...q,
      decay: { halfLifeMs: 30 * DAY },
      kindHalfLives: { summary: 7 * DAY, fact: 'off' },
    });
    expect(parts(fixed, 'sum')).toBeCloseTo(2 ** (-30 / 7), 9);
    expect(parts(fixed, 'fact')).toBe(1);
    expect(fixed.explain.settings.kindHalfLives).toEqual({ summary: 7 * DAY, fact: 'off' });
    // Decay off turns every curve off.
    const none = await engine.search({ ...q, decay: 'off', kindHalfLives: { summary: 7 * DAY } });
    expect(parts(none, 'sum')).toBe(1);
  });
});
