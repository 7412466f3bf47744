import { join } from 'node:path';
import {
  addInChunks,
  createHnswIndex,
  DEFAULT_HNSW_PARAMS,
  ExactMatrix,
  GRAPH_NEIGHBORS_TASK_FILE,
  saveIndexAtomically,
  type VectorIndexManager,
  workerIndexBuilder,
} from '@cairn/vector';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import nearestInFile from '../src/graph-neighbors-task.js';
import { nearestOffThread as nearestBatch } from '../src/neighbor-batch.js';
import { DIMS, randomUnitVectors, singleThreadIndexBuilder, ThreadRunner, VectorFixture } from './helpers.js';

/**
 * A background job's neighbour searches (the consolidation's near-duplicate pass) run in the graph's file on
 * a worker thread, and answer what the serving thread's own searches answer: the delta's newer vectors in,
 * deleted memories out.
 */
let fx: VectorFixture;
beforeEach(() => {
  fx = new VectorFixture();
});
afterEach(async () => {
  await fx.cleanup();
});

async function servedHere(m: VectorIndexManager, namespace: string, vectors: Float32Array[], k: number) {
  const out: number[][] = [];
  for (const vector of vectors) {
    const res = await m.searchVector({ namespace, vector, filters: {}, limit: k });
    if (res.status !== 'ok') throw new Error(res.reason);
    out.push(res.candidates.map((c) => c.key));
  }
  return out;
}

