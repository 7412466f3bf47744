import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CairnEngine } from '../src/index.js';

let dir: string;
let engine: CairnEngine;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'cairn-engine-'));
  engine = await CairnEngine.open({ dataDir: dir, waitForIndex: true });
});
afterEach(async () => {
  await engine.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('CairnEngine', () => {
  it('ingests, embeds and returns explained hybrid hits', async () => {
    const r = engine.ingest([
      { namespace: 'a', id: '1', text: 'We fixed the parseConfig crash in src/auth/middleware.ts', ts: '2024-01-01T00:00:00Z' },
      { namespace: 'a', id: '2', text: 'Lunch was pizza again', ts: '2024-01-02T00:00:00Z' },
      { namespace: 'b', id: '3', text: 'parseConfig is also in namespace b', ts: '2024-01-02T00:00:00Z' },
    ]);
    expect(r.counts).toEqual({ stored: 3, updated: 0, unchanged: 0, rejected: 0 });
    await engine.drain();
    const res = await engine.search({ namespace: 'a', query: 'config parse', decay: 'off' });
    expect(res.degraded).toEqual([]);
    expect(res.hits[0]?.id).toBe('1');
    expect(res.hits.every((h) => h.namespace === 'a')).toBe(true);
    expect(res.hits[0]?.bm25Rank).toBe(1);
    expect(res.hits[0]?.vecRank).toBe(1);
    expect(res.hits[0]?.cosine).toBeGreaterThan(0);
    expect(engine.stats().namespaces.a).toMatchObject({ stored: 2, embedded: 2, pending: 0 });
  });
});
