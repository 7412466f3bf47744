import { MemoryStore } from '@cairn/store';
import { describe, expect, it } from 'vitest';
import { useEngines } from './helpers.js';

// A long-lived engine scores the terms it sees for the first time on a thread of its own (a piscina pool
// running the store's compiled task with its own read connection), so a server's event loop is not held
// 10–17 ms per common word at a million memories. Real SQLite file, real worker thread.
describe('term scoring off the serving thread', () => {
  const engines = useEngines();
  const corpus = Array.from({ length: 5_000 }, (_, i) => ({
    namespace: 'ns',
    id: `m${i}`,
    text: `deploy ${i % 2 === 0 ? 'pipeline' : 'script'} note ${i % 7 === 0 ? 'rollback' : 'forward'} w${i % 113}`,
  }));
  const query = { namespace: 'ns', query: 'deploy pipeline rollback', filters: {}, limit: 50 };

  it('a long-lived engine scores common terms on its thread and ranks as inline scoring does', async () => {
    const engine = await engines.open({ embedder: null });
    engine.ingest(corpus);
    await engine.drain();
    const res = await engine.search({ namespace: 'ns', query: query.query, k: 10 });
    expect(res.hits).toHaveLength(10);
    // "deploy" and "pipeline" match 5,000 and 2,500 memories: worth the thread; "rollback" (715) is not.
    expect(engine.store.lexical.postings.size.prefetched).toBe(2);
    const reader = new MemoryStore({ path: `${engine.dataDir}/cairn.db`, readonly: true });
    try {
      expect(engine.store.lexical.searchLexical(query).candidates).toEqual(
        reader.lexical.searchLexical(query).candidates,
      );
    } finally {
      reader.close();
    }
  });

  it('a one-shot engine, or one told so, scores inline', async () => {
    for (const opts of [{ refreshIntervalMs: 0 }, { termScoring: 'inline' as const }]) {
      const engine = await engines.open({ embedder: null, ...opts });
      engine.ingest(corpus.slice(0, 3_000));
      await engine.drain();
      await engine.search({ namespace: 'ns', query: query.query, k: 10 });
      expect(engine.store.lexical.postings.size.prefetched).toBe(0);
      expect(engine.store.lexical.postings.size.terms).toBeGreaterThan(0);
    }
  });
});