describe('VectorIndexManager.nearestOffThread', () => {
  it('searches the graph file on a worker thread and answers as the serving thread does', async () => {
    const runner = new ThreadRunner();
    const vectors = randomUnitVectors(300, DIMS, 61);
    const { keys } = fx.add('big', vectors);
    const m = fx.manager({ exactThreshold: 10, builder: workerIndexBuilder(runner) });
    await m.warm('big');
    // Newer vectors in the delta (one a memory of the graph written again), and two graph memories deleted.
    const late = fx.add('big', randomUnitVectors(12, DIMS, 62), () => ({}), 'late');
    m.apply(late.stored);
    const rewritten = randomUnitVectors(1, DIMS, 63)[0]!;
    m.apply(fx.add('big', [rewritten], () => ({ text: 'big memory m0, said again' }), 'm').stored);
    fx.store.delete('big', 'm7');
    fx.store.delete('big', 'm8');
    m.forgetDeletes();

    const queries = [...vectors.slice(0, 40), ...randomUnitVectors(12, DIMS, 62), rewritten];
    const lists = await m.nearestOffThread('big', queries, 9);
    expect(runner.files).toContain(GRAPH_NEIGHBORS_TASK_FILE);
    expect(lists).not.toBeNull();
    const keysOf = lists!.map((l) => l!.map((n) => n.key));
    expect(keysOf).toEqual(await servedHere(m, 'big', queries, 9));
    // Deleted memories never come back, the delta's vectors are found by themselves, and the memory
    // written again is found by its new vector, not its old one.
    for (const l of keysOf) expect(l).not.toContain(keys[7]);
    for (const l of keysOf) expect(l).not.toContain(keys[8]);
    for (const [i, key] of late.keys.entries()) expect(keysOf[40 + i]![0]).toBe(key);
    expect(keysOf[52]![0]).toBe(keys[0]);
    expect(lists![52]![0]!.cosine).toBeCloseTo(1, 5);
    // Each list is nearest first, with the cosines the serving thread computes.
    for (const l of lists!)
      for (let i = 1; i < l!.length; i++) expect(l![i]!.cosine).toBeLessThanOrEqual(l![i - 1]!.cosine);
  });

  it('scans an exact namespace in i8 a batch at a time, kept current through writes and deletes', async () => {
    const vectors = randomUnitVectors(300, DIMS, 81);
    const { keys } = fx.add('small', vectors);
    const m = fx.manager({ exactThreshold: 1_000 });
    await m.warm('small');
    expect(m.status('small').state).toBe('exact');
    const queries = vectors.slice(0, 40);
    const first = await m.nearestOffThread('small', queries, 5);
    expect(first).not.toBeNull();
    // Each stored vector finds itself first; the rest agree with the serving thread's exact f32 search,
    // give or take a near tie that i8 orders otherwise.
    const here = await servedHere(m, 'small', queries, 5);
    let agree = 0;
    for (const [i, l] of first!.entries()) {
      expect(l![0]!.key).toBe(keys[i]);
      expect(l![0]!.cosine).toBeCloseTo(1, 1);
      agree += l!.filter((n) => here[i]!.includes(n.key)).length;
    }
    expect(agree).toBeGreaterThanOrEqual(0.9 * 40 * 5);
    // After the first batch the matrix keeps its i8 rows: a new memory, a rewritten one and a removed one
    // must reach them. A vector written again takes its new place; a deleted memory is never answered.
    const late = fx.add('small', randomUnitVectors(3, DIMS, 82), () => ({}), 'late');
    m.apply(late.stored);
    const moved = randomUnitVectors(1, DIMS, 83)[0]!;
    m.apply(fx.add('small', [moved], () => ({ text: 'small memory m0, said again' }), 'm').stored);
    fx.store.delete('small', 'm9');
    m.forgetDeletes();
    const again = await m.nearestOffThread(
      'small',
      [...randomUnitVectors(3, DIMS, 82), moved, vectors[9]!],
      5,
    );
    for (const [i, key] of late.keys.entries()) expect(again![i]![0]!.key).toBe(key);
    expect(again![3]![0]!.key).toBe(keys[0]);
    for (const l of again!) expect(l!.map((n) => n.key)).not.toContain(keys[9]);
  });

  it('leaves an exact namespace of wide vectors to the caller: i8 cosines run low past 1,536 dimensions', async () => {
    const wide = new ExactMatrix(2_048, 16);
    const vectors = Array.from({ length: 8 }, (_, i) => {
      const v = new Float32Array(2_048);
      v[i] = 1;
      return v;
    });
    for (const [i, v] of vectors.entries()) wide.upsert(i + 1, v);
    const state = { kind: 'exact' as const, matrix: wide, watermark: 0 };
    expect(await nearestBatch({ current: () => state, keys: fx.store }, 'wide', vectors, 3)).toBeNull();
  });

  it('leaves the search to the caller where it cannot run off the thread: a few queries, no pool', async () => {
    const vectors = randomUnitVectors(40, DIMS, 71);
    fx.add('small', vectors);
    const pooled = fx.manager({ exactThreshold: 100, builder: workerIndexBuilder(new ThreadRunner()) });
    // An exact namespace's batch of fewer than four: its one-at-a-time searches cost less.
    expect(await pooled.nearestOffThread('small', vectors.slice(0, 3), 5)).toBeNull();
    const inProcess = fx.manager({ exactThreshold: 10, builder: singleThreadIndexBuilder });
    await inProcess.warm('small');
    expect(inProcess.status('small').state).toBe('hnsw');
    expect(await inProcess.nearestOffThread('small', vectors.slice(0, 3), 5)).toBeNull();
  });

  it('a merge that lands while the file is searched: the answer is taken from the index as it is now', async () => {
    // The merge starts once the file has been searched, and the file's answer is held until the merge has
    // landed: the answer then lacks the vectors the merge took out of the delta, and must not be used as it is.
    const runner = new ThreadRunner();
    let searched!: () => void;
    const fileSearched = new Promise<void>((r) => {
      searched = r;
    });
    let release!: () => void;
    const merged = new Promise<void>((r) => {
      release = r;
    });
    let searching = false;
    const held = {
      run: async <T>(file: string, payload: unknown): Promise<T> => {
        if (file !== GRAPH_NEIGHBORS_TASK_FILE) {
          if (searching) await fileSearched;
          return runner.run<T>(file, payload);
        }
        const answer = await runner.run<T>(file, payload);
        searched();
        await merged;
        return answer;
      },
    };
    const vectors = randomUnitVectors(200, DIMS, 81);
    fx.add('big', vectors);
    const m = fx.manager({ exactThreshold: 10, builder: workerIndexBuilder(held), mergeThreshold: 5 });
    await m.warm('big');
    const late = fx.add('big', randomUnitVectors(6, DIMS, 82), () => ({}), 'late');
    searching = true;
    const asked = m.nearestOffThread('big', randomUnitVectors(6, DIMS, 82), 3);
    // Six new vectors pass the merge threshold: a new generation takes them out of the delta.
    m.apply(late.stored);
    await m.flush();
    expect(m.status('big')).toEqual({ state: 'hnsw', size: 206 });
    release();
    const lists = await asked;
    for (const [i, key] of late.keys.entries()) expect(lists![i]![0]!.key).toBe(key);
  });

  it('a reader whose mapped generation the writer deleted maps the next one and answers from the pool', async () => {
    const runner = new ThreadRunner();
    const vectors = randomUnitVectors(200, DIMS, 91);
    fx.add('big', vectors);
    const writer = fx.manager({ exactThreshold: 10, mergeThreshold: 5 });
    await writer.warm('big');
    await writer.flush();
    const reader = fx.manager({ exactThreshold: 10, role: 'reader', builder: workerIndexBuilder(runner) });
    await reader.warm('big');
    // Two generations later the reader's file is gone from disk (the writer keeps only the newest).
    for (const seed of [92, 93]) {
      writer.apply(fx.add('big', randomUnitVectors(6, DIMS, seed), () => ({}), `w${seed}-`).stored);
      await writer.flush();
    }
    const late = randomUnitVectors(6, DIMS, 93);
    const lists = await reader.nearestOffThread('big', late, 3);
    expect(lists).not.toBeNull();
    expect(lists!.every((l) => l !== null)).toBe(true);
    const stored = fx.store.embeddings.byKeys(
      fx.space.id,
      'big',
      lists!.map((l) => l![0]!.key),
    );
    for (const [i, l] of lists!.entries()) expect(stored.get(l![0]!.key)).toEqual(late[i]);
    expect(runner.files.filter((f) => f === GRAPH_NEIGHBORS_TASK_FILE).length).toBeGreaterThanOrEqual(1);
  });
});

