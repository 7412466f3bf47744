import {
  blendWeight,
  DEFAULT_RECENCY_OPTIONS,
  type KeyedMemory,
  MS_PER_DAY,
  NO_TEMPORAL_INTENT,
  resolveDecay,
  type TemporalIntent,
} from '@cairn/core';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { applyRecency, findRecencyPeers, fuseCandidates, type RecencyPlan, sortFused } from '../src/index.js';
import { type FusionOptions, fusionOptions, memory } from './helpers.js';

const auto = fusionOptions({ decay: resolveDecay('auto') });

function autoPlan(intent: TemporalIntent = NO_TEMPORAL_INTENT): RecencyPlan {
  const o = DEFAULT_RECENCY_OPTIONS;
  const reach = intent.kind === 'none' ? o.tieBreak : o.intent;
  return { weight: blendWeight(reach, 60), reach, intent, peerMargin: o.peerMargin, peerDepth: o.peerDepth };
}

/** The router's order of work: fuse, find the close calls, apply age, sort. */
function rank(
  lexKeys: number[],
  vecKeys: number[],
  records: Map<number, KeyedMemory>,
  query: string,
  opts: FusionOptions = auto,
  plan: RecencyPlan = autoPlan(),
) {
  const lexical = lexKeys.map((key, i) => ({ key, rank: i + 1, bm25: -(100 - i) }));
  const vector = vecKeys.map((key, i) => ({ key, rank: i + 1, cosine: 0.9 - i / 100 }));
  const fused = fuseCandidates(lexical, vector, records, opts);
  const peers = findRecencyPeers(fused, query, records, () => new Map(), {
    margin: plan.peerMargin,
    depth: plan.peerDepth,
    weight: plan.weight,
  });
  applyRecency(fused, opts, plan, peers);
  return sortFused(fused);
}

const WORDS = ['deploy', 'target', 'render', 'redis', 'queue', 'auth', 'crash', 'token'];
const text = fc.subarray(WORDS, { minLength: 1 }).map((w) => w.join(' '));
const ts = fc.integer({ min: 0, max: 3650 }).map((d) => d * MS_PER_DAY);

/** A candidate pool: distinct keys, each with a text and a time, and two rankings over them. */
const pool = fc.uniqueArray(fc.integer({ min: 1, max: 500 }), { minLength: 2, maxLength: 40 }).chain((keys) =>
  fc.record({
    keys: fc.constant(keys),
    texts: fc.array(text, { minLength: keys.length, maxLength: keys.length }),
    times: fc.array(ts, { minLength: keys.length, maxLength: keys.length }),
    lex: fc.shuffledSubarray(keys, { minLength: 1 }),
    vec: fc.shuffledSubarray(keys),
    query: text,
  }),
);

