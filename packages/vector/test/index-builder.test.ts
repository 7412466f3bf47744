import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  addInChunks,
  BUILD_TASK_FILE,
  createHnswIndex,
  DEFAULT_HNSW_PARAMS,
  inProcessIndexBuilder,
  SEQUENTIAL_PREFIX,
  saveIndexAtomically,
  workerIndexBuilder,
} from '@cairn/vector';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DIMS, randomUnitVectors, ThreadRunner, VectorFixture } from './helpers.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'cairn-builder-'));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

/** Packs vectors into SharedArrayBuffer-backed arrays, as VectorIndexManager hands them to a builder. */
function sharedRequest(vectors: readonly Float32Array[], firstKey = 1) {
  const keys = new BigUint64Array(new SharedArrayBuffer((vectors.length + 3) * 8)).subarray(
    0,
    vectors.length,
  );
  const flat = new Float32Array(new SharedArrayBuffer((vectors.length + 3) * DIMS * 4)).subarray(
    0,
    vectors.length * DIMS,
  );
  vectors.forEach((v, i) => {
    keys[i] = BigInt(firstKey + i);
    flat.set(v, i * DIMS);
  });
  return { keys, vectors: flat };
}

function loadAndSearch(path: string, query: Float32Array): number {
  const index = createHnswIndex(DIMS, DEFAULT_HNSW_PARAMS);
  index.load(path);
  return Number(index.search(query, 1, 0).keys[0]);
}

/**
 * Share of vectors that are their own nearest neighbour in the saved index. HNSW is approximate, and
 * usearch's multi-threaded batch insert leaves a few nodes unreachable at random, so tests bound recall
 * rather than demand it of every vector.
 */
function selfRecall(path: string, vectors: readonly Float32Array[], firstKey: number): number {
  const index = createHnswIndex(DIMS, DEFAULT_HNSW_PARAMS);
  index.load(path);
  let hits = 0;
  for (const [i, v] of vectors.entries()) if (Number(index.search(v, 1, 0).keys[0]) === firstKey + i) hits++;
  return hits / vectors.length;
}

describe('inProcessIndexBuilder', () => {
  it('builds an HNSW file from shared buffers that loads and finds each vector', async () => {
    const vectors = randomUnitVectors(300, DIMS, 5);
    const path = join(dir, 'ns.usearch');
    const res = await inProcessIndexBuilder.build({
      ...sharedRequest(vectors, 1000),
      dimensions: DIMS,
      params: DEFAULT_HNSW_PARAMS,
      path,
    });
    expect(res).toEqual({ count: 300 });
    expect(selfRecall(path, vectors, 1000)).toBeGreaterThanOrEqual(0.97);
    expect(readdirSync(dir)).toEqual(['ns.usearch']);
  });

  it("raises the request's counter of added vectors as its inserts go in", async () => {
    const n = 300;
    const added = new Int32Array(new SharedArrayBuffer(4));
    const keys = new BigUint64Array(new SharedArrayBuffer(n * 8));
    const vectors = new Float32Array(new SharedArrayBuffer(n * DIMS * 4));
    randomUnitVectors(n, DIMS, 5).forEach((v, i) => {
      keys[i] = BigInt(i + 1);
      vectors.set(v, i * DIMS);
    });
    const path = join(dir, 'counted.usearch');
    await inProcessIndexBuilder.build({
      keys,
      vectors,
      dimensions: DIMS,
      params: DEFAULT_HNSW_PARAMS,
      path,
      added,
    });
    expect(Atomics.load(added, 0)).toBe(n);
  });

  it('builds an empty index for an empty request', async () => {
    const path = join(dir, 'empty.usearch');
    const res = await inProcessIndexBuilder.build({
      keys: new BigUint64Array(0),
      vectors: new Float32Array(0),
      dimensions: DIMS,
      params: DEFAULT_HNSW_PARAMS,
      path,
    });
    expect(res.count).toBe(0);
    expect(existsSync(path)).toBe(true);
  });
});

