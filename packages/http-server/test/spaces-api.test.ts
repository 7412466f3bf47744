import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CairnEngine } from '@cairn/engine';
import { MemoryService } from '@cairn/service';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHttpServer, parseApiKeys } from '../src/index.js';

// /v1/spaces over real HTTP on a real data folder: a live reindex started through the API, followed to
// its switch while searches keep both legs; the routes are an operator's (a key for every namespace).

const ADMIN = 'admin-key-0123456789';
const TENANT = 'tenant-key-0123456789';
let dir: string;
let engine: CairnEngine;
let app: FastifyInstance;
let base: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'cairn-http-spaces-'));
  engine = await CairnEngine.open({ dataDir: dir, persistIntervalMs: 0, refreshIntervalMs: 200 });
  engine.ingest(
    Array.from({ length: 3_000 }, (_, i) => ({
      namespace: i % 3 === 0 ? 'acme' : 'globex',
      id: `m${i}`,
      text: `note ${i} on the ${['billing', 'search', 'deploy'][i % 3]} service, ticket T${i}`,
    })),
  );
  await engine.drain();
  app = await createHttpServer({
    service: new MemoryService({ engine }),
    keys: parseApiKeys(`${ADMIN}=*;${TENANT}=acme`),
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
});

afterAll(async () => {
  await app?.close();
  await engine?.close();
  rmSync(dir, { recursive: true, force: true });
});

async function call(method: string, path: string, key: string, body?: unknown) {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : null,
  });
  // biome-ignore lint/suspicious/noExplicitAny: the tests read arbitrary JSON bodies
  return { status: res.status, body: (await res.json()) as Record<string, any> };
}

describe('/v1/spaces', () => {
  it('is an operator route: a key scoped to some namespaces gets 403 in the error shape, and nothing starts', async () => {
    for (const [method, path, body] of [
      ['GET', '/v1/spaces', undefined],
      ['GET', '/v1/dead-letters', undefined],
      ['POST', '/v1/spaces/reindex', { embedder: 'hash:128' }],
      ['POST', '/v1/spaces/activate', { space: 'cairn-hash-v1/128' }],
      ['POST', '/v1/spaces/drop', { space: 'cairn-hash-v1/384' }],
    ] as const) {
      const r = await call(method, path, TENANT, body);
      expect(r.status, path).toBe(403);
      expect(r.body.error).toMatchObject({ code: 'FORBIDDEN_NAMESPACE', field: 'authorization' });
    }
    const spaces = await call('GET', '/v1/spaces', ADMIN);
    expect(spaces.body.spaces.map((s: { id: string }) => s.id)).toEqual(['cairn-hash-v1/384']);
    // The embedded mode has no queues, so no dead letters: said, not an error.
    expect((await call('GET', '/v1/dead-letters', ADMIN)).body).toEqual({
      mode: 'embedded',
      dead_letters: [],
    });
  });

  it('refuses bad requests by name and loses nothing', async () => {
    const unknownField = await call('POST', '/v1/spaces/reindex', ADMIN, { embedder: 'hash:128', speed: 9 });
    expect(unknownField.status).toBe(400);
    expect(unknownField.body.error.code).toBe('INVALID_INPUT');
    const badSpec = await call('POST', '/v1/spaces/reindex', ADMIN, { embedder: 'word2vec:nope' });
    expect(badSpec.status).toBe(400);
    expect(badSpec.body.error.code).toBe('INVALID_INPUT');
    const noSuch = await call('POST', '/v1/spaces/activate', ADMIN, { space: 'cairn-hash-v1/999' });
    expect(noSuch.status).toBe(404);
    expect(noSuch.body.error).toMatchObject({ code: 'NOT_FOUND', field: 'space' });
    const active = await call('POST', '/v1/spaces/drop', ADMIN, { space: 'cairn-hash-v1/384' });
    expect(active.status).toBe(400);
    expect((await call('GET', '/v1/spaces', ADMIN)).body.spaces).toHaveLength(1);
  });

  it('starts a live reindex (202), shows its progress, switches with no search losing its vector leg, and drops the old space', async () => {
    const started = await call('POST', '/v1/spaces/reindex', ADMIN, { embedder: 'hash:128' });
    expect(started.status).toBe(202);
    expect(started.body).toMatchObject({
      started: true,
      space: { id: 'cairn-hash-v1/128', active: false, state: 'building', activate_when_ready: true },
    });
    let i = 0;
    for (;;) {
      // Writes and searches go on throughout; the tenant's key sees only its own namespace.
      const w = await call('POST', '/v1/memories', TENANT, {
        namespace: 'acme',
        id: `live${i}`,
        text: `live ${i}`,
      });
      expect(w.status).toBe(201);
      const s = await call('POST', '/v1/search', TENANT, { namespace: 'acme', query: 'billing ticket T42' });
      expect(s.status).toBe(200);
      expect(s.body.degraded).toEqual([]);
      expect(s.body.hits.every((h: { namespace: string }) => h.namespace === 'acme')).toBe(true);
      i += 1;
      const list = (await call('GET', '/v1/spaces', ADMIN)).body.spaces as Array<{
        id: string;
        active: boolean;
      }>;
      if (list.find((x) => x.id === 'cairn-hash-v1/128')?.active) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    const metrics = await (await fetch(`${base}/metrics`)).text();
    expect(metrics).toMatch(
      /cairn_embedding_space_state\{space="cairn-hash-v1\/128",state="ready",active="true"\} 1/,
    );
    expect(metrics).toMatch(
      /cairn_embedding_space_memories\{space="cairn-hash-v1\/128",measure="total"\} \d+/,
    );

    // Every write made during the reindex has its vector in the new space.
    await engine.drain();
    const stats = await call('GET', '/v1/stats', ADMIN);
    expect(stats.body.space).toBe('cairn-hash-v1/128');
    expect(stats.body.namespaces.acme).toMatchObject({ stored: 1_000 + i, embedded: 1_000 + i, pending: 0 });

    const dropped = await call('POST', '/v1/spaces/drop', ADMIN, { space: 'cairn-hash-v1/384' });
    expect(dropped.status).toBe(200);
    expect(dropped.body.dropped).toBe('cairn-hash-v1/384');
    expect(dropped.body.vectors).toBeGreaterThanOrEqual(3_000);
    expect(readdirSync(join(dir, 'vectors')).some((d) => d.startsWith('cairn-hash-v1_384'))).toBe(false);
    const after = await call('GET', '/v1/spaces', ADMIN);
    expect(after.body.spaces.map((s: { id: string }) => s.id)).toEqual(['cairn-hash-v1/128']);
  }, 60_000);
});
