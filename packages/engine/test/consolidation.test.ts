import { HashingEmbedder } from '@cairn/embed';
import { VectorIndexManager } from '@cairn/vector';
import { describe, expect, it, vi } from 'vitest';
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

  it('in a namespace with a graph, the neighbours are searched on the compute pool, none on the serving thread', async () => {
    const engine = await engines.open({ consolidation: { intervalMs: 0 }, exactThreshold: 100 });
    engine.ingest(background(400));
    engine.ingest([
      { namespace: 'a', id: 'nearOld', kind: 'observation', text: NEAR_A, ts: T + 2 * DAY },
      { namespace: 'a', id: 'nearNew', kind: 'observation', text: NEAR_B, ts: T + 3 * DAY },
      { namespace: 'a', id: 'apart', kind: 'observation', text: NEAR_C, ts: T + 4 * DAY },
    ]);
    await engine.drain();
    expect(engine.stats().namespaces.a!.index).toBe('hnsw');
    const here = vi.spyOn(VectorIndexManager.prototype, 'searchVector');
    const pooled = vi.spyOn(VectorIndexManager.prototype, 'nearestOffThread');
    try {
      const run = await engine.consolidate();
      expect(run).toMatchObject({ scanned: 403, merged: 1, near: 1, exact: 0 });
      expect(engine.consolidations('a', 10)).toEqual([
        expect.objectContaining({ id: 'nearOld', into: 'nearNew', undoneAt: null }),
      ]);
      expect(here).not.toHaveBeenCalled();
      expect(pooled).toHaveBeenCalled();
      for (const r of pooled.mock.results) await expect(r.value).resolves.not.toBeNull();
    } finally {
      here.mockRestore();
      pooled.mockRestore();
    }
  });

  it('after a dup storm was merged, a near copy finds the live memory behind the dead copies in a graph', async () => {
    const engine = await engines.open({ consolidation: { intervalMs: 0 }, exactThreshold: 100 });
    engine.ingest(background(400));
    engine.ingest(
      Array.from({ length: 300 }, (_, i) => ({
        namespace: 'a',
        id: `storm${i}`,
        kind: 'observation',
        text: STORM,
        ts: T + DAY + i * 1000,
      })),
    );
    await engine.drain();
    expect(await engine.consolidate()).toMatchObject({ merged: 299, exact: 299 });
    // Another text with nearly the same vector: its nearest neighbours are 299 dead copies and one live one.
    engine.ingest([
      { namespace: 'a', id: 'stormNewer', kind: 'observation', text: `${STORM}.`, ts: T + 9 * DAY },
    ]);
    await engine.drain();
    const run = await engine.consolidate();
    expect(run).toMatchObject({ merged: 1, near: 1 });
    expect(engine.consolidations('a', 400)).toContainEqual(
      expect.objectContaining({ id: 'storm299', into: 'stormNewer', undoneAt: null }),
    );
  });

  it('never merges texts of the same words in another order or with a negation, though their cosine is 1', async () => {
    const engine = await engines.open({ consolidation: { intervalMs: 0 } });
    const pairs = [
      [
        'Copied the production database into the staging environment before the schema migration',
        'Copied the staging database into the production environment before the schema migration',
      ],
      [
        'The user wants tests written before code and never wants mocks',
        'The user wants mocks written before code and never wants tests',
      ],
      [
        'Alice owns the payments service and Bob owns the search service',
        'Bob owns the payments service and Alice owns the search service',
      ],
    ];
    engine.ingest(
      pairs.flatMap(([older, newer], i) => [
        { namespace: 'a', id: `o${i}`, text: older!, ts: T + i },
        { namespace: 'a', id: `n${i}`, text: newer!, ts: T + 100 + i },
        // A near-duplicate beside them still merges: a word more.
        { namespace: 'a', id: `d${i}`, text: `${newer!} today`, ts: T + 200 + i },
      ]),
    );
    await engine.drain();
    const report = await engine.consolidate({ dryRun: true });
    expect(report.merges.map((m) => [m.id, m.into]).sort()).toEqual([
      ['n0', 'd0'],
      ['n1', 'd1'],
      ['n2', 'd2'],
    ]);
    // The check is an option: off, the hashing embedder's cosine alone merges the swapped texts too.
    const blind = await engines.open({ consolidation: { intervalMs: 0, maxWordChange: 1 } });
    blind.ingest(
      pairs.flatMap(([older, newer], i) => [
        { namespace: 'a', id: `o${i}`, text: older!, ts: T + i },
        { namespace: 'a', id: `n${i}`, text: newer!, ts: T + 100 + i },
      ]),
    );
    await blind.drain();
    expect((await blind.consolidate({ dryRun: true })).merged).toBe(3);
  });

  it('asked for right after a write, waits for its vectors: the writes just made are merged', async () => {
    // A long-lived writer embeds on its embed lane, so a write's vector lands a few ms after the write is
    // acknowledged; a user who runs `cairn consolidate` at once expects those writes to count.
    const engine = await engines.open({ consolidation: { intervalMs: 0 } });
    engine.ingest(background(50));
    await engine.drain();
    // Behind 3,000 writes to another namespace, so their vectors are still on their way when it is asked for.
    engine.ingest([
      ...background(3_000).map((m) => ({ ...m, namespace: 'b' })),
      ...Array.from({ length: 10 }, (_, i) => ({ namespace: 'a', id: `s${i}`, text: STORM, ts: T + i })),
    ]);
    expect(engine.stats().namespaces.a!.pending).toBeGreaterThan(0);
    const run = await engine.consolidate({ namespace: 'a' });
    expect(run.merged).toBe(9);
    expect(engine.get('a', ['s0']).memories[0]!.supersededBy).toBe('s9');
  });

  it('asked for in a follower beside the writer, waits for the writer to embed what was just written', async () => {
    // `cairn consolidate` beside a running server opens the folder as a follower; the server embeds.
    const dir = engines.tempDir();
    const writer = await engines.open({ consolidation: { intervalMs: 0 } }, dir);
    const follower = await engines.open({ consolidation: { intervalMs: 0 }, ifWriterRunning: 'read' }, dir);
    expect(follower.writerRole.role).toBe('follower');
    writer.ingest([
      ...background(3_000).map((m) => ({ ...m, namespace: 'b' })),
      ...Array.from({ length: 10 }, (_, i) => ({ namespace: 'a', id: `s${i}`, text: STORM, ts: T + i })),
    ]);
    expect(follower.stats().namespaces.a!.pending).toBe(10);
    expect((await follower.consolidate({ namespace: 'a' })).merged).toBe(9);
    expect(writer.get('a', ['s0']).memories[0]!.supersededBy).toBe('s9');
  });

  it('never passes a vector stored on the embed lane and not yet in the index', async () => {
    // The lane commits a pass's vectors on its own connection; this thread adds them when the pass returns.
    // A scheduled run in between read them as new, found no near copy in an index without them, and moved
    // its cursor past both for good.
    const engine = await engines.open({ consolidation: { intervalMs: 0 } });
    engine.ingest(background(50));
    await engine.drain();
    await engine.consolidate();
    // Hold the lane's answer after its task has stored the vectors: the gap, made to last.
    const lane = (
      engine as unknown as { embedLane: { pool: { run: (...a: unknown[]) => Promise<unknown> } } }
    ).embedLane.pool;
    const run = lane.run.bind(lane);
    let release = () => {};
    const held = new Promise<void>((r) => {
      release = r;
    });
    lane.run = (...a: unknown[]) =>
      run(...a).then(async (r) => {
        await held;
        return r;
      });
    engine.ingest([
      { namespace: 'a', id: 'nearOld', kind: 'observation', text: NEAR_A, ts: T + 100_000 },
      { namespace: 'a', id: 'nearNew', kind: 'observation', text: NEAR_B, ts: T + 200_000 },
    ]);
    const space = engine.space!.id;
    const until = Date.now() + 20_000;
    while (engine.store.embeddings.coverage(space, 'a').current < 52 && Date.now() < until)
      await new Promise((r) => setTimeout(r, 5));
    expect(engine.store.embeddings.coverage(space, 'a').current).toBe(52);
    expect(engine.stats().namespaces.a!.indexed).toBe(50);
    // What the schedule runs (it does not wait for the backlog, as a run asked for does).
    const scheduled = (
      engine as unknown as { hygiene: { runConsolidation(r: object): Promise<{ merged: number }> } }
    ).hygiene.runConsolidation({});
    setTimeout(release, 50);
    expect((await scheduled).merged).toBe(1);
    expect(engine.get('a', ['nearOld']).memories[0]!.supersededBy).toBe('nearNew');
  });

  it('runs on the writer’s schedule', async () => {
    const engine = await engines.open({ consolidation: { intervalMs: 50 } });
    engine.ingest([
      { namespace: 'a', id: 'p', text: STORM, ts: T },
      { namespace: 'a', id: 'q', text: STORM, ts: T + 1 },
    ]);
    await engine.drain();
    // A wait, not a timing assertion: a loaded machine (a CI run beside other work) took over 5 s.
    await expect.poll(() => engine.get('a', ['p']).memories[0]!.supersededBy, { timeout: 30_000 }).toBe('q');
  });
});