describe('addInChunks', () => {
  /** Keys 1..n and the vectors flattened, as a builder receives them. */
  function flat(vectors: readonly Float32Array[], dims: number) {
    const keys = new BigUint64Array(vectors.length).map((_, i) => BigInt(i + 1));
    const out = new Float32Array(vectors.length * dims);
    for (const [i, v] of vectors.entries()) out.set(v, i * dims);
    return { keys, out };
  }
  function selfHits(index: ReturnType<typeof createHnswIndex>, vectors: readonly Float32Array[]): number {
    let hits = 0;
    for (const [i, v] of vectors.entries()) if (Number(index.search(v, 1, 0).keys[0]) === i + 1) hits++;
    return hits;
  }

  // usearch's concurrent insert loses nodes while a graph is small: 3,000 random 16-d vectors on 2 threads
  // from the first vector lost 39 over 8 seeds (8 threads: 253). Below the prefix every insert is alone.
  it('inserts a graph below the sequential prefix one at a time whatever the threads: every vector finds itself', () => {
    const dims = 16;
    let lost = 0;
    for (const seed of [1, 2, 3, 4]) {
      const vectors = randomUnitVectors(3000, dims, seed);
      const { keys, out } = flat(vectors, dims);
      const index = createHnswIndex(dims, DEFAULT_HNSW_PARAMS);
      addInChunks(index, keys, out, dims, 8);
      expect(index.size()).toBe(3000);
      lost += 3000 - selfHits(index, vectors);
    }
    expect(lost).toBe(0);
  });

  it('merges on several threads into a loaded graph whose removed keys left free slots', () => {
    const dims = 16;
    const vectors = randomUnitVectors(SEQUENTIAL_PREFIX + 4000, dims, 12);
    const { keys, out } = flat(vectors, dims);
    const base = createHnswIndex(dims, DEFAULT_HNSW_PARAMS);
    addInChunks(base, keys, out, dims, 1);
    const path = join(dir, 'base.usearch');
    saveIndexAtomically(base, path);
    // As a merge does: load the base, drop the updated keys, insert them again (more than one chunk's worth,
    // on more threads than this machine has cores: usearch refused that with "Reserve capacity ahead of
    // insertions!").
    const merged = createHnswIndex(dims, DEFAULT_HNSW_PARAMS);
    merged.load(path);
    const updated = 9000;
    for (let i = 0; i < updated; i++) merged.remove(keys[i]!);
    addInChunks(merged, keys.slice(0, updated), out.slice(0, updated * dims), dims, 64);
    expect(merged.size()).toBe(vectors.length);
    expect(selfHits(merged, vectors)).toBeGreaterThanOrEqual(Math.floor(vectors.length * 0.99));
  });

  it('past the prefix, a build on 2 threads finds its vectors as well as one on 1 thread', () => {
    const dims = 16;
    const vectors = randomUnitVectors(SEQUENTIAL_PREFIX + 4000, dims, 11);
    const { keys, out } = flat(vectors, dims);
    const hits = [1, 2].map((threads) => {
      const index = createHnswIndex(dims, DEFAULT_HNSW_PARAMS);
      addInChunks(index, keys, out, dims, threads, 1000);
      expect(index.size()).toBe(vectors.length);
      return selfHits(index, vectors);
    });
    expect(hits[1]!).toBeGreaterThanOrEqual(hits[0]! - Math.ceil(vectors.length * 0.002));
  });
});

describe('saveIndexAtomically', () => {
  it('replaces an existing file and leaves no temporary file behind', () => {
    const path = join(dir, 'x.usearch');
    writeFileSync(path, 'old contents');
    const index = createHnswIndex(DIMS, DEFAULT_HNSW_PARAMS);
    const [v] = randomUnitVectors(1, DIMS, 1);
    index.add(7n, v!);
    saveIndexAtomically(index, path);
    expect(readdirSync(dir)).toEqual(['x.usearch']);
    expect(loadAndSearch(path, v!)).toBe(7);
  });
});

describe('workerIndexBuilder', () => {
  it('names the compiled build task, which exists after `pnpm build`', () => {
    expect(BUILD_TASK_FILE).toMatch(/dist[\\/]build-task\.js$/);
    expect(existsSync(BUILD_TASK_FILE)).toBe(true);
  });

  it('builds an index file on a worker thread', async () => {
    const runner = new ThreadRunner();
    const vectors = randomUnitVectors(150, DIMS, 9);
    const path = join(dir, 'worker.usearch');
    const res = await workerIndexBuilder(runner).build({
      ...sharedRequest(vectors),
      dimensions: DIMS,
      params: DEFAULT_HNSW_PARAMS,
      path,
    });
    expect(res).toEqual({ count: 150 });
    expect(runner.files).toEqual([BUILD_TASK_FILE]);
    expect(selfRecall(path, vectors, 1)).toBeGreaterThanOrEqual(0.97);
  });

  it('builds the index a VectorIndexManager then loads and serves', async () => {
    const fx = new VectorFixture();
    try {
      const runner = new ThreadRunner();
      const vectors = randomUnitVectors(120, DIMS, 10);
      const { keys } = fx.add('ns', vectors);
      const m = fx.manager({ exactThreshold: 10, builder: workerIndexBuilder(runner) });
      let hits = 0;
      for (const [i, v] of vectors.entries()) {
        const res = await m.searchVector({ namespace: 'ns', vector: v, filters: {}, limit: 1 });
        expect(res.status).toBe('ok');
        if (res.status === 'ok') {
          expect(res.exact).toBe(false);
          if (res.candidates[0]?.key === keys[i]) hits++;
        }
      }
      expect(hits / vectors.length).toBeGreaterThanOrEqual(0.97);
      expect(runner.files).toHaveLength(1);
      expect(m.status('ns')).toEqual({ state: 'hnsw', size: 120 });
    } finally {
      await fx.cleanup();
    }
  });
});
