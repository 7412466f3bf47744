import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CairnEngine } from '@cairn/engine';
import { embeddingText } from '@cairn/pipeline';
import { MemoryService } from '@cairn/service';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHttpServer } from '../src/index.js';

// Writes that race each other over real HTTP, embedded mode. The documented rule: writes to one id are
// applied one at a time, the one stored last wins, and there is always exactly one record; its vector is
// the vector of the text it holds (never of a text it was overwritten with); a deleted memory is never
// found again until it is written anew.

let dir: string;
let engine: CairnEngine;
let app: FastifyInstance;
let base: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'cairn-http-races-'));
  engine = await CairnEngine.open({ dataDir: dir, persistIntervalMs: 0 });
  app = await createHttpServer({ service: new MemoryService({ engine }), keys: null });
  await app.listen({ port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
});

afterAll(async () => {
  await app.close();
  await engine.close();
  rmSync(dir, { recursive: true, force: true });
});

const post = (body: unknown) =>
  fetch(`${base}/v1/memories`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
const del = (ns: string, id: string) =>
  fetch(`${base}/v1/memories/${id}?namespace=${ns}`, { method: 'DELETE' });

/** The stored record and whether its vector is the one its current text embeds to. */
async function recordOf(ns: string, id: string) {
  await engine.drain();
  const rows = engine.store.db
    .prepare('SELECT key, text, deleted_at AS deletedAt FROM memories WHERE namespace = ? AND id = ?')
    .all(ns, id) as Array<{ key: number; text: string; deletedAt: number | null }>;
  const row = rows[0];
  const stored = row ? engine.vectors!.vectorsFor(ns, [row.key]).get(row.key) : undefined;
  let vectorMatchesText: boolean | null = null;
  if (row && stored) {
    const [expected] = await engine.embedder!.embed([embeddingText({ title: null, text: row.text })]);
    vectorMatchesText = expected!.every((x, i) => Math.abs(x - stored[i]!) < 1e-6);
  }
  return {
    rows: rows.length,
    text: row?.text,
    deleted: row?.deletedAt != null,
    vectorMatchesText,
    hasVector: !!stored,
  };
}

describe('racing writes over HTTP', () => {
  it('many concurrent writes of one id leave exactly one record, the last stored, with its own vector', async () => {
    const texts = Array.from({ length: 40 }, (_, i) => `draft ${i}: the deploy target is region-${i}`);
    const answers = await Promise.all(texts.map((text) => post({ namespace: 'race', id: 'm1', text })));
    expect(answers.map((a) => a.status).every((s) => s === 201)).toBe(true);
    const r = await recordOf('race', 'm1');
    expect(r.rows).toBe(1);
    expect(texts).toContain(r.text);
    expect(r.vectorMatchesText).toBe(true);
    // A write acknowledged before the next one was sent is replaced by it.
    expect(
      (await post({ namespace: 'race', id: 'm1', text: 'final answer: the deploy target is fly.io' })).status,
    ).toBe(201);
    expect((await recordOf('race', 'm1')).text).toBe('final answer: the deploy target is fly.io');
    const hits = await engine.search({ namespace: 'race', query: 'deploy target region', k: 5 });
    expect(hits.hits.map((h) => h.id)).toEqual(['m1']);
  });

  it('concurrent upserts of one fact slot and key leave one fact holding one of the values', async () => {
    const values = Array.from({ length: 30 }, (_, i) => `the user lives in city-${i}`);
    const answers = await Promise.all(
      values.map((text) => post({ namespace: 'facts', slot: 'user', key: 'city', kind: 'fact', text })),
    );
    expect(answers.every((a) => a.status === 201)).toBe(true);
    const rows = engine.store.db
      .prepare("SELECT id, text FROM memories WHERE namespace = 'facts' AND deleted_at IS NULL")
      .all() as Array<{ id: string; text: string }>;
    expect(rows).toHaveLength(1);
    expect(values).toContain(rows[0]!.text);
    expect((await recordOf('facts', rows[0]!.id)).vectorMatchesText).toBe(true);
  });

  it('a delete racing a write ends either deleted and unfindable, or live with its vector, never half of each', async () => {
    const ids = Array.from({ length: 25 }, (_, i) => `d${i}`);
    for (const id of ids)
      expect((await post({ namespace: 'dr', id, text: `first text of ${id} zq${id}x` })).status).toBe(201);
    await Promise.all(
      ids.flatMap((id) => [
        post({ namespace: 'dr', id, text: `second text of ${id} zq${id}x` }),
        del('dr', id),
      ]),
    );
    let deleted = 0;
    for (const id of ids) {
      const r = await recordOf('dr', id);
      expect(r.rows).toBe(1);
      const found = (await engine.search({ namespace: 'dr', query: `zq${id}x`, k: 3 })).hits.some(
        (h) => h.id === id,
      );
      if (r.deleted) {
        deleted++;
        expect(found).toBe(false);
      } else {
        expect(r.vectorMatchesText).toBe(true);
        expect(found).toBe(true);
      }
    }
    // Both outcomes happen in a real race; what matters is that each one is whole.
    expect(deleted).toBeGreaterThan(0);
  });
});
