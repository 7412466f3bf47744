import { closeSync, mkdtempSync, openSync, rmSync, statSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CairnEngine } from '@cairn/engine';
import { MemoryService } from '@cairn/service';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHttpServer } from '../src/index.js';

// A cairn.db whose pages a failing disk overwrote, served over real HTTP: readiness fails once the
// background integrity check finds the damage, and requests get the documented error shape naming it,
// never a silent wrong answer or an anonymous 500.

let dir: string;
let engine: CairnEngine;
let app: FastifyInstance;
let port: number;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'cairn-http-damaged-'));
  const writer = await CairnEngine.open({ dataDir: dir, persistIntervalMs: 0, refreshIntervalMs: 0 });
  writer.ingest(
    Array.from({ length: 2_000 }, (_, i) => ({
      namespace: 'a',
      id: `m${i}`,
      text: `memory ${i} token zq${i}x`,
    })),
  );
  await writer.drain();
  await writer.close();
  const path = join(dir, 'cairn.db');
  const fd = openSync(path, 'r+');
  const pages = Math.floor(statSync(path).size / 4096);
  // Damage in the back half of the file: the records, FTS and vectors written after the schema. The schema's
  // own pages come first (the migrations ran on an empty file); damage there fails the open itself, named,
  // which is another case: this one is damage found only once the engine serves.
  const from = Math.floor(pages / 2);
  for (let i = 0; i < 12; i++)
    writeSync(fd, Buffer.alloc(4096, 0xa5 ^ i), 0, 4096, (from + ((i * 7919) % (pages - from))) * 4096);
  closeSync(fd);
  engine = await CairnEngine.open({ dataDir: dir, persistIntervalMs: 0 });
  app = await createHttpServer({ service: new MemoryService({ engine }), keys: null });
  await app.listen({ port: 0, host: '127.0.0.1' });
  port = (app.server.address() as { port: number }).port;
});

afterAll(async () => {
  await app.close();
  await engine.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('a damaged cairn.db over HTTP', () => {
  it('fails readiness and answers every request with STORAGE_ERROR in the error shape', async () => {
    let ready: { status: number; body: { checks: { store: { ok: boolean; detail?: string } } } };
    for (;;) {
      const r = await fetch(`http://127.0.0.1:${port}/readyz`);
      ready = { status: r.status, body: (await r.json()) as typeof ready.body };
      if (ready.status === 503) break;
      expect(ready.body.checks.store.detail).toMatch(/integrity (checking|unchecked)/);
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(ready.body.checks.store).toEqual({
      ok: false,
      detail: expect.stringMatching(/^cairn\.db is damaged: /),
    });
    const search = await fetch(`http://127.0.0.1:${port}/v1/search`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ namespace: 'a', query: 'zq5x' }),
    });
    const write = await fetch(`http://127.0.0.1:${port}/v1/memories`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ namespace: 'a', memories: [{ id: 'new', text: 'never half-written' }] }),
    });
    for (const res of [search, write]) {
      expect(res.status).toBe(500);
      const body = (await res.json()) as { error: { code: string; message: string } };
      expect(body).toEqual({
        error: { code: 'STORAGE_ERROR', message: expect.stringMatching(/is damaged/) },
      });
      expect(body.error.message).toContain('cairn check --data-dir');
    }
  });
});