describe("recency in the default 'auto' mode", () => {
  it('never pushes a memory ranked first in both legs below one no leg ranks in its top 5, whatever the ages', () => {
    fc.assert(
      fc.property(pool, fc.integer({ min: 0, max: 1000 }), ({ keys, texts, times, lex, vec, query }, top) => {
        const first = keys[top % keys.length]!;
        const lexKeys = [first, ...lex.filter((k) => k !== first)];
        const vecKeys = [first, ...vec.filter((k) => k !== first)];
        const records = new Map(keys.map((k, i) => [k, memory(k, { text: texts[i]!, ts: times[i]! })]));
        const order = rank(lexKeys, vecKeys, records, query).map((c) => c.key);
        const rankIn = (list: number[], k: number) => list.indexOf(k) + 1 || Number.POSITIVE_INFINITY;
        for (const k of order) {
          if (rankIn(lexKeys, k) > 5 && rankIn(vecKeys, k) > 5) {
            expect(order.indexOf(first)).toBeLessThan(order.indexOf(k));
          }
        }
      }),
      { numRuns: 500 },
    );
  });

  it('ranks the newer of two equally relevant memories first, whatever the ages and wherever they rank', () => {
    fc.assert(
      fc.property(
        pool,
        fc.integer({ min: 0, max: 38 }),
        fc.integer({ min: 0, max: 38 }),
        ts,
        ts,
        fc.boolean(),
        ({ keys, texts, times, lex, vec, query }, atLex, atVec, tA, tB, bothLegs) => {
          fc.pre(tA !== tB && keys.length >= 3);
          // A and B are one text stored twice: every leg scores them alike and lists them side by side, in
          // either order.
          const [a, b, ...rest] = keys as [number, number, ...number[]];
          const place = (list: number[], at: number, pair: number[]) => {
            const others = list.filter((k) => k !== a && k !== b);
            const slot = Math.min(at, others.length);
            return [...others.slice(0, slot), ...pair, ...others.slice(slot)];
          };
          const lexKeys = place(lex, atLex, tA < tB ? [a, b] : [b, a]);
          const vecKeys = bothLegs ? place(vec, atVec, [a, b]) : vec.filter((k) => k !== a && k !== b);
          const records = new Map(
            rest.map((k, i) => [k, memory(k, { text: texts[i + 2]!, ts: times[i + 2]! })]),
          );
          records.set(a, memory(a, { text: texts[0]!, ts: tA }));
          records.set(b, memory(b, { text: texts[0]!, ts: tB }));
          const lexical = lexKeys.map((key, i) => ({
            key,
            rank: i + 1,
            bm25: key === a || key === b ? -50 : -(100 - i),
          }));
          const pairAt = vecKeys.indexOf(a);
          const vector = vecKeys.map((key, i) => ({
            key,
            rank: i + 1,
            cosine: key === a || key === b ? 0.9 - pairAt / 100 : 0.9 - i / 100,
          }));
          const fused = fuseCandidates(lexical, vector, records, auto);
          const plan = autoPlan();
          const peers = findRecencyPeers(fused, query, records, () => new Map(), {
            margin: plan.peerMargin,
            depth: plan.peerDepth,
            weight: plan.weight,
          });
          applyRecency(fused, auto, plan, peers);
          const order = sortFused(fused).map((c) => c.key);
          const [newer, older] = tA > tB ? [a, b] : [b, a];
          expect(order.indexOf(newer)).toBeLessThan(order.indexOf(older));
        },
      ),
      { numRuns: 500 },
    );
  });

  it('keeps every recency factor within [1 − w, 1] and the score equal to rrf × recency × importance', () => {
    fc.assert(
      fc.property(pool, ({ keys, texts, times, lex, vec, query }) => {
        const records = new Map(keys.map((k, i) => [k, memory(k, { text: texts[i]!, ts: times[i]! })]));
        const plan = autoPlan();
        for (const c of rank(lex, vec, records, query, auto, plan)) {
          expect(c.recency).toBeGreaterThanOrEqual(1 - plan.weight - 1e-12);
          expect(c.recency).toBeLessThanOrEqual(1);
          expect(c.score).toBeCloseTo(c.rrf * c.recency * c.parts.importance, 12);
        }
      }),
    );
  });

  it('lets the newest statement of a topic win over an older, lexically stronger one, not over a passing mention', () => {
    const day = MS_PER_DAY;
    const records = new Map([
      [
        1,
        memory(1, { text: 'Decision: the deploy target is fly.io, deploy target for staging', ts: 10 * day }),
      ],
      [2, memory(2, { text: 'We moved the deploy target off fly.io and onto Render', ts: 60 * day })],
      [3, memory(3, { text: 'The deploy step failed on a typo', ts: 300 * day })],
    ]);
    const order = rank([1, 2, 3], [1, 2, 3], records, 'which deploy target do we use').map((c) => c.key);
    expect(order).toEqual([2, 1, 3]);
  });

  it('does not let the verb of a state question ("do we use") decide who is a close call', () => {
    const day = MS_PER_DAY;
    const records = new Map([
      [
        1,
        memory(1, {
          text: 'We picked SendGrid as the email provider because marketing used it',
          ts: 10 * day,
        }),
      ],
      [2, memory(2, { text: 'Switched the email provider from SendGrid to Amazon SES', ts: 90 * day })],
    ]);
    // Without the rule, memory 1 alone covers "use" (as "used") and is the only close call.
    const order = rank([1, 2], [1, 2], records, 'Which email provider do we use?').map((c) => c.key);
    expect(order).toEqual([2, 1]);
  });

  it('gives the oldest close call the benefit for an earliest intent', () => {
    const records = new Map([
      [1, memory(1, { text: 'the CI provider is Travis', ts: 10 })],
      [2, memory(2, { text: 'switched the CI provider from Travis to Actions', ts: 20 })],
    ]);
    const plan = autoPlan({ kind: 'earliest', cue: 'originally' });
    expect(rank([2, 1], [2, 1], records, 'CI provider', auto, plan).map((c) => c.key)).toEqual([1, 2]);
    expect(rank([2, 1], [2, 1], records, 'CI provider').map((c) => c.key)).toEqual([2, 1]);
  });

  it("lifts a memory of a named day that no leg ranks in its top 5: the window is the caller's criterion", () => {
    const day = 20_000 * MS_PER_DAY;
    const keys = [1, 2, 3, 4, 5, 6, 7, 8];
    // Every memory mentions the dish; only the 8th was said on the day the question names.
    const records = new Map(
      keys.map((k) => [
        k,
        memory(k, { text: 'Nate made a dish', ts: k === 8 ? day + 3_600_000 : k * MS_PER_DAY }),
      ]),
    );
    const window = autoPlan({ kind: 'window', cue: 'on 9 November', since: day, until: day + MS_PER_DAY });
    const q = 'What dish did Nate make on 9 November?';
    expect(rank(keys, keys, records, q, auto, window).map((c) => c.key)[0]).toBe(8);
    // Without the window it keeps its place.
    expect(
      rank(keys, keys, records, q)
        .map((c) => c.key)
        .at(-1),
    ).toBe(8);
  });
});

describe('a caller-given decay', () => {
  it('multiplies by exactly exp(-age / tau) from now, and off leaves every factor at 1', () => {
    fc.assert(
      fc.property(
        pool,
        fc.integer({ min: 1, max: 365 }),
        ({ keys, texts, times, lex, vec, query }, halfLifeDays) => {
          const records = new Map(keys.map((k, i) => [k, memory(k, { text: texts[i]!, ts: times[i]! })]));
          const now = 3650 * MS_PER_DAY;
          const decay = resolveDecay({ halfLifeMs: halfLifeDays * MS_PER_DAY });
          const none = { weight: 0, reach: 0, intent: NO_TEMPORAL_INTENT, peerMargin: 0, peerDepth: 0 };
          for (const c of rank(lex, vec, records, query, fusionOptions({ now, decay }), none)) {
            expect(c.recency).toBeCloseTo(0.5 ** ((now - c.memory.ts) / (halfLifeDays * MS_PER_DAY)), 12);
            expect(c.score).toBeCloseTo(c.rrf * c.recency * c.parts.importance, 12);
          }
          const off = rank(lex, vec, records, query, fusionOptions({ now }), none);
          expect(off.every((c) => c.recency === 1)).toBe(true);
        },
      ),
    );
  });
});
