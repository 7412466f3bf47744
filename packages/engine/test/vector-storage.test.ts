import { describe, expect, it } from 'vitest';
import { DAY, useEngines } from './helpers.js';

const engines = useEngines();
const T = Date.UTC(2026, 0, 1);

describe('an engine whose space keeps i8 vectors', () => {
  it('searches as the f32 one does, on a quarter of the vector bytes, through an index build and a reopen', async () => {
    const docs = Array.from({ length: 6_000 }, (_, i) => ({
      namespace: 'a',
      id: `m${i}`,
      text: `note ${i} about ${['billing', 'search', 'auth', 'deploys', 'caching'][i % 5]} ticket T${i}`,
      ts: T + i * 1000,
    }));
    const results: Record<string, string[]> = {};
    const bytes: Record<string, number> = {};
    for (const storage of ['f32', 'i8'] as const) {
      const dir = engines.tempDir();
      const first = await engines.open({ vectorStorage: storage, consolidation: false }, dir);
      first.ingest(docs);
      await first.drain();
      expect(first.space!.id).toBe('cairn-hash-v1/384');
      expect(first.store.spaces.getSpace(first.space!.id)!.storage).toBe(storage);
      bytes[storage] = first.store.db
        .prepare('SELECT sum(length(vector)) FROM embeddings')
        .pluck()
        .get() as number;
      await first.close();
      // A fresh process: the saved graph and the stored vectors are read back.
      const engine = await engines.open({ consolidation: false }, dir);
      const q = { namespace: 'a', query: 'auth ticket T4242', k: 5, now: T + 7 * DAY };
      const res = await engine.search(q);
      const vec = await engine.search({ ...q, weights: { lexical: 0 } });
      expect(vec.degraded).toEqual([]);
      results[storage] = res.hits.map((h) => h.id);
      results[`${storage}-vector`] = vec.hits.map((h) => h.id);
      // The option only picks the storage of spaces this process creates: the folder keeps its own.
      expect(engine.store.spaces.getSpace(engine.space!.id)!.storage).toBe(storage);
    }
    // The best hit is the same; below it, near-ties among a thousand look-alike notes may swap places.
    expect(results.i8![0]).toBe('m4242');
    expect(results.f32![0]).toBe('m4242');
    expect(results['i8-vector']![0]).toBe(results['f32-vector']![0]);
    const shared = results.i8!.filter((id) => results.f32!.includes(id)).length;
    expect(shared).toBeGreaterThanOrEqual(3);
    expect(bytes.i8! / bytes.f32!).toBeCloseTo((8 + 384) / 1536, 3);
  });
});
