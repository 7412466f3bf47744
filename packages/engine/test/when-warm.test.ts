import { describe, expect, it } from 'vitest';
import { useEngines } from './helpers.js';

describe('CairnEngine.whenWarm', () => {
  const engines = useEngines();
  const memories = (n: number) =>
    Array.from({ length: n }, (_, i) => ({
      namespace: i % 3 ? 'p' : 'q',
      id: `m${i}`,
      session: `s${i % 40}`,
      text: `deploy ${i} of the billing service, session ${i % 40}`,
    }));

  it("resolves true once the key catalog serves, which a new server's first searches then use", async () => {
    const dir = engines.tempDir();
    const writer = await engines.open({ embedder: null, refreshIntervalMs: 0 }, dir);
    writer.ingest(memories(3_000));
    await writer.close();

    const engine = await engines.open({ embedder: null }, dir);
    expect(engine.store.lexical.reservedKeys).toBeLessThan(3_000);
    expect(await engine.whenWarm()).toBe(true);
    expect(engine.store.catalogState().serving).toBe(true);
    // The lexical sums are sized before the first search, with room for the keys written next.
    expect(engine.store.lexical.reservedKeys).toBeGreaterThan(3_000 + 3_000 / 8);
    const res = await engine.search({ namespace: 'q', query: 'billing deploy', k: 5 });
    expect(res.hits.length).toBe(5);
    expect(res.hits.every((h) => h.namespace === 'q')).toBe(true);
  });

  it('resolves false at once when there is no catalog to load, and the engine answers from SQLite', async () => {
    const engine = await engines.open({ embedder: null, catalog: false });
    engine.ingest(memories(30));
    expect(await engine.whenWarm(60_000)).toBe(false);
    expect((await engine.search({ namespace: 'p', query: 'billing', k: 3 })).hits.length).toBe(3);
  });

  it('maps the saved vector graphs before the first search, and leaves a namespace without one to its first search', async () => {
    const dir = engines.tempDir();
    const writer = await engines.open({ exactThreshold: 20 }, dir);
    writer.ingest([
      ...Array.from({ length: 300 }, (_, i) => ({
        namespace: 'big',
        id: `b${i}`,
        text: `note ${i} zq${i}x`,
      })),
      ...Array.from({ length: 10 }, (_, i) => ({
        namespace: 'small',
        id: `s${i}`,
        text: `memo ${i} yq${i}x`,
      })),
    ]);
    await writer.drain();
    await writer.close();

    const engine = await engines.open({ exactThreshold: 20, waitForIndex: false }, dir);
    expect(engine.vectors!.status('big').state).toBe('unloaded');
    await engine.whenWarm();
    expect(engine.vectors!.status('big')).toEqual({ state: 'hnsw', size: 300 });
    // A namespace searched exactly has no file: it loads when first searched, as before.
    expect(engine.vectors!.status('small').state).toBe('unloaded');
    const res = await engine.search({ namespace: 'big', query: 'zq7x', weights: { lexical: 0 } });
    expect(res.degraded).toEqual([]);
    expect(res.hits[0]?.id).toBe('b7');
  });
});
