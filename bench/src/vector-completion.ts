// Vector completion: what a hybrid search gains when the lexical leg's candidates complete the graph's
// vector list, all scored exactly (packages/router/src/vector-completion.ts), on a data folder a user's
// `cairn ingest` wrote. In one run, on the same queries:
// - the vector list's recall@10 against an exact scan, graph alone and completed;
// - the hybrid search's latency with and without completion (alternating, two passes);
// - how close each hybrid page is to the page of an engine whose vector leg scans every vector exactly.
// Usage: pnpm build && node bench/dist/vector-completion.js --data-dir D --n 100000 [--queries 200]
//          [--fetches 50,100,200]  (graph fetches to compare: 50 is the router's, wider ones an ablation)
// D holds the synthetic corpus of `generateCorpus({ mainDocs: N, seed: 42 })` ingested with `cairn ingest`;
// the queries are the peers benchmark's (`makeQueries(corpus, Q, 7)`).
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { dot, searchDefaultsFor } from '@cairn/core';
import { HashingEmbedder } from '@cairn/embed';
import { CairnEngine } from '@cairn/engine';
import { completeVectorList, HybridRouter } from '@cairn/router';
import { blobToVector } from '@cairn/store';
import { ExactMatrix } from '@cairn/vector';
import { summarize } from './percentiles.js';
import { generateCorpus, MAIN_NAMESPACE } from './synthetic-corpus.js';
import { makeQueries, toRequest } from './synthetic-queries.js';

const { values } = parseArgs({
  options: {
    'data-dir': { type: 'string' },
    n: { type: 'string', default: '100000' },
    queries: { type: 'string', default: '200' },
    fetches: { type: 'string', default: '50' },
  },
});
if (!values['data-dir']) {
  console.error(
    'usage: node bench/dist/vector-completion.js --data-dir D --n 100000 [--queries 200]\n' +
      'D: a folder `cairn ingest` wrote from the synthetic corpus; build one with `node bench/dist/api.js --data-dir D` (the synthetic corpus: 100,000 memories stored, embedded and indexed in about 1.5 min, then its API benchmark runs; later runs reuse the folder)',
  );
  process.exit(2);
}
const dataDir = resolve(values['data-dir']);
const POOL = 50;
const K = 10;
const log = (msg: string) => process.stderr.write(`[completion] ${msg}\n`);

const embedder = new HashingEmbedder();
const corpus = generateCorpus({ mainDocs: Number(values.n), seed: 42 });
const queries = makeQueries(corpus, Number(values.queries), 7);
const openEngine = (exactThreshold?: number) =>
  CairnEngine.open({
    dataDir,
    embedder,
    consolidation: false,
    trackAccess: false,
    persistIntervalMs: 0,
    ...(exactThreshold === undefined ? {} : { exactThreshold }),
  });

let engine = await openEngine();
const lexical = engine.store.lexical;
const vectors = engine.vectors!;
await vectors.warm(MAIN_NAMESPACE);
const floor = embedder.similarityFloor ?? 0;

// Exact ground truth of the vector leg: every stored vector of the namespace.
log('loading every vector for the exact scan');
const rows = engine.store.db
  .prepare('SELECT key, vector FROM embeddings WHERE space = ? AND namespace = ?')
  .raw()
  .all(engine.space!.id, MAIN_NAMESPACE) as Array<[number, Buffer]>;
const exact = new ExactMatrix(embedder.dimensions, rows.length);
for (const [key, blob] of rows) exact.upsert(key, blobToVector(blob));
rows.length = 0;

/** Recall@10 against exact, counting ties as found (the corpus repeats texts). */
function recall(list: ReadonlyArray<{ key: number }>, q: Float32Array, truth: Array<{ cosine: number }>) {
  const tenth = truth[K - 1]!.cosine;
  const stored = vectors.vectorsFor(
    MAIN_NAMESPACE,
    list.slice(0, K).map((c) => c.key),
  );
  let found = 0;
  for (const c of list.slice(0, K)) {
    const v = stored.get(c.key);
    if (v && dot(q, v) >= tenth - 1e-6) found++;
  }
  return found / K;
}