describe('the pool task that searches a graph file', () => {
  it('searches a batch on as many native threads as CPUs, each row answered as its own search is', () => {
    const path = join(fx.dir, 'batch.g1.usearch');
    const vs = randomUnitVectors(3_000, DIMS, 71);
    const packed = new Float32Array(vs.length * DIMS);
    for (const [i, v] of vs.entries()) packed.set(v, i * DIMS);
    const index = createHnswIndex(DIMS, DEFAULT_HNSW_PARAMS);
    addInChunks(
      index,
      BigUint64Array.from(vs, (_, i) => BigInt(i)),
      packed,
      DIMS,
    );
    saveIndexAtomically(index, path);
    // Enough queries for usearch to start every thread asked for (a few finish before the rest start).
    const queries = randomUnitVectors(2_000, DIMS, 72);
    const batch = new Float32Array(queries.length * DIMS);
    for (const [i, q] of queries.entries()) batch.set(q, i * DIMS);
    const k = 7;
    // More threads than the machine has CPUs (CAIRN_BUILD_THREADS may ask so): a mapped graph has a search
    // slot per CPU, and usearch fails a call that asks for more; the task asks for at most one per CPU.
    const all = nearestInFile({
      path,
      dimensions: DIMS,
      params: DEFAULT_HNSW_PARAMS,
      vectors: batch,
      k,
      threads: 256,
    });
    expect(Array.from(all.counts)).toEqual(queries.map(() => k));
    for (const [i, q] of queries.slice(0, 60).entries()) {
      // A one-row batch: usearch answers it in another shape, read the same way.
      const one = nearestInFile({
        path,
        dimensions: DIMS,
        params: DEFAULT_HNSW_PARAMS,
        vectors: q.slice(),
        k,
      });
      expect(one.counts[0]).toBe(k);
      expect(Array.from(all.keys.subarray(i * k, (i + 1) * k))).toEqual(Array.from(one.keys));
      expect(Array.from(all.cosines.subarray(i * k, (i + 1) * k))).toEqual(Array.from(one.cosines));
    }
    // Nearest first, and a row's own vector (were it stored) would head it: cosines fall along each row.
    for (let i = 0; i < queries.length; i++)
      for (let j = 1; j < k; j++)
        expect(all.cosines[i * k + j]!).toBeLessThanOrEqual(all.cosines[i * k + j - 1]!);
  });

  it('never answers from a file it mapped before when another file takes the same name', () => {
    const path = join(fx.dir, 'ns.g1.usearch');
    const save = (seed: number) => {
      const index = createHnswIndex(DIMS, DEFAULT_HNSW_PARAMS);
      const vs = randomUnitVectors(50, DIMS, seed);
      const packed = new Float32Array(50 * DIMS);
      for (const [i, v] of vs.entries()) packed.set(v, i * DIMS);
      addInChunks(
        index,
        BigUint64Array.from(vs, (_, i) => BigInt(seed * 1000 + i)),
        packed,
        DIMS,
      );
      saveIndexAtomically(index, path);
      return vs;
    };
    const ask = (q: Float32Array) =>
      nearestInFile({ path, dimensions: DIMS, params: DEFAULT_HNSW_PARAMS, vectors: q.slice(), k: 1 })
        .keys[0];
    const a = save(1);
    expect(ask(a[3]!)).toBe(1003);
    expect(ask(a[4]!)).toBe(1004);
    const b = save(2);
    expect(ask(b[3]!)).toBe(2003);
  });
});
