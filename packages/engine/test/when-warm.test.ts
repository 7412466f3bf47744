import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CairnEngine } from '@cairn/engine';
import { afterEach, describe, expect, it } from 'vitest';

describe('CairnEngine.whenWarm', () => {
  const dirs: string[] = [];
  const folder = () => {
    const d = mkdtempSync(join(tmpdir(), 'cairn-warm-'));
    dirs.push(d);
    return d;
  };
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });
  const memories = (n: number) =>
    Array.from({ length: n }, (_, i) => ({
      namespace: i % 3 ? 'p' : 'q',
      id: `m${i}`,
      session: `s${i % 40}`,
      text: `deploy ${i} of the billing service, session ${i % 40}`,
    }));

  it("resolves true once the key catalog serves, which a new server's first searches then use", async () => {
    const dir = folder();
    const writer = await CairnEngine.open({ dataDir: dir, embedder: null, refreshIntervalMs: 0 });
    writer.ingest(memories(3_000));
    await writer.close();

    const engine = await CairnEngine.open({ dataDir: dir, embedder: null, persistIntervalMs: 0 });
    try {
      expect(await engine.whenWarm()).toBe(true);
      expect(engine.store.catalogState().serving).toBe(true);
      const res = await engine.search({ namespace: 'q', query: 'billing deploy', k: 5 });
      expect(res.hits.length).toBe(5);
      expect(res.hits.every((h) => h.namespace === 'q')).toBe(true);
    } finally {
      await engine.close();
    }
  });

  it('resolves false at once when there is no catalog to load, and the engine answers from SQLite', async () => {
    const engine = await CairnEngine.open({
      dataDir: folder(),
      embedder: null,
      persistIntervalMs: 0,
      catalog: false,
    });
    try {
      engine.ingest(memories(30));
      expect(await engine.whenWarm(60_000)).toBe(false);
      expect((await engine.search({ namespace: 'p', query: 'billing', k: 3 })).hits.length).toBe(3);
    } finally {
      await engine.close();
    }
  });
});
