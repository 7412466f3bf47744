import { describe, expect, it } from 'vitest';
import { useEngines } from './helpers.js';

const engines = useEngines();

const topics = ['redis', 'auth', 'parser', 'deploy', 'cache', 'schema', 'queue', 'lease', 'index', 'shard'];
const verbs = ['failed', 'timed out', 'was fixed', 'was rewritten', 'crashed', 'passed'];
/** 400 memories over a small vocabulary: many share a query's words, as agent memories do. */
const memories = Array.from({ length: 400 }, (_, i) => ({
  namespace: 'a',
  id: `m${i}`,
  text: `the ${topics[i % 10]} ${verbs[i % 6]} after the ${topics[(i * 7) % 10]} change in step ${i % 13}`,
}));
const request = {
  namespace: 'a',
  query: 'redis cache timed out after the lease change',
  k: 10,
  explain: 'full' as const,
  decay: 'off' as const,
};

describe('a vector list from a graph, completed by the lexical leg', () => {
  it('scores every vector candidate exactly, as an exact scan of the namespace would', async () => {
    const dir = engines.tempDir();
    // 50: the namespace is served by an HNSW graph (its vectors quantised to i8).
    const graph = await engines.open({ exactThreshold: 50, completeVectorList: true }, dir);
    graph.ingest(memories);
    await graph.drain();
    const res = await graph.search(request);
    expect(res.explain.vectorExact).toBe(false);
    expect(res.explain.vectorFromLexical).toEqual(expect.any(Number));
    const fromGraph = res.explain.candidates!.filter((c) => c.vecRank !== null);
    expect(fromGraph.length).toBeGreaterThan(10);
    await graph.close();

    // The same folder with every vector scanned exactly (no graph).
    const exact = await engines.open({ exactThreshold: 1_000_000 }, dir);
    const want = await exact.search(request);
    expect(want.explain.vectorExact).toBe(true);
    expect(want.explain.vectorFromLexical).toBeNull();
    const exactCosine = new Map(want.explain.candidates!.map((c) => [c.id, c.cosine]));
    // A graph's own cosine is its quantised vectors' (off by ~0.005); a completed list's best are the
    // stored vectors'.
    const head = fromGraph.filter((c) => c.vecRank! <= 10);
    expect(head).toHaveLength(10);
    for (const c of head) expect(c.cosine!).toBeCloseTo(exactCosine.get(c.id)!, 5);
    // The best ten by vector are the exact scan's.
    const best = (cs: typeof fromGraph) =>
      cs
        .filter((c) => c.vecRank !== null && c.vecRank <= 10)
        .map((c) => c.cosine!.toFixed(5))
        .sort();
    expect(best(fromGraph)).toEqual(best(want.explain.candidates!));
  });

  it('is not run when the vector leg scanned exactly, nor when asked not to weigh the lexical leg', async () => {
    const engine = await engines.open({ exactThreshold: 50, completeVectorList: true });
    engine.ingest(memories);
    await engine.drain();
    const vectorOnly = await engine.search({ ...request, weights: { lexical: 0 } });
    expect(vectorOnly.explain.vectorExact).toBe(false);
    expect(vectorOnly.explain.vectorFromLexical).toBeNull();
    const small = await engine.search({ ...request, filters: { sessions: ['none'] } });
    expect(small.explain.vectorFromLexical).toBeNull();
  });

  it('is off unless the engine is asked for it', async () => {
    const engine = await engines.open({ exactThreshold: 50 });
    engine.ingest(memories);
    await engine.drain();
    const res = await engine.search(request);
    expect(res.explain.vectorExact).toBe(false);
    expect(res.explain.vectorFromLexical).toBeNull();
  });
});