describe('consolidation: what a merge must respect, and how it comes undone', () => {
  const T0 = Date.UTC(2026, 2, 1);
  const text = 'Flaky test: checkout e2e times out on the payment iframe';

  it('undo along a chain, rewrites, an explicit supersede, and what an export leaves out', async () => {
    const engine = await engines.open({ consolidation: { intervalMs: 0 } });
    const write = async (id: string, ts: number, t = text, extra: Record<string, unknown> = {}) => {
      engine.ingest([{ namespace: 'a', id, kind: 'observation', text: t, ts, ...extra }]);
      await engine.drain();
      await engine.consolidate();
    };
    // A chain: a merged into b, then b into c.
    await write('a', T0);
    await write('b', T0 + 1);
    await write('c', T0 + 2);
    const sup = (id: string) => engine.get('a', [id]).memories[0]!.supersededBy;
    expect([sup('a'), sup('b'), sup('c')]).toEqual(['b', 'c', null]);
    const hit = async () =>
      (await engine.search({ namespace: 'a', query: 'flaky checkout e2e payment iframe' })).hits[0]!;
    expect(await hit()).toMatchObject({ id: 'c', dupCount: 2 });
    // Undo the middle: b is back, still holding a; c holds nothing.
    engine.undoConsolidation('a', ['b']);
    expect([sup('a'), sup('b')]).toEqual(['b', null]);
    const both = (
      await engine.search({
        namespace: 'a',
        query: 'flaky checkout e2e payment iframe',
        duplicateThreshold: 2,
      })
    ).hits;
    expect(both.map((h) => [h.id, h.dupCount])).toEqual([
      ['c', undefined],
      ['b', 1],
    ]);
    // An export leaves the job's merges out (an import would make them permanent); a caller's stays.
    expect(engine.supersessions('a')).toEqual([]);

    // Rewriting a merged memory brings it back; the merge is forgotten, not undone.
    await write('d', T0 + 3);
    expect(sup('c')).toBe('d');
    engine.ingest([
      { namespace: 'a', id: 'c', kind: 'observation', text: `${text} (only on Safari)`, ts: T0 + 2 },
    ]);
    await engine.drain();
    expect(sup('c')).toBeNull();
    // A new text for an absorber gives back what it absorbed.
    expect(sup('a')).toBe('b');
    engine.ingest([
      { namespace: 'a', id: 'b', kind: 'observation', text: 'Payment iframe fixed', ts: T0 + 1 },
    ]);
    await engine.drain();
    expect(sup('a')).toBeNull();
    // Given back, it stays live: the job looks only at what was written since its last run.
    await engine.consolidate();
    expect(sup('a')).toBeNull();
    // An explicit supersede of a merged memory replaces the merge: an undo does not bring it back.
    await write('f1', T0 + 5, 'Deploy freeze starts Friday noon');
    await write('f2', T0 + 6, 'Deploy freeze starts Friday noon');
    expect(sup('f1')).toBe('f2');
    engine.ingest([
      {
        namespace: 'a',
        id: 'g',
        kind: 'observation',
        text: 'Deploy freeze moved to Monday',
        ts: T0 + 9,
        supersedes: ['f1'],
      },
    ]);
    await engine.drain();
    expect(sup('f1')).toBe('g');
    engine.undoConsolidation('a');
    expect(sup('f1')).toBe('g');
    expect(engine.supersessions('a')).toEqual([{ id: 'f1', supersededBy: 'g' }]);
  });

  it("lists under explain.superseded every memory a hit's dupCount counts, chains included", async () => {
    const engine = await engines.open({ consolidation: { intervalMs: 0 } });
    for (const [id, ts] of [
      ['a', T0],
      ['b', T0 + 1],
      ['c', T0 + 2],
    ] as const) {
      engine.ingest([{ namespace: 'a', id, kind: 'observation', text, ts }]);
      await engine.drain();
      await engine.consolidate();
    }
    // A chain: a merged into b, then b into c.
    expect(engine.get('a', ['a', 'b']).memories.map((m) => m.supersededBy)).toEqual(['b', 'c']);
    const res = await engine.search({
      namespace: 'a',
      query: 'flaky checkout e2e payment iframe',
      explain: 'full',
    });
    expect(res.hits.map((h) => [h.id, h.dupCount])).toEqual([['c', 2]]);
    const superseded = res.explain.superseded!;
    expect(superseded.map((s) => [s.id, s.supersededBy]).sort()).toEqual([
      ['a', 'c'],
      ['b', 'c'],
    ]);
    for (const s of superseded) expect(s.cosine).toBeGreaterThan(0.9);
  });

  it('deleting the memory that absorbed others gives them back: search finds their words again', async () => {
    const engine = await engines.open({ consolidation: { intervalMs: 0 } });
    engine.ingest(background(50));
    engine.ingest([
      { namespace: 'a', id: 'r1', kind: 'observation', text: STORM, ts: T + 1 },
      { namespace: 'a', id: 'r2', kind: 'observation', text: STORM, ts: T + 2 },
    ]);
    await engine.drain();
    await engine.consolidate();
    const sup = (id: string) => engine.get('a', [id]).memories[0]?.supersededBy;
    expect(sup('r1')).toBe('r2');
    expect(engine.consolidations('a').map((m) => [m.id, m.into])).toEqual([['r1', 'r2']]);
    expect(engine.delete('a', 'r2')).toBe(true);
    expect(sup('r1')).toBeNull();
    // A dissolved merge leaves no record: the list says so (it shows merges in force and undone ones).
    expect(engine.consolidations('a')).toEqual([]);
    const hits = (await engine.search({ namespace: 'a', query: 'integration runner out of disk' })).hits;
    expect(hits[0]?.id).toBe('r1');
    // Given back, and not merged again into a memory that is gone.
    await engine.consolidate();
    expect(sup('r1')).toBeNull();
  });

  it('never merges across sessions, tags or validity windows, and names like constructor are plain names', async () => {
    const engine = await engines.open({ consolidation: { intervalMs: 0 } });
    engine.ingest([
      { namespace: 'constructor', id: 'x1', kind: 'constructor', text, ts: T0, tags: ['ci'] },
      { namespace: 'constructor', id: 'x2', kind: 'constructor', text, ts: T0 + 1 },
      { namespace: 'constructor', id: 'x3', kind: 'constructor', text, ts: T0 + 2, validFrom: T0 },
      { namespace: 'constructor', id: 'x4', kind: 'constructor', text, ts: T0 + 3 },
      { namespace: 'constructor', id: 'x5', kind: 'constructor', text, ts: T0 + 4, session: 'A' },
      { namespace: 'constructor', id: 'x6', kind: 'constructor', text, ts: T0 + 5, session: 'A' },
      { namespace: 'constructor', id: 'x7', kind: 'constructor', text, ts: T0 + 6, session: 'B' },
    ]);
    await engine.drain();
    const r = await engine.consolidate();
    // x2 and x4 share agent, session (none), tags and window; so do x5 and x6 (session A).
    expect(r.merges.map((m) => [m.id, m.into]).sort()).toEqual([
      ['x2', 'x4'],
      ['x5', 'x6'],
    ]);
    expect(r.byNamespace).toEqual({ constructor: 2 });
    // A search of session A still finds its copy: merged into session B's, it was lost to it.
    const inA = await engine.search({
      namespace: 'constructor',
      query: 'flaky checkout',
      filters: { sessions: ['A'] },
      k: 5,
    });
    expect(inA.hits.map((h) => h.id)).toEqual(['x6']);
    const res = await engine.search({
      namespace: 'constructor',
      query: 'flaky checkout',
      k: 5,
      duplicateThreshold: 2,
    });
    for (const h of res.hits) expect(Number.isFinite(h.score)).toBe(true);
    expect(res.hits.map((h) => h.id).sort()).toEqual(['x1', 'x3', 'x4', 'x6', 'x7']);
  });

  it('close() during a run stops it between batches, and nothing is half-merged', async () => {
    const engine = await engines.open({ consolidation: { intervalMs: 0, batchSize: 5 } });
    engine.ingest(
      Array.from({ length: 300 }, (_, i) => ({
        namespace: 'a',
        id: `n${i}`,
        text: `note ${i % 30} of the day`,
        ts: T0 + i,
      })),
    );
    await engine.drain();
    const running = engine.consolidate();
    await engine.close();
    const report = await running;
    expect(report.skipped ?? '').toMatch(/stopped|closing|^$/);
    // Every merge recorded is a whole merge: each merged memory points at a live absorber.
    expect(report.merged).toBeLessThanOrEqual(270);
  });
});