log(`vector lists of ${queries.filter((q) => !q.filters).length} unfiltered queries`);
// Each graph fetch: the router's (the pool) and, as an ablation, wider ones (a wider graph search first).
const fetches = values.fetches.split(',').map(Number);
const legs = fetches.map((fetch) => ({ fetch, graph: 0, completed: 0, added: 0, ms: [] as number[] }));
let unfiltered = 0;
for (const q of queries) {
  if (q.filters) continue;
  const qv = await embedder.embedWeighted(
    q.query,
    lexical.termIdf(MAIN_NAMESPACE, embedder.weightableTerms(q.query)),
  );
  const truth = exact.search(qv, K);
  await lexical.prepare?.({ namespace: MAIN_NAMESPACE, query: q.query });
  const lex = lexical.searchLexical({ namespace: MAIN_NAMESPACE, query: q.query, filters: {}, limit: POOL });
  // Each fetch goes first as often as the others: the first reads the lexical candidates' vectors from
  // SQLite, the next find them in the vector LRU.
  for (const [i] of legs.entries()) {
    const leg = legs[(i + unfiltered) % legs.length]!;
    const t0 = performance.now();
    const graph = await vectors.searchVector({
      namespace: MAIN_NAMESPACE,
      vector: qv,
      filters: {},
      limit: leg.fetch,
    });
    if (graph.status !== 'ok' || graph.exact) throw new Error('the namespace is not served by a graph');
    const kept = graph.candidates.filter((c) => c.cosine >= floor);
    const done = completeVectorList(vectors, MAIN_NAMESPACE, qv, kept, lex.candidates, floor, POOL);
    leg.ms.push(performance.now() - t0);
    leg.graph += recall(kept, qv, truth);
    leg.completed += recall(done.candidates, qv, truth);
    leg.added += done.fromLexical;
  }
  unfiltered++;
}

// Hybrid searches, both ways, alternating per query; the second pass is what a warm server answers.
const routers = {
  graph: new HybridRouter({
    lexical,
    memories: engine.store,
    vector: vectors,
    embedder,
    routes: engine.store.routes,
    defaults: searchDefaultsFor(embedder, undefined),
    completeVectorList: false,
  }),
  completed: new HybridRouter({
    lexical,
    memories: engine.store,
    vector: vectors,
    embedder,
    routes: engine.store.routes,
    defaults: searchDefaultsFor(embedder, undefined),
    completeVectorList: true,
  }),
};
type Way = keyof typeof routers;
const ways: Way[] = ['graph', 'completed'];
const pages: Record<Way | 'exact', string[][]> = { graph: [], completed: [], exact: [] };
const times: Record<Way, number[][]> = { graph: [[], []], completed: [[], []] };
for (let pass = 0; pass < 2; pass++) {
  log(`hybrid pass ${pass + 1}`);
  for (const [i, q] of queries.entries()) {
    for (const way of i % 2 === 0 ? ways : [...ways].reverse()) {
      const t0 = performance.now();
      const res = await routers[way].search(toRequest(q, { k: K }));
      times[way][pass]!.push(performance.now() - t0);
      if (pass === 1) pages[way][i] = res.hits.map((h) => h.id);
    }
  }
}
await engine.close();

log('the same queries with every vector scanned exactly (an exact matrix of the whole namespace)');
engine = await openEngine(Number.MAX_SAFE_INTEGER);
await engine.vectors!.warm(MAIN_NAMESPACE);
for (const [i, q] of queries.entries()) {
  const res = await engine.search(toRequest(q, { k: K }));
  if (res.explain.vectorExact !== true && !q.filters)
    throw new Error('the exact engine answered from a graph');
  pages.exact[i] = res.hits.map((h) => h.id);
}
await engine.close();

const agreement = (way: Way) => {
  let overlap = 0;
  let same = 0;
  for (const [i, want] of pages.exact.entries()) {
    const got = pages[way][i]!;
    overlap += want.length === 0 ? 1 : got.filter((id) => want.includes(id)).length / want.length;
    if (got.join() === want.join()) same++;
  }
  return { overlap: overlap / pages.exact.length, same };
};
const fmt = (x: number) => x.toFixed(2);
const lines = [
  `${corpus.memories.length.toLocaleString('en-US')} memories (${dataDir}), ${queries.length} queries (${unfiltered} unfiltered), pool ${POOL}, k ${K}`,
  '',
  '| graph fetch | vector list recall@10: graph → completed | lexical candidates added a query | graph search + completion p50 / p99 (ms) |',
  '|---:|---:|---:|---:|',
  ...legs.map((leg) => {
    const t = summarize(leg.ms);
    return `| ${leg.fetch}${leg.fetch === POOL ? " (the router's)" : ''} | ${(leg.graph / unfiltered).toFixed(3)} → ${(leg.completed / unfiltered).toFixed(3)} | ${(leg.added / unfiltered).toFixed(1)} | ${fmt(t.p50)} / ${fmt(t.p99)} |`;
  }),
  '',
  '| hybrid search | first pass p50 / p99 (ms) | second pass p50 / p99 | page overlap@10 with an exact vector leg | pages identical |',
  '|---|---:|---:|---:|---:|',
];
for (const way of ways) {
  const [a, b] = times[way].map(summarize);
  const agree = agreement(way);
  lines.push(
    `| ${way === 'graph' ? 'graph only (default)' : 'completed (completeVectorList)'} | ${fmt(a!.p50)} / ${fmt(a!.p99)} | ${fmt(b!.p50)} / ${fmt(b!.p99)} | ${agree.overlap.toFixed(3)} | ${agree.same} of ${queries.length} |`,
  );
}
process.stdout.write(`${lines.join('\n')}\n`);
