import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { DAY, useEngines } from './helpers.js';

const engines = useEngines();

// The README's first example, on the sample corpus a newcomer loads with `pnpm start`.
const SAMPLE = new URL('../../../examples/agent-memories.jsonl', import.meta.url);
const sample = () =>
  readFileSync(SAMPLE, 'utf8')
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as Record<string, unknown>);

describe('relevance first in the defaults', () => {
  it('answers the README example with mem-010 first, today and a year from now', async () => {
    const engine = await engines.open();
    engine.ingest(sample() as never);
    await engine.drain();
    for (const now of [Date.now(), Date.now() + 365 * DAY]) {
      const r = await engine.search({
        namespace: 'demo/acme-api',
        query: 'why did the auth middleware crash?',
        k: 3,
        now,
      });
      expect(r.hits[0]!.id).toBe('mem-010');
      expect(r.explain.settings.recency.mode).toBe('auto');
    }
  });

  it('ranks the newest statement of a state first for a current-state question, and the old one for the old event', async () => {
    const engine = await engines.open();
    const t0 = Date.UTC(2026, 0, 5);
    engine.ingest([
      {
        namespace: 'p',
        id: 'v0',
        text: 'Decision: the deploy target is fly.io, since its free tier covers staging.',
        ts: t0,
      },
      {
        namespace: 'p',
        id: 'f0',
        text: 'The deploy step failed on a typo in the config.',
        ts: t0 + 10 * DAY,
      },
      {
        namespace: 'p',
        id: 'v1',
        text: 'New deploy target: we moved off fly.io and onto Render because its cold starts broke p99 latency.',
        ts: t0 + 40 * DAY,
      },
      { namespace: 'p', id: 'f1', text: 'Paired with the new hire on the deploy docs.', ts: t0 + 200 * DAY },
    ]);
    await engine.drain();
    const current = await engine.search({
      namespace: 'p',
      query: "What's our current deploy target?",
      explain: 'full',
    });
    expect(current.hits[0]!.id).toBe('v1');
    const settings = current.explain.settings.recency;
    expect(settings.intent).toEqual({ kind: 'recent', cue: 'current' });
    // Every hit's recency is the blend exactly as used: 1 − w + w·t, t over the peers' span, 0 outside it.
    for (const h of current.hits) {
      expect(h.recency).toBeGreaterThanOrEqual(1 - settings.weight! - 1e-12);
      expect(h.score).toBeCloseTo(h.rrf * h.recency * h.parts.importance, 12);
    }
    const plain = await engine.search({ namespace: 'p', query: 'Which deploy target do we use?' });
    expect(plain.hits[0]!.id).toBe('v1');
    const old = await engine.search({
      namespace: 'p',
      query: 'Why did we originally pick fly.io as the deploy target?',
    });
    expect(old.hits[0]!.id).toBe('v0');
    const off = await engine.search({ namespace: 'p', query: 'deploy target', decay: 'off' });
    expect(off.hits.every((h) => h.recency === 1)).toBe(true);
    expect(off.explain.settings.recency.mode).toBe('off');
  });

  it("a question that names a day: its words stay in the search, that day's memories are lifted, and relevance judges the topic only", async () => {
    const engine = await engines.open();
    const day = Date.UTC(2022, 10, 9);
    const pasta = (i: number) => ({
      namespace: 'c',
      id: `p${i}`,
      text: `Nate: I love to make a pasta dish for friends, take ${i}`,
      ts: day - (30 + i) * DAY,
    });
    engine.ingest([
      ...[1, 2, 3, 4, 5, 6].map(pasta),
      // Said on the day asked about, in other words than the question's: only the window can lift it.
      {
        namespace: 'c',
        id: 'curry',
        text: 'Nate: Tonight I cooked a coconut curry!',
        ts: day + 18 * 3_600_000,
      },
      // Says the named time in the question's words, months later.
      {
        namespace: 'c',
        id: 'said',
        text: 'Nate: Back on 9 November I tried a new recipe',
        ts: day + 90 * DAY,
      },
    ]);
    await engine.drain();
    const r = await engine.search({
      namespace: 'c',
      query: 'What dish did Nate make on 9 November, 2022?',
      k: 10,
    });
    expect(r.explain.settings.recency.intent?.kind).toBe('window');
    const ids = r.hits.map((h) => h.id);
    expect(ids[0]).toBe('curry');
    // The legs searched the named time's words too: the memory that says them outranks every one that only
    // shares the topic's words (without them it matched "Nate" alone).
    expect(ids.indexOf('said')).toBeGreaterThan(0);
    for (const p of ['p1', 'p2', 'p3', 'p4', 'p5', 'p6'])
      expect(ids.indexOf('said')).toBeLessThan(ids.indexOf(p));
    expect(r.explain.lexicalQuery).toMatch(/november/i);
    // The relevance signal counts what the question asks about, not the date's words.
    expect(r.relevance?.missing ?? []).not.toContain('november');
    const off = await engine.search({
      namespace: 'c',
      query: 'What dish did Nate make on 9 November, 2022?',
      decay: 'off',
    });
    expect(off.hits[0]!.id).not.toBe('curry');
  });

  it('ranks one text stored twice newest first', async () => {
    const engine = await engines.open();
    engine.ingest([
      { namespace: 'd', id: 'new', text: 'redis eviction broke the job queue', ts: Date.UTC(2026, 5, 1) },
      { namespace: 'd', id: 'old', text: 'redis eviction broke the job queue', ts: Date.UTC(2025, 5, 1) },
      { namespace: 'd', id: 'x', text: 'lunch was pizza', ts: Date.UTC(2026, 7, 1) },
    ]);
    await engine.drain();
    const r = await engine.search({ namespace: 'd', query: 'redis eviction', duplicateThreshold: 2 });
    expect(r.hits.map((h) => h.id).slice(0, 2)).toEqual(['new', 'old']);
  });
});
