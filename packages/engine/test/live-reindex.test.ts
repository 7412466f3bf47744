import { describe, expect, it } from 'vitest';
import type { CairnEngine } from '../src/index.js';
import { useEngines } from './helpers.js';

// The live reindex inside one engine (the data folder's writer), on a real SQLite file and real usearch
// indexes: writes racing the switch, and rollback within the grace period.

const engines = useEngines();

function corpus(n: number, from = 0) {
  return Array.from({ length: n }, (_, i) => ({
    namespace: (from + i) % 2 ? 'acme' : 'globex',
    id: `m${from + i}`,
    text: `note ${from + i} about the ${['billing', 'search', 'deploy', 'auth'][(from + i) % 4]} service ticket T${from + i}`,
  }));
}

async function until(what: string, done: () => boolean, ms = 60_000): Promise<void> {
  const end = Date.now() + ms;
  while (!done()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Every live memory has a current vector in `space`. */
function complete(engine: CairnEngine, space: string): boolean {
  const p = engine.store.spaces.progress(space);
  return p.embedded === p.total;
}

describe('live reindex in the writer', () => {
  it('writes racing the switch all end with vectors in the new space and in its index; no search is degraded', async () => {
    const engine = await engines.open({ refreshIntervalMs: 50, waitForIndex: false });
    engine.ingest(corpus(8_000));
    await engine.drain();
    await engine.requestReindex('hash:128', { activate: true });
    // Write in small batches, and search, until well after the switch. The pace slows as time goes (up to
    // 10 writes every 200 ms): the build runs on niced pool threads, which on a machine busy with other
    // processes (CI's other test files) get a few percent of a core, and no reindex can switch while
    // writes come faster than it embeds them.
    let n = 8_000;
    let afterSwitch = 0;
    const started = Date.now();
    while (afterSwitch < 20) {
      engine.ingest(corpus(10, n));
      n += 10;
      const r = await engine.search({ namespace: 'acme', query: 'billing ticket T4001', k: 5 });
      expect(r.degraded).toEqual([]);
      if (engine.space?.id === 'cairn-hash-v1/128') afterSwitch += 1;
      await new Promise((r) => setTimeout(r, Math.min(200, 5 + (Date.now() - started) / 100)));
    }
    await engine.drain();
    await until('every write embedded in the new space', () => complete(engine, 'cairn-hash-v1/128'));
    const stats = engine.stats();
    expect(stats.space).toBe('cairn-hash-v1/128');
    for (const ns of ['acme', 'globex'])
      expect(stats.namespaces[ns]).toMatchObject({
        stored: n / 2,
        embedded: n / 2,
        indexed: n / 2,
        pending: 0,
      });
    // The last write is found by the vector leg of the new space.
    const last = await engine.search({
      namespace: 'globex',
      query: `note ${n - 2} about the`,
      k: 3,
      explain: 'full',
    });
    expect(last.hits.map((h) => h.id)).toContain(`m${n - 2}`);
    expect(last.hits.find((h) => h.id === `m${n - 2}`)!.vecRank).not.toBeNull();
  }, 120_000);

  it('memories deleted while the new space is built leave its index: stats count what it serves', async () => {
    const engine = await engines.open({ refreshIntervalMs: 50, waitForIndex: false, exactThreshold: 500 });
    engine.ingest(corpus(8_000));
    await engine.drain();
    await engine.requestReindex('hash:128', { activate: true });
    let deleted = 0;
    while (engine.space?.id !== 'cairn-hash-v1/128') {
      expect(engine.delete(deleted % 2 ? 'acme' : 'globex', `m${deleted}`)).toBe(true);
      deleted += 1;
      await new Promise((r) => setTimeout(r, 5));
    }
    await engine.drain();
    // Even-numbered memories are globex's, odd ones acme's.
    for (const [ns, left] of [
      ['globex', 4_000 - Math.ceil(deleted / 2)],
      ['acme', 4_000 - Math.floor(deleted / 2)],
    ] as const)
      expect(engine.stats().namespaces[ns]).toMatchObject({ stored: left, embedded: left, indexed: left });
    const r = await engine.search({ namespace: 'globex', query: 'note 0 about the billing', k: 10 });
    expect(r.hits.map((h) => h.id)).not.toContain('m0');
  }, 120_000);

  it('stores the new space vectors on a pool thread (built-in embedder), those of the previous one too after the switch', async () => {
    const engine = await engines.open({ refreshIntervalMs: 50 });
    engine.ingest(corpus(3_000));
    await engine.drain();
    // Every vector the serving thread stores, by space.
    const storedHere = new Map<string, number>();
    const put = engine.store.embeddings.put.bind(engine.store.embeddings);
    engine.store.embeddings.put = (space, items, cursor) => {
      storedHere.set(space.id, (storedHere.get(space.id) ?? 0) + items.length);
      return put(space, items, cursor);
    };
    await engine.requestReindex('hash:128', { activate: true });
    await until('the switch', () => engine.space?.id === 'cairn-hash-v1/128');
    expect(complete(engine, 'cairn-hash-v1/128')).toBe(true);
    expect(storedHere.get('cairn-hash-v1/128') ?? 0).toBe(0);
    // After the switch the engine's own pipeline embeds new writes into the new space on its embed lane
    // (on this thread with embedWrites: 'inline'), and the previous space's keeper stores theirs on the pool.
    engine.ingest(corpus(200, 3_000));
    await until(
      'dual writes',
      () => complete(engine, 'cairn-hash-v1/384') && complete(engine, 'cairn-hash-v1/128'),
    );
    expect(storedHere.get('cairn-hash-v1/384') ?? 0).toBe(0);
    // What the pool stored is in the new space's index: a memory is found by its vector.
    const r = await engine.search({
      namespace: 'acme',
      query: 'note 1001 about the search',
      k: 3,
      explain: 'full',
    });
    expect(r.hits[0]).toMatchObject({ id: 'm1001' });
    expect(r.hits[0]!.vecRank).not.toBeNull();
  }, 60_000);

  it('keeps the replaced space current for the grace period: switching back is instant and complete', async () => {
    const engine = await engines.open({ refreshIntervalMs: 50 });
    engine.ingest(corpus(2_000));
    await engine.drain();
    await engine.requestReindex('hash:128', { activate: true });
    await until('the switch', () => engine.space?.id === 'cairn-hash-v1/128');
    const old = engine.store.spaces.getSpace('cairn-hash-v1/384')!;
    expect(old.currentUntil).toBeGreaterThan(Date.now() + 3_000_000);
    // Writes after the switch get vectors in the old space too.
    engine.ingest(corpus(300, 2_000));
    await until(
      'dual writes',
      () => complete(engine, 'cairn-hash-v1/384') && complete(engine, 'cairn-hash-v1/128'),
    );
    // Back, with no force: the old space lacks nothing.
    engine.activateSpace('cairn-hash-v1/384');
    expect(engine.space?.id).toBe('cairn-hash-v1/384');
    const r = await engine.search({ namespace: 'acme', query: 'note 2001 about the', k: 3, explain: 'full' });
    expect(r.degraded).toEqual([]);
    expect(r.hits[0]).toMatchObject({ id: 'm2001' });
    expect(r.hits[0]!.vecRank).not.toBeNull();
    // And the space it left is now the one kept current.
    expect(engine.store.spaces.getSpace('cairn-hash-v1/128')!.currentUntil).not.toBeNull();
  }, 60_000);

  it('with no grace period the replaced space falls behind, and activating it is refused as incomplete', async () => {
    const engine = await engines.open({ refreshIntervalMs: 50, previousSpaceGraceMs: 0 });
    engine.ingest(corpus(1_000));
    await engine.drain();
    await engine.requestReindex('hash:128', { activate: true });
    await until('the switch', () => engine.space?.id === 'cairn-hash-v1/128');
    engine.ingest(corpus(10, 1_000));
    await engine.drain();
    await new Promise((r) => setTimeout(r, 200));
    expect(engine.store.spaces.progress('cairn-hash-v1/384')).toMatchObject({
      total: 1_010,
      embedded: 1_000,
    });
    expect(() => engine.activateSpace('cairn-hash-v1/384')).toThrow(/incomplete/);
    expect(engine.space?.id).toBe('cairn-hash-v1/128');
  }, 60_000);

  it('a build left waiting activates when asked again, with no write to wake it', async () => {
    const engine = await engines.open({ refreshIntervalMs: 50 });
    engine.ingest(corpus(1_500));
    await engine.drain();
    await engine.requestReindex('hash:128', { activate: false });
    await until('the build to wait', () => engine.build?.phase === 'waiting');
    expect(engine.space?.id).toBe('cairn-hash-v1/384');
    await engine.requestReindex('hash:128', { activate: true });
    await until('the switch', () => engine.space?.id === 'cairn-hash-v1/128', 20_000);
  }, 60_000);

  it('a space activated by another process while built here is served from the built indexes', async () => {
    const engine = await engines.open({ refreshIntervalMs: 50, waitForIndex: false });
    engine.ingest(corpus(12_000)); // 6,000 a namespace: above the exact-search threshold
    await engine.drain();
    await engine.requestReindex('hash:128', { activate: false });
    await until('the build to wait', () => engine.build?.phase === 'waiting');
    // What `cairn spaces activate` beside this writer does: one transaction on cairn.db.
    engine.store.spaces.activate('cairn-hash-v1/128');
    await until('the switch', () => engine.space?.id === 'cairn-hash-v1/128');
    expect(engine.build).toBeNull();
    // Served at once from the loaded indexes: no namespace is building, nothing is degraded.
    for (const ns of ['acme', 'globex']) expect(engine.vectors!.status(ns).state).toBe('hnsw');
    const r = await engine.search({ namespace: 'acme', query: 'billing ticket T4001', k: 3 });
    expect(r.degraded).toEqual([]);
    expect(r.hits[0]?.vecRank).not.toBeNull();
  }, 60_000);
});
