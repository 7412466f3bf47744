// HNSW tuning: builds graphs of one namespace's stored vectors with several quantisations and construction
// beams, and reports search time and recall against an exact scan at several search beams, all in one run
// on the same vectors and queries (the speed benchmark's unfiltered query mix, embedded as the router does).
// Usage: pnpm build && node bench/dist/hnsw-tuning.js --data-dir DIR [--configs i8:64,i8:128,f16:64,i8:128:32]
//          [--efs 64,80,96,128] [--k 68] [--queries 400] [--namespace acme/platform]
//        node bench/dist/hnsw-tuning.js --dense [--n 100000] [--configs …] [--efs …]
//        node bench/dist/hnsw-tuning.js --data-dir DIR --graph FILE [--efs …]
// DIR is a data folder built by the API benchmark (`node bench/dist/api.js --data-dir DIR`). --dense uses
// clustered Gaussian vectors instead (500 centroids): a stand-in for a neural embedder's dense vectors.
// --graph measures a graph file a data folder already holds (its vectors/ folder; i8, efC 128 by default)
// instead of building new ones: the graph a user's `cairn ingest` saved, e.g. at a million memories. Its
// recall@10 then also counts ties as found, as the peers benchmark does (the corpus repeats texts, and which
// of equal vectors an exact scan lists first is arbitrary).
import os from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { dot, l2Normalize } from '@cairn/core';
import { HashingEmbedder } from '@cairn/embed';
import { blobToVector, MemoryStore } from '@cairn/store';
import {
  createHnswIndex,
  DEFAULT_HNSW_PARAMS,
  ExactMatrix,
  type HnswParams,
  viewIndexFile,
} from '@cairn/vector';
import { seededRandom } from './seeded-random.js';
import { generateCorpus } from './synthetic-corpus.js';
import { makeQueries } from './synthetic-queries.js';

const { values } = parseArgs({
  options: {
    'data-dir': { type: 'string' },
    configs: { type: 'string', default: 'i8:64,i8:128,f16:64' },
    efs: { type: 'string', default: '64,80,96,128' },
    k: { type: 'string', default: '68' },
    queries: { type: 'string', default: '400' },
    namespace: { type: 'string', default: 'acme/platform' },
    repeats: { type: 'string', default: '3' },
    dense: { type: 'boolean', default: false },
    n: { type: 'string', default: '100000' },
    graph: { type: 'string' },
  },
});
const K = Number(values.k);
const repeats = Number(values.repeats);
const log = (msg: string) => process.stderr.write(`[hnsw] ${msg}\n`);

/** The stored vectors of one namespace of an API-benchmark folder, and its unfiltered queries embedded. */
async function storedVectors() {
  if (!values['data-dir'])
    throw new Error('--data-dir is required (a folder built by bench/dist/api.js), or --dense');
  const store = new MemoryStore({ path: join(resolve(values['data-dir']), 'cairn.db'), readonly: true });
  const rows = store.db
    .prepare('SELECT key, vector FROM embeddings WHERE namespace = ? ORDER BY key')
    .raw()
    .all(values.namespace) as Array<[number, Buffer]>;
  const embedder = new HashingEmbedder();
  const d = embedder.dimensions;
  const keys = new BigUint64Array(rows.length);
  const vectors = new Float32Array(rows.length * d);
  rows.forEach(([key, blob], i) => {
    keys[i] = BigInt(key);
    vectors.set(blobToVector(blob), i * d);
  });
  // The corpus is regenerated only for its query mix; the API benchmark built the folder from the same seed.
  const corpus = generateCorpus({ mainDocs: rows.length, seed: 42 });
  const queries = makeQueries(corpus, Number(values.queries), 43).filter((q) => !q.filters);
  const queryVectors = await Promise.all(
    queries.map((q) =>
      embedder.embedWeighted(
        q.query,
        store.lexical.termIdf(values.namespace, embedder.weightableTerms(q.query)),
      ),
    ),
  );
  store.close();
  return { keys, vectors, queryVectors, d, source: `stored, ${values.namespace}` };
}

