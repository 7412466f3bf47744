import { GRAPH_NEIGHBORS_TASK_FILE, type VectorIndexManager, workerIndexBuilder } from '@cairn/vector';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
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
    const keysOf = lists!.map((l) => l.map((n) => n.key));
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
      for (let i = 1; i < l.length; i++) expect(l[i]!.cosine).toBeLessThanOrEqual(l[i - 1]!.cosine);
  });

  it('leaves the search to the caller where it cannot run off the thread: an exact namespace, no pool', async () => {
    const vectors = randomUnitVectors(40, DIMS, 71);
    fx.add('small', vectors);
    const pooled = fx.manager({ exactThreshold: 100, builder: workerIndexBuilder(new ThreadRunner()) });
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
});
