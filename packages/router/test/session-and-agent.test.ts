import type { LexicalCandidate } from '@cairn/core';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { applyNamedAgent, applySessionSupport, fuseCandidates, relevance, sortFused } from '../src/index.js';
import { fusionOptions, memory } from './helpers.js';

const opts = fusionOptions({ importanceWeight: 0 });
const ranked = (keys: number[]): LexicalCandidate[] =>
  keys.map((key, i) => ({ key, rank: i + 1, bm25: -10 + i }));

describe('applyNamedAgent', () => {
  it("boosts only the memories whose agent the query names, every word of the agent's name", () => {
    const live = new Map([
      [1, memory(1, { agent: 'Melanie' })],
      [2, memory(2, { agent: 'Caroline' })],
      [3, memory(3, { agent: 'deploy-bot' })],
      [4, memory(4, { agent: null })],
    ]);
    const fused = fuseCandidates(ranked([1, 2, 3, 4]), [], live, opts);
    applyNamedAgent(fused, 'What did caroline say about the deploy?', 0.25);
    const byKey = new Map(fused.map((c) => [c.key, c]));
    expect(byKey.get(2)!.parts.agent).toBe(1.25);
    // "deploy" alone does not name "deploy-bot"; no agent and another agent stay at 1.
    for (const key of [1, 3, 4]) expect(byKey.get(key)!.parts.agent).toBe(1);
    expect(byKey.get(2)!.score).toBeCloseTo((1.25 * 1) / 62, 12);
    expect(sortFused(fused)[0]!.key).toBe(2);
  });

  it('changes nothing when the query names no agent, or with a boost of 0', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.integer({ min: 1, max: 40 }), { minLength: 1, maxLength: 20 }),
        fc.constantFrom('what happened at the launch?', 'what did alice say?'),
        fc.constantFrom(0, 0.25),
        (keys, query, boost) => {
          const live = new Map(keys.map((k) => [k, memory(k, { agent: k % 2 ? 'bob' : null })]));
          const fused = fuseCandidates(ranked(keys), [], live, opts);
          const before = fused.map((c) => c.score);
          applyNamedAgent(fused, query, boost);
          expect(fused.map((c) => c.score)).toEqual(before);
        },
      ),
    );
  });
});

describe('applySessionSupport', () => {
  it("adds weight × the best other candidate of the session, never the candidate's own score", () => {
    const live = new Map([
      [1, memory(1, { session: 'a' })],
      [2, memory(2, { session: 'a' })],
      [3, memory(3, { session: 'a' })],
      [4, memory(4, { session: 'b' })],
      [5, memory(5, { session: null })],
    ]);
    const fused = fuseCandidates(ranked([1, 2, 3, 4, 5]), [], live, opts);
    const rrf = new Map(fused.map((c) => [c.key, c.rrf]));
    applySessionSupport(fused, 0.3);
    const byKey = new Map(fused.map((c) => [c.key, c]));
    expect(byKey.get(1)!.parts.session).toBeCloseTo(0.3 * rrf.get(2)!, 12);
    expect(byKey.get(2)!.parts.session).toBeCloseTo(0.3 * rrf.get(1)!, 12);
    expect(byKey.get(3)!.parts.session).toBeCloseTo(0.3 * rrf.get(1)!, 12);
    // A lone match in its session, and a memory without one, get nothing.
    expect(byKey.get(4)!.parts.session).toBe(0);
    expect(byKey.get(5)!.parts.session).toBe(0);
    for (const c of fused) expect(c.score).toBeCloseTo(relevance(c), 12);
  });

  it('property: support is bounded by weight × the best candidate and needs another candidate of the session', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.integer({ min: 1, max: 60 }), { minLength: 1, maxLength: 30 }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        (keys, weight) => {
          const session = (k: number) => (k % 3 === 0 ? null : `s${k % 4}`);
          const live = new Map(keys.map((k) => [k, memory(k, { session: session(k) })]));
          const fused = fuseCandidates(ranked(keys), [], live, opts);
          const top = Math.max(...fused.map((c) => c.rrf));
          applySessionSupport(fused, weight);
          for (const c of fused) {
            expect(c.parts.session).toBeLessThanOrEqual(weight * top + 1e-15);
            const mates = fused.filter((d) => d.key !== c.key && d.memory.session === c.memory.session);
            if (c.memory.session === null || mates.length === 0) expect(c.parts.session).toBe(0);
            else expect(c.parts.session).toBeCloseTo(weight * Math.max(...mates.map((d) => d.rrf)), 12);
          }
        },
      ),
    );
  });
});