/** Points around 500 Gaussian centroids, L2-normalised; queries are noisier draws around some of them. */
function denseVectors() {
  const d = 768;
  const count = Number(values.n);
  const rand = seededRandom(7);
  const gauss = () => Math.sqrt(-2 * Math.log(rand() + 1e-12)) * Math.cos(2 * Math.PI * rand());
  const centroids = Array.from({ length: 500 }, () => Float32Array.from({ length: d }, gauss));
  const around = (c: Float32Array, noise: number) =>
    l2Normalize(Float32Array.from(c, (x) => x + noise * gauss()));
  const keys = new BigUint64Array(count);
  const vectors = new Float32Array(count * d);
  for (let i = 0; i < count; i++) {
    keys[i] = BigInt(i + 1);
    vectors.set(around(centroids[i % centroids.length]!, 1.2), i * d);
  }
  const queryVectors = Array.from({ length: Math.min(200, Number(values.queries)) }, (_, i) =>
    around(centroids[(i * 7) % centroids.length]!, 1.5),
  );
  return { keys, vectors, queryVectors, d, source: 'dense clustered Gaussian' };
}

const { keys, vectors, queryVectors, d, source } = values.dense ? denseVectors() : await storedVectors();
const n = keys.length;
log(`${n} vectors (${source}), ${d}-d, ${queryVectors.length} queries`);

if (values.graph) {
  measureSavedGraph(values.graph);
  process.exit(0);
}

/** Recall of a saved graph at each ef, against usearch's exact scan of the same vectors (ties count). */
function measureSavedGraph(path: string): void {
  const exact = new ExactMatrix(d, n);
  for (let i = 0; i < n; i++) exact.upsert(Number(keys[i]!), vectors.subarray(i * d, (i + 1) * d));
  const t0 = performance.now();
  const truth = queryVectors.map((q) => exact.search(q, 10));
  log(
    `exact top-10 of ${queryVectors.length} queries: ${((performance.now() - t0) / queryVectors.length).toFixed(1)} ms each`,
  );
  const rows: string[] = [];
  for (const ef of values.efs.split(',').map(Number)) {
    const index = createHnswIndex(d, { ...DEFAULT_HNSW_PARAMS, expansionSearch: ef });
    viewIndexFile(index, path);
    const samples: number[] = [];
    let found10 = 0;
    let found10Rescored = 0;
    for (let r = 0; r < repeats; r++) {
      queryVectors.forEach((q, qi) => {
        const t = performance.now();
        const got = index.search(q, K, 1);
        samples.push(performance.now() - t);
        if (r > 0) return;
        // A hit counts when its exact cosine reaches the 10th best exact cosine (a tie is a right answer).
        const tenth = truth[qi]!.at(-1)?.cosine ?? Number.NEGATIVE_INFINITY;
        // Each candidate's exact cosine, in the graph's order (null: not a stored vector).
        const cosines = [...got.keys].map((k) => {
          const v = exact.get(Number(k));
          return v ? dot(q, v) : null;
        });
        const right = cosines.slice(0, 10).filter((c) => c !== null && c >= tenth - 1e-6).length;
        found10 += Math.min(right, truth[qi]!.length) / Math.max(1, Math.min(10, truth[qi]!.length));
        // Re-scored: the k candidates ranked by their exact cosines, the best 10 kept.
        const rescored = cosines
          .filter((c): c is number => c !== null)
          .sort((a, b) => b - a)
          .slice(0, 10);
        found10Rescored +=
          Math.min(rescored.filter((c) => c >= tenth - 1e-6).length, truth[qi]!.length) /
          Math.max(1, Math.min(10, truth[qi]!.length));
      });
    }
    samples.sort((a, b) => a - b);
    const p = (f: number) => samples[Math.min(samples.length - 1, Math.floor(f * samples.length))]!;
    const row = `| ${ef} | ${p(0.5).toFixed(3)} | ${p(0.99).toFixed(3)} | ${(found10 / queryVectors.length).toFixed(3)} | ${(found10Rescored / queryVectors.length).toFixed(3)} |`;
    log(row);
    rows.push(row);
  }
  console.log(
    `## A saved graph: ${n.toLocaleString('en')} × ${d}-d (${source}), k ${K}, ${queryVectors.length} queries\n\n` +
      `- **Date:** ${new Date().toISOString()} · **Command:** \`node bench/dist/hnsw-tuning.js ${process.argv.slice(2).join(' ')}\`\n` +
      `- **Machine:** ${os.cpus()[0]?.model}, ${os.cpus().length} cores, Node ${process.version}\n\n` +
      '| expansionSearch (ef) | search p50 (ms) | search p99 (ms) | recall@10 (ties count) | recall@10, the k re-scored exactly |\n' +
      '|---:|---:|---:|---:|---:|\n' +
      rows.join('\n'),
  );
}

