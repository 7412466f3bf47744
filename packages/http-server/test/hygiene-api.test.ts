import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CairnClient } from '@cairn/client';
import { CairnError } from '@cairn/core';
import { CairnEngine } from '@cairn/engine';
import { MemoryService } from '@cairn/service';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHttpServer, parseApiKeys } from '../src/index.js';

// /v1/hygiene over real HTTP on a real data folder, through the typed client: consolidation run dry, then
// for real, its merges listed and undone; pruning with a dry run; and a tenant key confined to its own.

const ADMIN = 'admin-key-0123456789';
const TENANT = 'tenant-key-0123456789';
const T = Date.UTC(2026, 0, 1);
const STORM = 'Cache warmer timed out talking to redis-7 in eu-west';
let dir: string;
let engine: CairnEngine;
let app: FastifyInstance;
let admin: CairnClient;
let tenant: CairnClient;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'cairn-http-hygiene-'));
  engine = await CairnEngine.open({ dataDir: dir, persistIntervalMs: 0, consolidation: { intervalMs: 0 } });
  for (const ns of ['acme', 'globex'])
    engine.ingest(
      Array.from({ length: 50 }, (_, i) => ({
        namespace: ns,
        id: `storm${i}`,
        kind: 'observation',
        text: STORM,
        ts: T + i,
      })),
    );
  await engine.drain();
  app = await createHttpServer({
    service: new MemoryService({ engine }),
    keys: parseApiKeys(`${ADMIN}=*;${TENANT}=acme`),
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const baseUrl = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
  admin = new CairnClient({ baseUrl, apiKey: ADMIN });
  tenant = new CairnClient({ baseUrl, apiKey: TENANT });
});

afterAll(async () => {
  await app?.close();
  await engine?.close();
  rmSync(dir, { recursive: true, force: true });
});

async function refused(p: Promise<unknown>): Promise<CairnError> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(CairnError);
    return err as CairnError;
  }
  throw new Error('the call was accepted');
}

describe('/v1/hygiene', () => {
  it('consolidates a namespace through the API: dry run, run, hits with dupCount, list and undo', async () => {
    const dry = await tenant.consolidate({ namespace: 'acme', dry_run: true });
    expect(dry).toMatchObject({ dry_run: true, merged: 49, exact: 49, by_namespace: { acme: 49 } });
    const run = await tenant.consolidate({ namespace: 'acme' });
    expect(run).toMatchObject({ dry_run: false, merged: 49 });
    expect(run.merges[0]).toMatchObject({ namespace: 'acme', into: 'storm49', cosine: 1, undone_at: null });

    const res = await tenant.search({ namespace: 'acme', query: 'cache warmer timed out', k: 3 });
    expect(res.hits.map((h) => [h.id, h.dupCount])).toEqual([['storm49', 49]]);
    const full = await tenant.search({ namespace: 'acme', query: 'cache warmer', explain: 'full' });
    expect((full.trace as { superseded: unknown[] }).superseded).toHaveLength(20);
    // globex was not looked at: a namespaced run leaves the others (and the shared cursor) alone.
    const other = await admin.search({ namespace: 'globex', query: 'cache warmer timed out', k: 3 });
    expect(other.hits[0]!.dupCount).toBeUndefined();

    const list = await tenant.consolidations({ namespace: 'acme', limit: 5 });
    expect(list.merges).toHaveLength(5);
    const undone = await tenant.undoConsolidation({ namespace: 'acme', ids: ['storm0'] });
    expect(undone.restored).toEqual([expect.objectContaining({ id: 'storm0', into: 'storm49' })]);
    const rec = await tenant.get({ namespace: 'acme', ids: ['storm0'] });
    expect(rec.memories[0]).toMatchObject({ supersededBy: null, accessCount: expect.any(Number) });

    // The operator runs every namespace at once.
    expect((await admin.consolidate({})).by_namespace).toEqual({ globex: 49 });
  });

  it('prunes with a dry run first, and names a bad policy', async () => {
    await admin.write({
      namespace: 'acme',
      memories: Array.from({ length: 6 }, (_, i) => ({
        slot: 'todo',
        key: `t${i}`,
        text: `todo item ${i}`,
        ts: T + i,
      })),
    });
    // A misspelt dry run is refused, not run for real (an intersection of schemas let it through).
    for (const typo of [{ dryRun: true }, { min_acess: 3 }]) {
      const err = await refused(tenant.prune({ namespace: 'acme', slot: 'todo', cap: 0, ...typo } as never));
      expect(err.code).toBe('INVALID_INPUT');
      expect(err.message).toContain(Object.keys(typo)[0]!);
    }
    const dry = await tenant.prune({ namespace: 'acme', slot: 'todo', cap: 2, dry_run: true });
    expect(dry).toMatchObject({ dry_run: true, covered: 6, protected: 0 });
    expect(dry.pruned).toHaveLength(4);
    const run = await tenant.prune({ namespace: 'acme', slot: 'todo', cap: 2 });
    expect(run.pruned).toEqual(dry.pruned);
    const left = await tenant.search({ namespace: 'acme', query: '', filters: { kinds: ['fact'] }, k: 10 });
    expect(left.hits.map((h) => h.id).sort()).toEqual(['fact:todo:t4', 'fact:todo:t5']);

    const bad = await refused(tenant.prune({ namespace: 'acme', cap: 2 } as never));
    expect(bad.code).toBe('INVALID_INPUT');
    expect(bad.data.field).toBe('slot');
  });

  it('confines a tenant key: other namespaces and the all-namespace run are forbidden, and nothing changes', async () => {
    for (const call of [
      () => tenant.consolidate({ namespace: 'globex' }),
      () => tenant.consolidate({}),
      () => tenant.undoConsolidation({ namespace: 'globex' }),
      () => tenant.consolidations({ namespace: 'globex' }),
      () => tenant.prune({ namespace: 'globex', kind: 'observation', cap: 0 }),
    ]) {
      const err = await refused(call());
      expect(err.code).toBe('FORBIDDEN_NAMESPACE');
    }
    expect(engine.stats().namespaces.globex).toMatchObject({ stored: 1, superseded: 49 });
  });
});
