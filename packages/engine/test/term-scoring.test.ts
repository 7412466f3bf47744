import { pathToFileURL } from 'node:url';
import { HashingEmbedder } from '@cairn/embed';
import { MemoryStore, type ScoredMatches, TERM_SCORE_TASK, type TermScorer } from '@cairn/store';
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
    // "deploy", "pipeline" and "rollback" match 5,000, 2,500 and 715 memories: each worth the thread.
    expect(engine.store.lexical.postings.size.prefetched).toBe(3);
    const reader = new MemoryStore({ path: `${engine.dataDir}/cairn.db`, readonly: true });
    try {
      expect(engine.store.lexical.searchLexical(query).candidates).toEqual(
        reader.lexical.searchLexical(query).candidates,
      );
    } finally {
      reader.close();
    }
  });

  it('runs the vector leg while the thread scores the lexical leg’s new terms', async () => {
    // The scorer answers only once the query has been embedded: were the legs run one after the other,
    // the search would wait on itself.
    let embedded: () => void = () => undefined;
    const queryEmbedded = new Promise<void>((resolve) => {
      embedded = resolve;
    });
    let watching = false;
    // The built-in embedder weights a query's words by their idf (embedWeighted); others embed().
    class Watched extends HashingEmbedder {
      override async embedWeighted(text: string, idf: ReadonlyMap<string, number>): Promise<Float32Array> {
        if (watching) embedded();
        return super.embedWeighted(text, idf);
      }
    }
    const engine = await engines.open({ embedder: new Watched() });
    engine.ingest(corpus);
    await engine.drain();
    // The thread's own task, run here behind the gate.
    const task = (await import(pathToFileURL(TERM_SCORE_TASK).href)) as {
      default: (req: Parameters<TermScorer>[0] & { path: string }) => ScoredMatches;
    };
    const order: string[] = [];
    const gated: TermScorer = async (req) => {
      await queryEmbedded;
      order.push(req.match);
      return task.default({ ...req, path: `${engine.dataDir}/cairn.db` });
    };
    engine.store.lexical.useTermScorer(gated);
    try {
      watching = true;
      const res = await Promise.race([
        engine.search({ namespace: 'ns', query: query.query, k: 10 }),
        new Promise<never>((_, reject) =>
          setTimeout(() => reject(new Error('the lexical leg waited for the vector leg')), 10_000),
        ),
      ]);
      expect(res.degraded).toEqual([]);
      expect(order.length).toBeGreaterThanOrEqual(2);
      expect(engine.store.lexical.postings.size.prefetched).toBe(order.length);
      expect(res.hits.map((h) => h.id)).toEqual(
        (await engine.search({ namespace: 'ns', query: query.query, k: 10 })).hits.map((h) => h.id),
      );
    } finally {
      engine.store.lexical.useTermScorer(null);
    }
  });

  it('a long-lived engine loads its key catalog on the term threads', async () => {
    const first = await engines.open({ embedder: null });
    first.ingest(corpus);
    await first.drain();
    await first.close();
    const engine = await engines.open({ embedder: null }, first.dataDir);
    await engine.store.warmCatalog();
    expect(engine.store.catalogState()).toEqual({
      state: 'loaded',
      serving: true,
      rowsFromReader: corpus.length,
    });
    const res = await engine.search({ namespace: 'ns', query: query.query, k: 10 });
    expect(res.hits).toHaveLength(10);
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