// Exact top-K by cosine (vectors are L2-normalised, so a dot product).
const truth = queryVectors.map((q) => {
  const scores = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    let s = 0;
    const o = i * d;
    for (let j = 0; j < d; j++) s += q[j]! * vectors[o + j]!;
    scores[i] = s;
  }
  return [...scores.keys()]
    .sort((a, b) => scores[b]! - scores[a]!)
    .slice(0, K)
    .map((i) => keys[i]!);
});
log(`exact top-${K} of ${queryVectors.length} queries done`);

const results: string[] = [];
for (const config of values.configs.split(',')) {
  // quantization:efConstruction[:M], e.g. i8:128 or i8:128:32.
  const [quantization, efc, m] = config.split(':') as [HnswParams['quantization'], string, string?];
  const params: HnswParams = {
    ...DEFAULT_HNSW_PARAMS,
    quantization,
    expansionAdd: Number(efc),
    connectivity: m ? Number(m) : DEFAULT_HNSW_PARAMS.connectivity,
  };
  const t0 = performance.now();
  const built = createHnswIndex(d, params);
  // One thread, as addInChunks does (usearch 2.26's threaded add loses nodes).
  for (let i = 0; i < n; i += 8192) {
    const end = Math.min(n, i + 8192);
    built.add(keys.slice(i, end), vectors.slice(i * d, end * d), 1);
  }
  const buildS = (performance.now() - t0) / 1000;
  const path = join(os.tmpdir(), `cairn-hnsw-tuning-${process.pid}-${quantization}-${efc}.usearch`);
  built.save(path);
  for (const ef of values.efs.split(',').map(Number)) {
    const index = createHnswIndex(d, { ...params, expansionSearch: ef });
    viewIndexFile(index, path);
    let recall10 = 0;
    let recallK = 0;
    let ms = 0;
    for (let r = 0; r < repeats; r++) {
      queryVectors.forEach((q, qi) => {
        const t = performance.now();
        const found = index.search(q, K, 1);
        ms += performance.now() - t;
        if (r > 0) return;
        const got = new Set(found.keys);
        recall10 += truth[qi]!.slice(0, 10).filter((k) => got.has(k)).length / 10;
        recallK += truth[qi]!.filter((k) => got.has(k)).length / K;
      });
    }
    const row = `| ${quantization} | ${params.connectivity} | ${efc} | ${ef} | ${buildS.toFixed(1)} | ${(ms / (repeats * queryVectors.length)).toFixed(3)} | ${(recall10 / queryVectors.length).toFixed(3)} | ${(recallK / queryVectors.length).toFixed(3)} |`;
    log(row);
    results.push(row);
  }
}
console.log(
  `## HNSW tuning: ${n.toLocaleString('en')} × ${d}-d (${source}), k ${K}, ${queryVectors.length} queries\n\n` +
    `- **Date:** ${new Date().toISOString()} · **Command:** \`node bench/dist/hnsw-tuning.js ${process.argv.slice(2).join(' ')}\`\n` +
    `- **Machine:** ${os.cpus()[0]?.model}, ${os.cpus().length} cores, Node ${process.version}\n\n` +
    '| quantization | connectivity (M) | expansionAdd (efC) | expansionSearch (ef) | build (s, 1 thread) | search (ms) | recall@10 | recall@k |\n' +
    '|---|---:|---:|---:|---:|---:|---:|---:|\n' +
    results.join('\n'),
);
