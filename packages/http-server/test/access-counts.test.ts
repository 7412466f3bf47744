import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CairnEngine } from '@cairn/engine';
import { MemoryService } from '@cairn/service';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHttpServer } from '../src/index.js';

// Access counts over real HTTP on a real data folder: a search counts the memories it hands to its caller,
// and nothing it ranked but left out (a token budget, a context pack's exclusions). The counts are read back
// through a pruning policy's dry run, the one thing they decide.

const T = Date.UTC(2026, 0, 1);
let dir: string;
let engine: CairnEngine;
let app: FastifyInstance;
let base: string;

async function post(path: string, body: unknown) {
  const res = await fetch(`${base}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  // biome-ignore lint/suspicious/noExplicitAny: the tests read arbitrary JSON bodies
  const json: any = await res.json();
  expect(res.status, JSON.stringify(json)).toBeLessThan(300);
  return json;
}

const walruses = (namespace: string) =>
  [
    'the walrus colony hauled out on the ice floe',
    'a walrus tusk can grow to a metre long',
    'walrus calves stay with their mothers for two years',
  ].map((text, i) => ({ namespace, id: `m${i + 1}`, kind: 'note', text, ts: T + i * 60_000 }));

/** The notes of `namespace` accessed fewer than `minAccess` times (a dry run of a policy that keeps none). */
async function usedLessThan(namespace: string, minAccess: number): Promise<string[]> {
  const dry = await post('/v1/hygiene/prune', {
    namespace,
    kind: 'note',
    cap: 0,
    min_access: minAccess,
    dry_run: true,
  });
  return [...dry.pruned].sort();
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'cairn-http-access-'));
  engine = await CairnEngine.open({ dataDir: dir, persistIntervalMs: 0, consolidation: false });
  engine.ingest(
    ['r/acc', 'r/probe', 'r/part', 'r/ctx', 'r/fed', 'r/get', 'r/tl', 'r/list'].flatMap(walruses),
  );
  await engine.drain();
  app = await createHttpServer({ service: new MemoryService({ engine }), keys: null });
  await app.listen({ port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
});

afterAll(async () => {
  await app?.close();
  await engine?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('access counts', () => {
  it('a search counts only the hits its token budget kept', async () => {
    for (let i = 0; i < 3; i++) {
      const res = await post('/v1/search', { namespace: 'r/acc', query: 'walrus', k: 5, max_tokens: 1 });
      expect(res.hits).toEqual([]);
      expect(res.tokens.omitted).toBe(3);
    }
    expect(await usedLessThan('r/acc', 1)).toEqual(['m1', 'm2', 'm3']);

    // A budget of exactly the first hit's cost (read from a namespace holding the same memories).
    const probe = await post('/v1/search', { namespace: 'r/probe', query: 'walrus', k: 1 });
    const part = await post('/v1/search', {
      namespace: 'r/part',
      query: 'walrus',
      k: 3,
      max_tokens: probe.tokens.used,
    });
    expect(part.hits.map((h: { id: string }) => h.id)).toEqual([probe.hits[0].id]);
    expect(await usedLessThan('r/part', 1)).toEqual(
      ['m1', 'm2', 'm3'].filter((id) => id !== probe.hits[0].id),
    );

    // Without a budget every hit is returned, and counted.
    await post('/v1/search', { namespace: 'r/acc', query: 'walrus', k: 5 });
    expect(await usedLessThan('r/acc', 1)).toEqual([]);
    expect(await usedLessThan('r/acc', 2)).toEqual(['m1', 'm2', 'm3']);
  });

  it('a context pack counts what it includes, never a memory in exclude_ids', async () => {
    const pack = await post('/v1/context', {
      namespace: 'r/ctx',
      query: 'walrus',
      k: 5,
      exclude_ids: ['m1'],
      max_tokens: 2_000,
    });
    expect([...pack.included].sort()).toEqual(['m2', 'm3']);
    expect(await usedLessThan('r/ctx', 1)).toEqual(['m1']);
  });

  it('memories/get counts only the records its budget kept', async () => {
    const all = await post('/v1/memories/get', { namespace: 'r/get', ids: ['m1', 'm2', 'm3'] });
    // Each record shows the fetch that returned it.
    expect(all.memories.map((m: { accessCount: number }) => m.accessCount)).toEqual([1, 1, 1]);
    const first = all.memories[0].tokens;
    const part = await post('/v1/memories/get', {
      namespace: 'r/get',
      ids: ['m1', 'm2', 'm3'],
      max_tokens: first,
    });
    expect(part.memories.map((m: { id: string; accessCount: number }) => [m.id, m.accessCount])).toEqual([
      ['m1', 2],
    ]);
    expect(part.omitted).toEqual(['m2', 'm3']);
    expect(await usedLessThan('r/get', 2)).toEqual(['m2', 'm3']);
  });

  it('a timeline refused for its budget counts nothing; one answered counts its anchor', async () => {
    for (let i = 0; i < 3; i++) {
      const res = await fetch(`${base}/v1/timeline?namespace=r/tl&query=tusk&max_tokens=1`);
      expect(res.status).toBe(400);
    }
    // Three refusals counted the anchor three times: enough for min_access 2 to protect it.
    expect(await usedLessThan('r/tl', 1)).toEqual(['m1', 'm2', 'm3']);
    const ok = await fetch(`${base}/v1/timeline?namespace=r/tl&query=tusk`);
    expect(ok.status).toBe(200);
    expect(await usedLessThan('r/tl', 1)).toEqual(['m1', 'm3']);
  });

  it('a listing whose first entry exceeds the budget is refused, never a page whose next page is itself', async () => {
    const res = await fetch(`${base}/v1/search`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        namespace: 'r/list',
        query: '',
        filters: { kinds: ['note'] },
        k: 2,
        max_tokens: 1,
      }),
    });
    // It answered hits [] with listing {offset: 0, next: 0}: a caller following next asked again for good.
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: { message: string } };
    expect(body.error).toMatchObject({ code: 'INVALID_INPUT', field: 'max_tokens' });
    expect(body.error.message).toMatch(/give max_tokens of at least \d+/);
  });

  it('a federated search counts the hits of the merged page within its budget', async () => {
    const res = await post('/v1/search/federated', {
      namespaces: ['r/fed'],
      query: 'walrus',
      k: 5,
      max_tokens: 1,
    });
    expect(res.hits).toEqual([]);
    expect(await usedLessThan('r/fed', 1)).toEqual(['m1', 'm2', 'm3']);
  });
});
