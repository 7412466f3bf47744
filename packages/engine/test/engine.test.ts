import { chmodSync, existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { Embedder } from '@cairn/core';
import { describe, expect, it } from 'vitest';
import { namedOpenFailure } from '../src/data-folder-open.js';
import { DAY, useEngines } from './helpers.js';

const engines = useEngines();

const corpus = [
  {
    namespace: 'a',
    id: '1',
    text: 'We fixed the parseConfig crash in src/auth/middleware.ts',
    ts: '2024-01-01T00:00:00Z',
  },
  { namespace: 'a', id: '2', text: 'Lunch was pizza again', ts: '2024-01-02T00:00:00Z' },
  {
    namespace: 'a',
    id: '3',
    text: 'The config loader now validates unknown keys',
    ts: '2024-01-03T00:00:00Z',
    session: 's1',
  },
  { namespace: 'b', id: '4', text: 'parseConfig is also in namespace b', ts: '2024-01-02T00:00:00Z' },
];

describe('CairnEngine hybrid search', () => {
  it('ingests, embeds and returns hits that carry every explain field', async () => {
    const engine = await engines.open();
    const r = engine.ingest(corpus);
    expect(r.counts).toEqual({ stored: 4, updated: 0, unchanged: 0, rejected: 0 });
    await engine.drain();
    const res = await engine.search({ namespace: 'a', query: 'parseConfig crash', decay: 'off' });
    expect(res.degraded).toEqual([]);
    expect(res.hits[0]?.id).toBe('1');
    const top = res.hits[0]!;
    expect(top.bm25Rank).toBe(1);
    expect(top.vecRank).toBe(1);
    expect(top.cosine).toBeGreaterThan(0.1);
    expect(top.recency).toBe(1);
    // The hashing embedder's vector leg is a backstop (fusionWeight 0.02), the lexical leg a full weight.
    expect(top.rrf).toBeCloseTo(1 / 61 + 0.02 / 61, 10);
    // No agent named, and no other candidate in its session: relevance is the legs' RRF.
    expect(top.parts.agent).toBe(1);
    expect(top.parts.session).toBe(0);
    expect(top.bm25Session).toBeLessThanOrEqual(0);
    expect(top.score).toBeCloseTo(top.rrf * top.recency * top.parts.importance, 12);
    expect(engine.stats().namespaces.a).toMatchObject({ stored: 3, embedded: 3, pending: 0, failed: 0 });
  });

  it("ranks the named agent's memory first and lifts a turn whose session says the rest of the question", async () => {
    const engine = await engines.open();
    const turn = (namespace: string, id: string, session: string, agent: string, text: string) => ({
      namespace,
      id,
      kind: 'turn',
      session,
      agent,
      text,
      ts: '2024-03-01T00:00:00Z',
    });
    engine.ingest([
      turn('a', 'm1', 's1', 'Melanie', 'I started a pottery class last week'),
      turn('a', 'c1', 's2', 'Caroline', 'I signed up for a pottery class too'),
      turn('a', 'c2', 's3', 'Caroline', 'The kiln at the studio was broken'),
      turn('a', 'c3', 's3', 'Caroline', 'so the class moved to Friday'),
      // Another namespace, same session id, every query word: it must lend nothing to namespace a.
      turn('b', 'x1', 's2', 'Caroline', 'pottery kiln studio class Caroline pottery kiln'),
    ]);
    await engine.drain();
    const named = await engine.search({ namespace: 'a', query: 'What pottery class did Caroline start?' });
    expect(named.hits[0]!.id).toBe('c1');
    expect(named.hits[0]!.parts.agent).toBe(1.25);
    expect(named.hits.find((h) => h.id === 'm1')!.parts.agent).toBe(1);
    expect(named.explain.settings).toMatchObject({ agentBoost: 0.25, sessionMatch: 0.5, sessionSupport: 0 });

    const spread = await engine.search({ namespace: 'a', query: 'kiln class', explain: 'full' });
    const byId = new Map(spread.explain.candidates!.map((c) => [c.id, c]));
    // c3 says only "class", as c1 and m1 do; the turn before it and its session say "kiln": it ranks above them.
    expect(
      spread.hits
        .map((h) => h.id)
        .slice(0, 2)
        .sort(),
    ).toEqual(['c2', 'c3']);
    expect(byId.get('c3')!.bm25Session!).toBeLessThan(byId.get('c1')!.bm25Session!);
    const noMatch = await engine.search({ namespace: 'a', query: 'kiln class', sessionMatch: 0 });
    expect(noMatch.hits.every((h) => h.bm25Session === 0 || h.bm25Session === null)).toBe(true);
    // c1 is alone in its session of namespace a, so its share is half its own score (bm25 = own × 1.5).
    // Namespace b's session of the same id, which says every word, lends it nothing.
    const c1 = byId.get('c1')!;
    expect(c1.bm25Session!).toBeCloseTo(c1.bm25! / 3, 9);
  });

  it('returns the whole candidate table with explain: full', async () => {
    const engine = await engines.open();
    engine.ingest(corpus);
    await engine.drain();
    const res = await engine.search({ namespace: 'a', query: 'config', k: 1, explain: 'full', decay: 'off' });
    const table = res.explain.candidates!;
    expect(table.length).toBeGreaterThan(1);
    expect(table.filter((c) => c.fate === 'hit')).toHaveLength(1);
    expect(table[0]!.position).toBe(1);
    expect(table.slice(1).every((c) => c.position === null && c.fate !== 'hit')).toBe(true);
    for (let i = 1; i < table.length; i++)
      expect(table[i - 1]!.score).toBeGreaterThanOrEqual(table[i]!.score);
  });

  it('drops superseded memories before fusion', async () => {
    const engine = await engines.open();
    engine.ingest([{ namespace: 'a', id: 'old', text: 'the deploy key rotates every 30 days' }]);
    engine.ingest([
      { namespace: 'a', id: 'new', text: 'the deploy key rotates every 7 days', supersedes: ['old'] },
    ]);
    await engine.drain();
    const res = await engine.search({ namespace: 'a', query: 'deploy key rotates', explain: 'full' });
    expect(res.hits.map((h) => h.id)).toEqual(['new']);
    expect(res.explain.candidates!.map((c) => c.id)).toEqual(['new']);
    expect(engine.stats().namespaces.a).toMatchObject({ stored: 1, superseded: 1 });
  });

  it('decays older memories, and decay off or a past `now` changes the order', async () => {
    const engine = await engines.open();
    const now = Date.UTC(2025, 0, 1);
    engine.ingest([
      { namespace: 'a', id: 'old', text: 'redis timeout in the worker', ts: now - 60 * DAY },
      { namespace: 'a', id: 'new', text: 'redis timeout in the worker pool', ts: now - DAY },
    ]);
    await engine.drain();
    const decayed = await engine.search({
      namespace: 'a',
      query: 'redis timeout worker',
      now,
      decay: { halfLifeMs: 30 * DAY },
    });
    expect(decayed.hits[0]!.id).toBe('new');
    const old = decayed.hits.find((h) => h.id === 'old')!;
    expect(old.recency).toBeCloseTo(0.25, 5);
    const off = await engine.search({ namespace: 'a', query: 'redis timeout worker', now, decay: 'off' });
    expect(off.hits.every((h) => h.recency === 1)).toBe(true);
    expect(off.explain.settings.halfLifeMs).toBeNull();
    const tau = await engine.search({
      namespace: 'a',
      query: 'redis timeout worker',
      now,
      decay: { tauMs: 10 * DAY },
    });
    expect(tau.explain.settings.halfLifeMs).toBeCloseTo(10 * DAY * Math.LN2, 3);
  });

  it('turns a leg off with a weight of 0', async () => {
    const engine = await engines.open();
    engine.ingest(corpus);
    await engine.drain();
    const lex = await engine.search({ namespace: 'a', query: 'config', weights: { vector: 0 } });
    expect(lex.hits.length).toBeGreaterThan(0);
    expect(lex.hits.every((h) => h.vecRank === null && h.bm25Rank !== null)).toBe(true);
    const vec = await engine.search({ namespace: 'a', query: 'config', weights: { lexical: 0 } });
    expect(vec.hits.length).toBeGreaterThan(0);
    expect(vec.hits.every((h) => h.bm25Rank === null && h.vecRank !== null)).toBe(true);
  });

  it('applies filters to every leg', async () => {
    const engine = await engines.open();
    engine.ingest(corpus);
    await engine.drain();
    const res = await engine.search({ namespace: 'a', query: 'config', filters: { sessions: ['s1'] } });
    expect(res.hits.map((h) => h.id)).toEqual(['3']);
    const since = await engine.search({
      namespace: 'a',
      query: 'config crash pizza',
      filters: { since: Date.UTC(2024, 0, 2) },
    });
    expect(since.hits.every((h) => h.ts >= Date.UTC(2024, 0, 2))).toBe(true);
  });

  it('says the vector leg is degraded while many of the namespace’s memories are stored but not embedded', async () => {
    const engine = await engines.open({ refreshIntervalMs: 0 });
    engine.ingest(
      Array.from({ length: 40 }, (_, i) => ({
        namespace: 'ns',
        id: `m${i}`,
        text: `note ${i} about the redis vault`,
      })),
      { embed: false },
    );
    const before = await engine.search({ namespace: 'ns', query: 'redis vault', k: 3, explain: 'full' });
    expect(before.hits).toHaveLength(3);
    expect(before.degraded).toEqual(['vector']);
    expect(before.explain.degradedReasons.vector).toMatch(
      /40 of the namespace's 40 memories have no vector yet/,
    );
    await engine.drain();
    const after = await engine.search({ namespace: 'ns', query: 'redis vault', k: 3 });
    expect(after.degraded).toEqual([]);
    expect(after.hits[0]!.vecRank).not.toBeNull();
    // One memory written and not yet embedded is not worth the flag.
    engine.ingest([{ namespace: 'ns', id: 'late', text: 'a late note about the redis vault' }], {
      embed: false,
    });
    expect((await engine.search({ namespace: 'ns', query: 'redis vault', k: 3 })).degraded).toEqual([]);
  });

  it('says why a result is empty', async () => {
    const engine = await engines.open();
    engine.ingest(corpus);
    await engine.drain();
    expect((await engine.search({ namespace: 'nobody', query: 'config' })).empty?.reason).toBe(
      'empty_namespace',
    );
    expect((await engine.search({ namespace: 'a', query: 'zebra xylophone' })).empty?.reason).toBe(
      'no_match',
    );
    expect(
      (await engine.search({ namespace: 'a', query: 'pizza', filters: { kinds: ['fact'] } })).empty?.reason,
    ).toBe('filtered_out');
    expect(
      (await engine.search({ namespace: 'a', query: 'pizza', filters: { sessions: ['s1'] } })).empty?.reason,
    ).toBe('filtered_out');
    expect((await engine.search({ namespace: 'a', query: '?!… ---' })).empty?.reason).toBe('blank_query');
  });

  it('re-ingesting a file is idempotent and the same id updates in place', async () => {
    const engine = await engines.open();
    engine.ingest(corpus);
    expect(engine.ingest(corpus).counts).toEqual({ stored: 0, updated: 0, unchanged: 4, rejected: 0 });
    const changed = engine.ingest([{ ...corpus[1]!, text: 'Lunch was sushi' }]);
    expect(changed.counts.updated).toBe(1);
    await engine.drain();
    expect((await engine.search({ namespace: 'a', query: 'pizza' })).hits).toHaveLength(0);
    expect((await engine.search({ namespace: 'a', query: 'sushi' })).hits[0]?.id).toBe('2');
    // Id-less memories get a content-derived id, so the same content is stored once.
    const twice = engine.ingest([
      { namespace: 'a', text: 'no id here' },
      { namespace: 'a', text: 'no id here' },
    ]);
    expect(twice.items[0]!.id).toBe(twice.items[1]!.id);
    expect(engine.stats().namespaces.a!.stored).toBe(4);
  });

  it('rejects bad items by name and stores the good ones of the same batch', async () => {
    const engine = await engines.open();
    const r = engine.ingest([
      { namespace: 'a', id: 'ok', text: 'fine' },
      { id: 'no-ns', text: 'missing namespace' },
      { namespace: 'a', id: 'no-text' },
      { namespace: 'a', text: 'x'.repeat(70_000) },
      { namespace: 'a', text: 'typo', tag: ['x'] },
      'not an object',
    ]);
    expect(r.counts).toEqual({ stored: 1, updated: 0, unchanged: 0, rejected: 5 });
    expect(r.items[1]!.error).toMatchObject({ code: 'INVALID_INPUT', field: 'namespace' });
    expect(r.items[2]!.error).toMatchObject({ field: 'text' });
    expect(r.items[3]!.error?.message).toMatch(/65536 bytes/);
    expect(r.items[4]!.error?.message).toMatch(/unknown field.*tag/);
    expect(engine.get('a', ['ok']).memories).toHaveLength(1);
  });
});

describe('CairnEngine options', () => {
  it('refuses an embedder that is not one, by name, before it creates or locks anything', async () => {
    const dir = join(engines.tempDir(), 'never');
    for (const [embedder, says] of [
      ['hash:256', /embedder takes an Embedder; a spec such as "hash:256" goes in embedderSpec/],
      [{ modelId: 'm', dimensions: 8 }, /embedder takes an Embedder: an object with embed/],
      [{ modelId: '', dimensions: 8, embed: async () => [] }, /embedder takes an Embedder/],
      [{ modelId: 'm', dimensions: 0, embed: async () => [] }, /embedder takes an Embedder/],
      [
        { modelId: 'm', dimensions: 8, embed: async () => [], fusionWeight: '1' },
        /fusionWeight of 0 or more/,
      ],
      [{ modelId: 'm', dimensions: 8, embed: async () => [], similarityFloor: 2 }, /similarityFloor in/],
    ] as const) {
      const opening = engines.open({ embedder: embedder as unknown as Embedder }, dir);
      await expect(opening).rejects.toMatchObject({ code: 'INVALID_INPUT', data: { field: 'embedder' } });
      await expect(opening).rejects.toThrow(says);
    }
    expect(existsSync(dir)).toBe(false);
  });
});

describe('CairnEngine degraded mode', () => {
  it('serves lexical-only and says degraded when there is no embedder', async () => {
    const engine = await engines.open({ embedder: null });
    engine.ingest(corpus);
    await engine.drain();
    const res = await engine.search({ namespace: 'a', query: 'config' });
    expect(res.degraded).toEqual(['vector']);
    expect(res.explain.degradedReasons.vector).toMatch(/no embedder/);
    expect(res.hits.length).toBeGreaterThan(0);
  });

  it('keeps memories pending while the embedder is down and indexes them once it is back', async () => {
    // Stands in for a remote embedding service that is unreachable, then recovers.
    let up = false;
    const real = (await import('@cairn/embed')).HashingEmbedder;
    const inner = new real();
    const flaky: Embedder = {
      modelId: inner.modelId,
      dimensions: inner.dimensions,
      async embed(texts) {
        if (!up) throw new Error('connect ECONNREFUSED 127.0.0.1:11434');
        return inner.embed(texts);
      },
    };
    const engine = await engines.open({ embedder: flaky });
    engine.ingest(corpus);
    await expect(engine.drain(2)).rejects.toThrow(/ECONNREFUSED/);
    const res = await engine.search({ namespace: 'a', query: 'config' });
    expect(res.degraded).toEqual(['vector']);
    expect(res.explain.degradedReasons.vector).toMatch(/ECONNREFUSED/);
    expect(res.hits.length).toBeGreaterThan(0);
    expect(engine.stats().namespaces.a!.pending).toBe(3);
    up = true;
    await engine.drain();
    expect(engine.stats().namespaces.a).toMatchObject({ pending: 0, embedded: 3 });
    expect((await engine.search({ namespace: 'a', query: 'config' })).degraded).toEqual([]);
  });

  it('records vectors of the wrong dimension as failures instead of retrying forever', async () => {
    const bad: Embedder = {
      modelId: 'broken',
      dimensions: 8,
      embed: async (t) => t.map(() => new Float32Array(7)),
    };
    const engine = await engines.open({ embedder: bad });
    engine.ingest([{ namespace: 'a', id: 'x', text: 'hello' }]);
    await engine.drain();
    expect(engine.stats().namespaces.a).toMatchObject({ failed: 1, pending: 0, embedded: 0 });
  });
});

describe('CairnEngine records', () => {
  it('gets full records and walks a timeline within a session', async () => {
    const engine = await engines.open();
    const t0 = Date.UTC(2024, 0, 1);
    engine.ingest(
      Array.from({ length: 9 }, (_, i) => ({
        namespace: 'a',
        id: `t${i}`,
        session: i < 6 ? 's' : 'other',
        ts: t0 + i * 1000,
        text: `turn ${i}`,
      })),
    );
    const tl = engine.timeline('a', 't3', 2, 5);
    expect(tl.scope).toBe('session');
    expect(tl.before.map((m) => m.id)).toEqual(['t1', 't2']);
    expect(tl.after.map((m) => m.id)).toEqual(['t4', 't5']);
    expect(() => engine.timeline('b', 't3', 1, 1)).toThrow(/no memory with id "t3" in namespace "b"/);
    const got = engine.get('a', ['t8', 'nope', 't0']);
    expect(got.memories.map((m) => m.id)).toEqual(['t8', 't0']);
    expect(got.missing).toEqual(['nope']);
  });
});

describe('a new data folder', () => {
  it('keeps itself out of git when Cairn created it (the default ./.cairn sits in a repository)', async () => {
    const parent = engines.tempDir();
    const dir = join(parent, '.cairn');
    const engine = await engines.open({}, dir);
    expect(readFileSync(join(dir, '.gitignore'), 'utf8')).toMatch(/^\*$/m);
    // And out of other local accounts' reach: it was 0755, its database 0644.
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    engine.ingest([{ namespace: 'a', id: '1', text: 'kept out of git' }]);
    await engine.drain();
    // Its index files' folders alike (they were 0755).
    const spaces = readdirSync(join(dir, 'vectors'));
    expect(spaces.length).toBeGreaterThan(0);
    for (const s of spaces) expect(statSync(join(dir, 'vectors', s)).mode & 0o777).toBe(0o700);
    // A folder the user made (their own, perhaps with other files) is left as it was.
    const own = engines.tempDir();
    chmodSync(own, 0o750);
    await engines.open({}, own);
    expect(existsSync(join(own, '.gitignore'))).toBe(false);
    expect(statSync(own).mode & 0o777).toBe(0o750);
  });
});

describe('a data folder the file system will not let Cairn write', () => {
  // Root (which the tests run as) may write a chmod 555 folder, and mounting a read-only one needs root
  // too: the mapping is checked with the errors Node raises there.
  const errno = (code: string) => Object.assign(new Error(`${code}: open '/ro/writer.lock.x.new'`), { code });

  it('is named: STORAGE_ERROR when read-only or not its own, STORAGE_FULL when the disk is full', () => {
    for (const code of ['EROFS', 'EACCES', 'EPERM'])
      expect(namedOpenFailure('/ro', errno(code))).toMatchObject({
        code: 'STORAGE_ERROR',
        data: { field: 'dataDir' },
        message: expect.stringContaining(`/ro cannot be written (${code})`),
      });
    for (const code of ['ENOSPC', 'EDQUOT'])
      expect(namedOpenFailure('/ro', errno(code))).toMatchObject({ code: 'STORAGE_FULL' });
    const other = errno('EMFILE');
    expect(namedOpenFailure('/ro', other)).toBe(other);
  });
});
