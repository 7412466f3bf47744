import { CairnError } from '@cairn/core';
import { HttpReranker } from '@cairn/embed';
import { type FakeServer, startFakeReranker } from '@cairn/embed/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { DAY, useEngines } from './helpers.js';

const engines = useEngines();
const fakes: Array<FakeServer<unknown>> = [];
afterEach(async () => {
  for (const f of fakes.splice(0)) await f.close();
});
const NOW = Date.UTC(2026, 5, 1);

const MEMORIES = [
  { namespace: 'a', id: 'partial', text: 'The deploy pipeline runs on every merge to main', ts: NOW - DAY },
  {
    namespace: 'a',
    id: 'full',
    text: 'Deploy rollback: run the rollback job, then page the on-call',
    ts: NOW - 5 * DAY,
  },
  { namespace: 'a', id: 'other', text: 'Lunch order for the offsite is due Friday', ts: NOW - 2 * DAY },
  {
    namespace: 'a',
    id: 'auth',
    text: 'Token refresh fails when the clock skews',
    ts: NOW - 3 * DAY,
    tags: ['auth'],
    meta: { files: ['src/auth/refresh.ts'] },
  },
  { namespace: 'a', id: 'billing', text: 'Token refresh for billing webhooks is fine', ts: NOW - DAY },
];

async function engineWith(reranker?: HttpReranker) {
  const engine = await engines.open({ consolidation: false, ...(reranker ? { reranker } : {}) });
  engine.ingest(MEMORIES);
  await engine.drain();
  return engine;
}

describe('rerank and boost hooks', () => {
  it('the deterministic reranker puts the memory that says the most of the query first, and says so', async () => {
    const engine = await engineWith();
    const q = { namespace: 'a', query: 'how do we roll back a deploy? rollback on-call', now: NOW, k: 3 };
    const plain = await engine.search(q);
    expect(plain.rerank).toBeUndefined();
    const res = await engine.search({ ...q, rerank: 'deterministic' });
    expect(res.hits[0]!.id).toBe('full');
    expect(res.rerank).toMatchObject({ by: 'deterministic', applied: true });
    expect(res.hits[0]!.rerank!.score).toBeGreaterThan(res.hits[1]!.rerank!.score);
    // The same inputs give the same page.
    expect((await engine.search({ ...q, rerank: 'deterministic' })).hits.map((h) => h.id)).toEqual(
      res.hits.map((h) => h.id),
    );
  });

  for (const format of ['tei', 'cohere'] as const) {
    it(`a ${format} reranker behind HTTP reorders the page by its scores (used by default once configured)`, async () => {
      const fake = await startFakeReranker({
        format,
        scoreOf: (_q, text) => (text.includes('Lunch') ? 0.99 : text.length / 1000),
      });
      fakes.push(fake as FakeServer<unknown>);
      const engine = await engineWith(
        new HttpReranker({ format, url: fake.url, ...(format === 'cohere' ? { model: 'rerank-v3.5' } : {}) }),
      );
      const res = await engine.search({ namespace: 'a', query: 'deploy lunch', now: NOW, k: 2 });
      expect(res.rerank).toMatchObject({
        by: format === 'tei' ? `tei:${fake.url}` : 'cohere:rerank-v3.5',
        applied: true,
      });
      expect(res.hits[0]!.id).toBe('other');
      expect(res.hits[0]!.rerank).toMatchObject({ score: 0.99 });
      const sent = fake.requests.at(-1)!.body as unknown as Record<string, unknown>;
      expect(sent.query).toBe('deploy lunch');
      expect(format === 'tei' ? sent.texts : sent.documents).toContain(
        'Lunch order for the offsite is due Friday',
      );
      if (format === 'cohere') expect(sent.model).toBe('rerank-v3.5');
      // Off for one query: the fused order, no rerank block.
      const off = await engine.search({
        namespace: 'a',
        query: 'deploy lunch',
        now: NOW,
        k: 2,
        rerank: 'off',
      });
      expect(off.rerank).toBeUndefined();
    });
  }

  it('a reranker that hangs or fails leaves the fused order and says why; the search still answers', async () => {
    const fake = await startFakeReranker({ format: 'tei' });
    fakes.push(fake as FakeServer<unknown>);
    const engine = await engineWith(new HttpReranker({ format: 'tei', url: fake.url }));
    const q = { namespace: 'a', query: 'deploy rollback', now: NOW, k: 3, rerank: 'off' as const };
    const fused = (await engine.search(q)).hits.map((h) => h.id);
    await fake.setMode('hang');
    const slow = await engine.search({ ...q, rerank: 'model', rerankTimeoutMs: 200 });
    expect(slow.rerank).toMatchObject({ applied: false, reason: expect.stringMatching(/within 200 ms/) });
    expect(slow.hits.map((h) => h.id)).toEqual(fused);
    expect(slow.hits[0]!.rerank).toBeUndefined();
    await fake.setMode('error500');
    const failed = await engine.search({ ...q, rerank: 'model' });
    expect(failed.rerank).toMatchObject({ applied: false, reason: expect.stringMatching(/HTTP 500/) });
    expect(failed.hits.map((h) => h.id)).toEqual(fused);

    const none = await engineWith();
    const asked = await none.search({ ...q, rerank: 'model' });
    expect(asked.rerank).toMatchObject({ by: 'none', applied: false });
  });

  it('boosts by tag, path, kind or agent multiply in as parts.boost, and a bad boost is named', async () => {
    const engine = await engineWith();
    const q = { namespace: 'a', query: 'token refresh', now: NOW, k: 2 };
    const plain = await engine.search(q);
    expect(plain.hits[0]!.id).toBe('billing');
    const byTag = await engine.search({ ...q, boosts: [{ tag: 'auth', factor: 2 }] });
    expect(byTag.hits[0]).toMatchObject({ id: 'auth', parts: { boost: 2 } });
    expect(byTag.hits[1]).toMatchObject({ id: 'billing', parts: { boost: 1 } });
    const byPath = await engine.search({ ...q, boosts: [{ path: 'src/auth/', factor: 2 }] });
    expect(byPath.hits[0]!.id).toBe('auth');
    const down = await engine.search({ ...q, boosts: [{ path: 'src/auth/', factor: 0.5 }] });
    expect(down.hits[0]!.id).toBe('billing');
    try {
      await engine.search({ ...q, boosts: [{ factor: 2 }] });
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(CairnError);
      expect((err as CairnError).data.field).toBe('boosts.0');
    }
  });
});

describe('reranker specs', () => {
  it('parses tei:<url> and cohere:<model>[@<url>], and names a bad one', async () => {
    const { parseRerankerSpec } = await import('@cairn/embed');
    expect(parseRerankerSpec('tei:http://127.0.0.1:8080', {}).id).toBe('tei:http://127.0.0.1:8080');
    expect(parseRerankerSpec('cohere:rerank-v3.5', {}).id).toBe('cohere:rerank-v3.5');
    const proxied = parseRerankerSpec('cohere:rerank-v3.5@https://user@proxy.example', {});
    expect(proxied.id).toBe('cohere:rerank-v3.5');
    for (const bad of ['nope', 'tei:ftp://x', 'cohere:', 'other:http://x'])
      expect(() => parseRerankerSpec(bad, {})).toThrow(/reranker spec/);
  });
});
