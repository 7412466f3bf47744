import { HashingEmbedder } from '@cairn/embed';
import { describe, expect, it } from 'vitest';
import { DAY, useEngines } from './helpers.js';

const engines = useEngines();
const T = Date.UTC(2026, 0, 1);
const STORM = 'The nightly build failed: the integration runner ran out of disk on /var/lib/docker';
const NEAR_A = 'Deploy to staging failed because the auth token expired at midnight UTC';
// Another text (another content hash) with nearly the same vector: a stop word more.
const NEAR_B = 'The deploy to staging failed because the auth token expired at midnight UTC';
// Similar, but one word apart: cosine 0.87 with the built-in embedder.
const NEAR_C = 'Deploy to staging failed because the auth token expired at noon UTC';

function background(n: number) {
  const topics = ['billing', 'search', 'auth', 'onboarding', 'metrics', 'exports', 'webhooks', 'caching'];
  return Array.from({ length: n }, (_, i) => ({
    namespace: 'a',
    id: `bg${i}`,
    kind: 'observation',
    text: `Note ${i} about ${topics[i % topics.length]}: ticket ${1000 + i} was reviewed by team ${i % 7}`,
    ts: T + i * 60_000,
  }));
}

describe('consolidation merges near-duplicates into the newer memory', () => {
  it('a dup storm of 1,000 copies is merged into the newest, searches show one hit with dupCount, and an undo sticks', async () => {
    const engine = await engines.open({ consolidation: { intervalMs: 0 } });
    engine.ingest(background(200));
    engine.ingest(
      Array.from({ length: 1000 }, (_, i) => ({
        namespace: 'a',
        id: `storm${i}`,
        kind: 'observation',
        text: STORM,
        ts: T + DAY + i * 1000,
      })),
    );
    engine.ingest([
      { namespace: 'a', id: 'nearOld', kind: 'observation', text: NEAR_A, ts: T + 2 * DAY },
      { namespace: 'a', id: 'nearNew', kind: 'observation', text: NEAR_B, ts: T + 3 * DAY },
      // Facts are upserted by slot and key: two facts with the same words stay two facts.
      { namespace: 'a', id: 'f1', kind: 'fact', text: 'The primary region is eu-west-1', ts: T },
      { namespace: 'a', id: 'f2', kind: 'fact', text: 'The primary region is eu-west-1', ts: T + 1 },
      // Another tenant's copy of the storm: never merged with `a`'s, nor counted there.
      { namespace: 'b', id: 'bStorm', kind: 'observation', text: STORM, ts: T + 9 * DAY },
      // The same words from another agent stay apart: two sources, each attributed.
      { namespace: 'a', id: 'botCopy', kind: 'observation', agent: 'bot-2', text: STORM, ts: T },
      // The same words under another kind stay apart.
      { namespace: 'a', id: 'sum', kind: 'summary', text: STORM, ts: T + 9 * DAY },
    ]);
    await engine.drain();

    const e = new HashingEmbedder({ dimensions: 384 });
    const [va, vb] = await e.embed([NEAR_A, NEAR_B]);
    let dot = 0;
    for (let i = 0; i < va!.length; i++) dot += va![i]! * vb![i]!;
    expect(dot).toBeGreaterThanOrEqual(0.95);
    expect(dot).toBeLessThan(1);

    // Before: the storm floods nothing (query-time dedup), but every copy is live.
    expect(engine.stats().namespaces.a!.stored).toBe(1206);

    const dry = await engine.consolidate({ dryRun: true });
    expect(dry).toMatchObject({ dryRun: true, merged: 1000, exact: 999, near: 1 });
    expect(engine.stats().namespaces.a!.stored).toBe(1206);

    const run = await engine.consolidate();
    expect(run).toMatchObject({ dryRun: false, merged: 1000, exact: 999, near: 1, byNamespace: { a: 1000 } });
    expect(run.merges).toHaveLength(100);
    expect(engine.consolidations('a', 2000)).toContainEqual(
      expect.objectContaining({ id: 'nearOld', into: 'nearNew', undoneAt: null }),
    );
    const stats = engine.stats().namespaces;
    expect(stats.a).toMatchObject({ stored: 206, superseded: 1000 });
    expect(stats.b!.stored).toBe(1);

    const res = await engine.search({
      namespace: 'a',
      query: 'nightly build integration runner out of disk',
      k: 5,
      explain: 'full',
      filters: { kinds: ['observation'] },
    });
    const storm = res.hits.filter((h) => h.text === STORM);
    expect(storm.map((h) => h.id)).toEqual(['storm999']);
    expect(storm[0]!.dupCount).toBe(999);
    expect(engine.get('a', ['sum']).memories[0]!.supersededBy).toBeNull();
    expect(engine.get('a', ['botCopy']).memories[0]!.supersededBy).toBeNull();
    expect(res.explain.superseded).toHaveLength(20);
    expect(res.explain.superseded![0]).toMatchObject({ supersededBy: 'storm999', cosine: 1 });
    const near = await engine.search({ namespace: 'a', query: 'staging auth token expired', k: 3 });
    expect(near.hits[0]).toMatchObject({ id: 'nearNew', dupCount: 1 });
    expect(near.hits.map((h) => h.id)).not.toContain('nearOld');
    // Nothing is deleted: the merged memory is still readable, pointing at what absorbed it.
    expect(engine.get('a', ['nearOld']).memories[0]!.supersededBy).toBe('nearNew');
    const other = await engine.search({ namespace: 'b', query: 'nightly build out of disk', k: 3 });
    expect(other.hits.map((h) => [h.id, h.dupCount])).toEqual([['bStorm', undefined]]);

    // A second run finds nothing new; an undo brings a memory back, and the job leaves it alone.
    expect((await engine.consolidate()).merged).toBe(0);
    const undone = engine.undoConsolidation('a', ['nearOld']);
    expect(undone).toEqual([expect.objectContaining({ id: 'nearOld', into: 'nearNew' })]);
    engine.ingest([
      { namespace: 'a', id: 'nearNewer', kind: 'observation', text: `${NEAR_B}.`, ts: T + 4 * DAY },
    ]);
    await engine.drain();
    const again = await engine.consolidate();
    expect(again.merges.map((m) => m.id)).toEqual(['nearNew']);
    expect(engine.get('a', ['nearOld']).memories[0]!.supersededBy).toBeNull();
    expect(engine.consolidations('a').find((m) => m.id === 'nearOld')?.undoneAt).toBeTypeOf('number');
    // Undo of every merge of a namespace: all of them come back.
    expect(engine.undoConsolidation('a')).toHaveLength(1000);
    expect(engine.stats().namespaces.a!.superseded).toBe(0);
  });

  it('leaves memories below the threshold apart, and a lexical-only folder says why it skipped', async () => {
    const engine = await engines.open({ consolidation: { intervalMs: 0 } });
    engine.ingest([
      { namespace: 'a', id: 'x', text: NEAR_A, ts: T },
      { namespace: 'a', id: 'y', text: NEAR_C, ts: T + 1 },
    ]);
    await engine.drain();
    expect((await engine.consolidate()).merged).toBe(0);
    // The threshold is an option: above the pair's cosine (0.9998), NEAR_A and NEAR_B stay apart too.
    const strict = await engines.open({ consolidation: { intervalMs: 0, threshold: 0.99999 } });
    strict.ingest([
      { namespace: 'a', id: 'x', text: NEAR_A, ts: T },
      { namespace: 'a', id: 'y', text: NEAR_B, ts: T + 1 },
    ]);
    await strict.drain();
    expect((await strict.consolidate()).merged).toBe(0);

    const lexical = await engines.open({ embedder: null });
    expect((await lexical.consolidate()).skipped).toMatch(/no vector leg/);
  });

  it('runs on the writer’s schedule', async () => {
    const engine = await engines.open({ consolidation: { intervalMs: 50 } });
    engine.ingest([
      { namespace: 'a', id: 'p', text: STORM, ts: T },
      { namespace: 'a', id: 'q', text: STORM, ts: T + 1 },
    ]);
    await engine.drain();
    await expect.poll(() => engine.get('a', ['p']).memories[0]!.supersededBy, { timeout: 5_000 }).toBe('q');
  });
});
