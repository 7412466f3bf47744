import { existsSync, readdirSync, readFileSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CairnError, normalizeMemory, type PendingMemory, type SearchFilters } from '@cairn/core';
import { ExactMatrix, type VectorIndexManager } from '@cairn/vector';
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { cosineOf, DIMS, randomUnitVectors, T0, VectorFixture } from './helpers.js';

let fx: VectorFixture;
beforeEach(() => {
  fx = new VectorFixture();
});
afterEach(async () => {
  await fx.cleanup();
});

/** Every file under the space's index folder. */
function indexFiles(): string[] {
  if (!existsSync(fx.indexDir)) return [];
  return readdirSync(fx.indexDir, { recursive: true, encoding: 'utf8' }).filter((f) =>
    /\.(usearch|json)$/.test(f),
  );
}

/** The sidecar naming the namespace's current graph generation. */
function sidecarPath(): string {
  const file = indexFiles().find((f) => f.endsWith('.json'));
  if (!file) throw new Error('no sidecar was written');
  return join(fx.indexDir, file);
}

function indexFile(): string {
  const file = indexFiles().find((f) => f.endsWith('.usearch'));
  if (!file) throw new Error('no index file was written');
  return join(fx.indexDir, file);
}

/** The sidecar of one namespace's graph (when the folder holds several), and its generation. */
function sidecarOf(namespace: string): { generation: number; count: number } {
  const file = indexFiles().find((f) => f.includes(namespace) && f.endsWith('.json'));
  if (!file) throw new Error(`no sidecar was written for ${namespace}`);
  return JSON.parse(readFileSync(join(fx.indexDir, file), 'utf8'));
}

function sidecar(): {
  watermark: number;
  metaSeq?: number;
  rows?: number;
  count: number;
  namespace: string;
  dimensions: number;
  params: Record<string, unknown>;
} {
  return JSON.parse(readFileSync(sidecarPath(), 'utf8'));
}

async function okSearch(
  m: VectorIndexManager,
  namespace: string,
  vector: Float32Array,
  limit = 5,
  filters: SearchFilters = {},
) {
  const res = await m.searchVector({ namespace, vector, filters, limit });
  if (res.status !== 'ok') throw new Error(`vector leg unavailable: ${res.reason}`);
  return res;
}

function rebuildWarnings(): string[] {
  return fx.warnings().map((l) => l.msg);
}

describe('VectorIndexManager: exact mode', () => {
  it('searches a small namespace exactly, with no graph and no index file', async () => {
    const vectors = randomUnitVectors(50, DIMS, 1);
    const { keys } = fx.add('ns', vectors);
    const m = fx.manager();
    const res = await okSearch(m, 'ns', vectors[17]!);
    expect(res.exact).toBe(true);
    expect(res.candidates[0]?.key).toBe(keys[17]);
    expect(res.candidates[0]?.cosine).toBeCloseTo(1, 5);
    expect(m.status('ns')).toEqual({ state: 'exact', size: 50 });
    await m.flush();
    expect(indexFiles()).toEqual([]);
    expect(fx.builder.builds).toBe(0);
  });

  it('returns candidates ranked 1..n by descending cosine, matching brute force', async () => {
    const vectors = randomUnitVectors(80, DIMS, 2);
    const { keys } = fx.add('ns', vectors);
    const q = randomUnitVectors(1, DIMS, 3)[0]!;
    const res = await okSearch(fx.manager(), 'ns', q, 10);
    const expected = vectors
      .map((v, i) => ({ key: keys[i]!, cosine: cosineOf(v, q) }))
      .sort((a, b) => b.cosine - a.cosine)
      .slice(0, 10);
    expect(res.candidates.map((c) => c.key)).toEqual(expected.map((e) => e.key));
    expect(res.candidates.map((c) => c.rank)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
  });

  it('answers an empty namespace with no candidates', async () => {
    const res = await okSearch(fx.manager(), 'empty', randomUnitVectors(1, DIMS, 1)[0]!);
    expect(res.candidates).toEqual([]);
  });

  it('uses exact search up to and including exactThreshold vectors', async () => {
    fx.add('ns', randomUnitVectors(10, DIMS, 4));
    const m = fx.manager({ exactThreshold: 10 });
    await m.warm('ns');
    expect(m.status('ns').state).toBe('exact');
  });

  it('lets go of a deleted memory in an exact namespace', async () => {
    const vs = randomUnitVectors(6, DIMS, 46);
    const { keys } = fx.add('small', vs);
    const m = fx.manager({ exactThreshold: 10 });
    await m.warm('small');
    m.forget('small', [keys[2]!, keys[5]!]);
    expect(m.status('small')).toEqual({ state: 'exact', size: 4 });
    const found = (await okSearch(m, 'small', vs[2]!, 6)).candidates.map((c) => c.key);
    expect(found.sort()).toEqual([keys[0], keys[1], keys[3], keys[4]].sort());
    expect((await okSearch(m, 'small', vs[4]!, 1)).candidates[0]?.key).toBe(keys[4]);
  });

  it('applies new embeddings to a loaded namespace and ignores ones it already has', async () => {
    const m = fx.manager();
    const first = fx.add('ns', randomUnitVectors(5, DIMS, 5));
    await m.warm('ns');
    const fresh = randomUnitVectors(3, DIMS, 6);
    const second = fx.add('ns', fresh, () => ({}), 'n');
    m.apply(second.stored);
    m.apply(first.stored); // older than the watermark: ignored
    expect(m.status('ns')).toEqual({ state: 'exact', size: 8 });
    expect((await okSearch(m, 'ns', fresh[1]!)).candidates[0]?.key).toBe(second.keys[1]);
  });

  it('does not load a namespace just because embeddings for it were applied', () => {
    const m = fx.manager();
    const { stored } = fx.add('cold', randomUnitVectors(3, DIMS, 7));
    m.apply(stored);
    // Not loaded; a load would read all 3 from SQLite at once (exact), so all 3 count as indexed.
    expect(m.status('cold')).toEqual({ state: 'unloaded', size: 3 });
    // A large namespace with no index file has nothing indexed until its graph is built.
    fx.add('coldbig', randomUnitVectors(30, DIMS, 8));
    const small = fx.manager({ exactThreshold: 10 });
    expect(small.status('coldbig')).toEqual({ state: 'unloaded', size: 0 });
    // A reader serves such a namespace exactly from SQLite: all of it.
    expect(fx.manager({ exactThreshold: 10, role: 'reader' }).status('coldbig')).toEqual({
      state: 'unloaded',
      size: 30,
    });
  });

  it("counts an unloaded namespace's rewritten memories once, as a load holds them", async () => {
    const opts = { exactThreshold: 10, mergeThreshold: 1_000, loadAfterWrites: Number.POSITIVE_INFINITY };
    const m = fx.manager(opts);
    fx.add('rw', randomUnitVectors(40, DIMS, 90));
    await m.warm('rw');
    await m.flush();
    expect(sidecar().count).toBe(40);
    // After the file: five of its memories rewritten (new text, new vectors, same keys) and three new ones.
    fx.add('rw', randomUnitVectors(5, DIMS, 91), (i) => ({ text: `rw memory m${i}, said again` }));
    fx.add('rw', randomUnitVectors(3, DIMS, 92), () => ({}), 'n');
    expect(sidecar().count).toBe(40);
    // A process that has not loaded it (`cairn stats` beside a server) counted the five twice: 48.
    const other = fx.manager(opts);
    expect(other.status('rw')).toEqual({ state: 'unloaded', size: 43 });
    await other.warm('rw');
    expect(other.status('rw')).toEqual({ state: 'hnsw', size: 43 });
  });

  it('a writer loads (or builds) a namespace once loadAfterWrites vectors arrive for it unloaded', async () => {
    // The bulk-ingest path: batches are applied to a namespace nobody has searched yet.
    const m = fx.manager({ exactThreshold: 10, mergeThreshold: 8, loadAfterWrites: 8 });
    const first = fx.add('bulk', randomUnitVectors(7, DIMS, 70));
    m.apply(first.stored);
    expect(m.status('bulk').state).toBe('unloaded');
    const second = fx.add('bulk', randomUnitVectors(20, DIMS, 71), () => ({}), 'b');
    m.apply(second.stored);
    // 27 stored, over exactThreshold: the graph is built in the background from SQLite, no search needed.
    await m.flush();
    expect(fx.builder.builds).toBeGreaterThanOrEqual(1);
    expect(m.status('bulk')).toEqual({ state: 'hnsw', size: 27 });
    expect(indexFiles().some((f) => f.endsWith('.usearch'))).toBe(true);
    // A namespace small enough for exact search stays lazy: nothing to build, and nobody may search it.
    const small = fx.add('small', randomUnitVectors(9, DIMS, 73));
    m.apply(small.stored);
    expect(m.status('small').state).toBe('unloaded');
    // A reader never does this (it writes no file), nor does a writer told not to.
    const other = fx.add('other', randomUnitVectors(20, DIMS, 72));
    fx.manager({ role: 'reader', loadAfterWrites: 8 }).apply(other.stored);
    const lazy = fx.manager({ exactThreshold: 10, loadAfterWrites: Number.POSITIVE_INFINITY });
    lazy.apply(other.stored);
    expect(lazy.status('other').state).toBe('unloaded');
  });

  it('a namespace that reached loadAfterWrites while small and grew past exact search since is loaded by the upkeep', async () => {
    // Found by a walkthrough: at the defaults (4,096 writes, 5,000 exact) a namespace of 5,001–8,191
    // vectors had no graph until its first search, which then answered without its vector leg.
    const m = fx.manager({ exactThreshold: 10, mergeThreshold: 1_000, loadAfterWrites: 8 });
    const first = fx.add('grow', randomUnitVectors(8, DIMS, 90));
    m.apply(first.stored); // the threshold, while small: stays lazy
    const more = fx.add('grow', randomUnitVectors(5, DIMS, 91), () => ({}), 'g');
    m.apply(more.stored); // 13 > exactThreshold, 5 short of the next count
    await m.flush();
    expect(m.status('grow').state).toBe('unloaded');
    await m.persistDue();
    await m.flush();
    expect(m.status('grow')).toEqual({ state: 'hnsw', size: 13 });
  });

  it('says how many vectors are not yet in a saved graph, less what the merge in flight has added', async () => {
    const m = fx.manager({ exactThreshold: 10, mergeThreshold: 1_000, loadAfterWrites: 1_000 });
    const first = fx.add('bulk', randomUnitVectors(27, DIMS, 80));
    // Not loaded, more than an exact search serves, no saved file: all of it waits.
    expect(m.unmerged('bulk', 27)).toBe(27);
    // Small enough to be searched exactly: nothing to wait for.
    expect(m.unmerged('small', 9)).toBe(0);
    m.apply(first.stored);
    await m.warm('bulk');
    await m.flush();
    expect(m.status('bulk')).toEqual({ state: 'hnsw', size: 27 });
    expect(m.unmerged('bulk', 27)).toBe(0);
    // Another process's view of it, not loaded: what its saved file lacks.
    expect(fx.manager({ exactThreshold: 10 }).unmerged('bulk', 40)).toBe(13);
    m.apply(fx.add('bulk', randomUnitVectors(20, DIMS, 81), () => ({}), 'n').stored);
    expect(m.unmerged('bulk', 47)).toBe(20);
    fx.builder.hold();
    const merging = m.flush();
    await new Promise((r) => setTimeout(r, 20));
    // The merge has taken the delta but added nothing yet: all 20 still wait.
    expect(m.unmerged('bulk', 47)).toBe(20);
    fx.builder.open();
    await merging;
    expect(m.unmerged('bulk', 47)).toBe(0);
    expect(m.status('bulk')).toEqual({ state: 'hnsw', size: 47 });
  });

  it('returns stored vectors for keys of one namespace', () => {
    const vectors = randomUnitVectors(3, DIMS, 8);
    const { keys } = fx.add('ns', vectors);
    const other = fx.add('other', randomUnitVectors(1, DIMS, 9));
    const got = fx.manager().vectorsFor('ns', [...keys, ...other.keys]);
    expect([...got.keys()].sort()).toEqual([...keys].sort());
    expect([...got.get(keys[0]!)!]).toEqual([...vectors[0]!]);
  });
});

describe('VectorIndexManager: query validation', () => {
  it('refuses a query vector of the wrong length with DIMENSION_MISMATCH', async () => {
    fx.add('ns', randomUnitVectors(5, DIMS, 1));
    const m = fx.manager();
    for (const len of [DIMS - 1, DIMS + 1, 0]) {
      const err = await m
        .searchVector({ namespace: 'ns', vector: new Float32Array(len), filters: {}, limit: 5 })
        .then(
          () => null,
          (e: unknown) => e,
        );
      expect(err).toBeInstanceOf(CairnError);
      expect((err as CairnError).code).toBe('DIMENSION_MISMATCH');
      expect((err as CairnError).data).toMatchObject({ expected: DIMS, actual: len });
    }
  });
});

describe('VectorIndexManager: HNSW mode', () => {
  const N = 200;
  let vectors: Float32Array[];
  let keys: number[];
  beforeEach(() => {
    vectors = randomUnitVectors(N, DIMS, 42);
    keys = fx.add('big', vectors).keys;
  });

  it('builds an HNSW index when the namespace exceeds exactThreshold, and saves it with a sidecar', async () => {
    const m = fx.manager({ exactThreshold: 10 });
    const res = await okSearch(m, 'big', vectors[123]!);
    expect(res.exact).toBe(false);
    expect(res.candidates[0]?.key).toBe(keys[123]);
    expect(res.candidates[0]?.cosine).toBeCloseTo(1, 4);
    expect(m.status('big')).toEqual({ state: 'hnsw', size: N });
    expect(fx.builder.builds).toBe(1);
    expect(existsSync(indexFile())).toBe(true);
    expect(sidecar()).toMatchObject({ namespace: 'big', dimensions: DIMS, count: N });
    expect(fx.logs.some((l) => l.level === 'info' && l.msg === 'vector index built')).toBe(true);
  });

  it('finds every stored vector as its own nearest neighbour', async () => {
    const m = fx.manager({ exactThreshold: 10 });
    await m.warm('big');
    let hits = 0;
    for (let i = 0; i < N; i++) {
      const res = await okSearch(m, 'big', vectors[i]!, 1);
      if (res.candidates[0]?.key === keys[i]) hits++;
    }
    expect(hits).toBe(N);
  });

  it('loads a saved index in a new manager without rebuilding', async () => {
    const m1 = fx.manager({ exactThreshold: 10 });
    await m1.warm('big');
    await m1.close();
    fx.logs.length = 0;
    fx.builder.builds = 0;

    const m2 = fx.manager({ exactThreshold: 10, waitForBuild: false });
    expect(m2.status('big')).toEqual({ state: 'unloaded', size: N });
    // Loaded synchronously from the file: no build, so even waitForBuild: false answers at once.
    const res = await okSearch(m2, 'big', vectors[5]!);
    expect(res.candidates[0]?.key).toBe(keys[5]);
    expect(fx.builder.builds).toBe(0);
    expect(fx.logs).toEqual([]);
  });

  it('loads a file built with another thread count: the threads are not a graph parameter', async () => {
    const m1 = fx.manager({ exactThreshold: 10, buildThreads: 1 });
    await m1.warm('big');
    await m1.close();
    expect(sidecar().params).not.toHaveProperty('buildThreads');
    fx.logs.length = 0;
    fx.builder.builds = 0;
    const m2 = fx.manager({ exactThreshold: 10, buildThreads: 2 });
    expect((await okSearch(m2, 'big', vectors[5]!)).candidates[0]?.key).toBe(keys[5]);
    expect(fx.builder.builds).toBe(0);
    expect(fx.logs).toEqual([]);
  });

  it('writes applied changes to the index file on flush', async () => {
    const m1 = fx.manager({ exactThreshold: 10 });
    await m1.warm('big');
    const before = sidecar();
    const fresh = randomUnitVectors(5, DIMS, 43);
    const added = fx.add('big', fresh, () => ({}), 'late');
    m1.apply(added.stored);
    expect((await okSearch(m1, 'big', fresh[2]!)).candidates[0]?.key).toBe(added.keys[2]);
    expect(sidecar()).toEqual(before);
    await m1.flush();
    const after = sidecar();
    expect(after.count).toBe(N + 5);
    expect(after.watermark).toBe(Math.max(...added.stored.map((s) => s.writeSeq)));

    fx.logs.length = 0;
    fx.builder.builds = 0;
    const m2 = fx.manager({ exactThreshold: 10 });
    expect((await okSearch(m2, 'big', fresh[4]!)).candidates[0]?.key).toBe(added.keys[4]);
    expect(m2.status('big')).toEqual({ state: 'hnsw', size: N + 5 });
    expect(fx.builder.builds).toBe(0);
    expect(rebuildWarnings()).toEqual([]);
  });

  it('the periodic upkeep merges a delta once it is a thirty-second of its graph; flush merges any', async () => {
    const m = fx.manager({ exactThreshold: 10 });
    await m.warm('big');
    const generation = () => Number(/\.g(\d+)\.usearch$/.exec(indexFile())![1]);
    expect(generation()).toBe(1);
    const fresh = randomUnitVectors(8, DIMS, 45);
    // 6 of 200 (under 200 / 32): searched from the delta, and caught up by the next load, not rewritten.
    const six = fx.add('big', fresh.slice(0, 6), () => ({}), 'six');
    m.apply(six.stored);
    await m.persistDue();
    expect(generation()).toBe(1);
    expect((await okSearch(m, 'big', fresh[3]!)).candidates[0]?.key).toBe(six.keys[3]);
    const fresh2 = fx.manager({ exactThreshold: 10 });
    expect(fresh2.status('big')).toEqual({ state: 'unloaded', size: N + 6 });
    expect((await okSearch(fresh2, 'big', fresh[5]!)).candidates[0]?.key).toBe(six.keys[5]);
    // Two more: 8 of 200, a new generation.
    m.apply(fx.add('big', fresh.slice(6), () => ({}), 'two').stored);
    await m.persistDue();
    expect(generation()).toBe(2);
    expect(sidecar().count).toBe(N + 8);
    // A drain or a close merges whatever is pending.
    m.apply(fx.add('big', randomUnitVectors(1, DIMS, 46), () => ({}), 'one').stored);
    await m.persistDue();
    expect(generation()).toBe(2);
    await m.flush();
    expect(generation()).toBe(3);
    expect(sidecar().count).toBe(N + 9);
  });

  it('a close leaves a delta under a 256th of its graph for the next load, and merges a larger one', async () => {
    const huge = randomUnitVectors(2_600, DIMS, 90);
    fx.add('huge', huge);
    const m = fx.manager({ exactThreshold: 10 });
    await m.warm('huge');
    const generation = () => sidecarOf('huge').generation;
    expect(generation()).toBe(1);
    const fresh = randomUnitVectors(11, DIMS, 91);
    const ten = fx.add('huge', fresh.slice(0, 10), () => ({}), 'ten');
    m.apply(ten.stored);
    // Ten of 2,600 (under 2,600 / 256): nothing a fresh process would have to build.
    expect(m.unmerged('huge', 2_610)).toBe(0);
    await m.close();
    expect(generation()).toBe(1);
    expect(sidecarOf('huge').count).toBe(2_600);
    // The next process catches the ten up from SQLite: counted, found, nothing built.
    fx.builder.builds = 0;
    const next = fx.manager({ exactThreshold: 10 });
    expect(next.status('huge')).toEqual({ state: 'unloaded', size: 2_610 });
    expect(next.unmerged('huge', 2_610)).toBe(0);
    expect(next.unmerged('huge', 2_611)).toBe(11);
    expect((await okSearch(next, 'huge', fresh[7]!)).candidates[0]?.key).toBe(ten.keys[7]);
    expect(next.status('huge')).toEqual({ state: 'hnsw', size: 2_610 });
    expect(fx.builder.builds).toBe(0);
    // One more makes eleven, past 2,600 / 256: the close merges them.
    next.apply(fx.add('huge', fresh.slice(10), () => ({}), 'one').stored);
    expect(next.unmerged('huge', 2_611)).toBe(11);
    await next.close();
    expect(generation()).toBe(2);
    expect(sidecarOf('huge').count).toBe(2_611);
  });

  it("a shard handed over leaves a small delta to its next writer's catch-up, as a close does", async () => {
    fx.add('huge', randomUnitVectors(2_600, DIMS, 92));
    const m = fx.manager({ exactThreshold: 10 });
    await m.warm('huge');
    const fresh = randomUnitVectors(3, DIMS, 93);
    const three = fx.add('huge', fresh, () => ({}), 'three');
    m.apply(three.stored);
    await m.release((ns) => ns === 'huge', true);
    expect(sidecarOf('huge')).toMatchObject({ generation: 1, count: 2_600 });
    fx.builder.builds = 0;
    const next = fx.manager({ exactThreshold: 10 });
    expect((await okSearch(next, 'huge', fresh[1]!)).candidates[0]?.key).toBe(three.keys[1]);
    expect(next.status('huge')).toEqual({ state: 'hnsw', size: 2_603 });
    expect(fx.builder.builds).toBe(0);
    await m.close();
  });

  it('mapSaved maps saved graphs and nothing else, and stops once the manager is closed', async () => {
    fx.add('big2', randomUnitVectors(60, DIMS, 47));
    fx.add('big3', randomUnitVectors(60, DIMS, 48));
    fx.add('small', randomUnitVectors(5, DIMS, 49));
    const m1 = fx.manager({ exactThreshold: 10 });
    for (const ns of ['big', 'big2', 'big3', 'small']) await m1.warm(ns);
    await m1.close();
    fx.builder.builds = 0;

    const m2 = fx.manager({ exactThreshold: 10 });
    await m2.mapSaved(['big', 'big2', 'small']);
    expect(m2.status('big').state).toBe('hnsw');
    expect(m2.status('big2').state).toBe('hnsw');
    // A small namespace has no file: it loads when searched, as a namespace not asked for does.
    expect(m2.status('small').state).toBe('unloaded');
    expect(m2.status('big3').state).toBe('unloaded');
    await m2.close();

    // A file it cannot use is left to the first search (which rebuilds it), not built at start.
    const changed = fx.manager({ exactThreshold: 10, hnsw: { connectivity: 8 } });
    await changed.mapSaved(['big']);
    expect(changed.status('big').state).toBe('unloaded');
    expect(fx.builder.builds).toBe(0);
    await changed.close();

    // Closed meanwhile (a server stopped while it starts): nothing is mapped into the closed manager.
    const m3 = fx.manager({ exactThreshold: 10 });
    const mapping = m3.mapSaved(['big', 'big2', 'big3']);
    await m3.close();
    await mapping;
    expect(['big', 'big2', 'big3'].map((ns) => m3.status(ns).state)).toEqual([
      'unloaded',
      'unloaded',
      'unloaded',
    ]);
  });

  it('a load deletes only older generations: a newer whole file may be a merge committing it', async () => {
    const m1 = fx.manager({ exactThreshold: 10 });
    await m1.warm('big');
    await m1.close();
    const first = indexFiles().find((f) => f.endsWith('.usearch'))!;
    const stem = first.replace(/\.g\d+\.usearch$/, '');
    writeFileSync(join(fx.indexDir, `${stem}.g0.usearch`), 'older');
    writeFileSync(join(fx.indexDir, `${stem}.g5.usearch`), 'newer, whole');
    const m2 = fx.manager({ exactThreshold: 10 });
    await m2.warm('big');
    // The load's deletion runs in the background: wait for the older file to go.
    for (let i = 0; i < 100 && indexFiles().includes(`${stem}.g0.usearch`); i++)
      await new Promise((r) => setTimeout(r, 10));
    expect(indexFiles().sort()).toEqual([`${stem}.g1.usearch`, `${stem}.g5.usearch`, `${stem}.json`].sort());
  });

  it('a merge deletes other generations and leftovers, never a newer generation being written', async () => {
    const m = fx.manager({ exactThreshold: 10 });
    await m.warm('big');
    const first = indexFiles().find((f) => f.endsWith('.usearch'))!;
    const stem = first.replace(/\.g\d+\.usearch$/, '');
    // A crash's leftover of this generation, and a later generation's file mid-save (another merge's).
    writeFileSync(join(fx.indexDir, `${first}.tmp-999`), 'partial');
    writeFileSync(join(fx.indexDir, `${stem}.g9.usearch.tmp-999`), 'being written');
    // A whole file of a generation its sidecar never named (a sidecar lost, the numbering restarted).
    writeFileSync(join(fx.indexDir, `${stem}.g7.usearch`), 'orphaned');
    // Another namespace's file whose name shares the prefix is not this namespace's.
    writeFileSync(join(fx.indexDir, `${stem}x.g1.usearch`), 'not ours');
    m.apply(fx.add('big', randomUnitVectors(3, DIMS, 44), () => ({}), 'late').stored);
    await m.flush();
    const all = readdirSync(fx.indexDir, { recursive: true, encoding: 'utf8' }).filter((f) =>
      f.includes('.'),
    );
    expect(all.sort()).toEqual(
      [`${stem}.g2.usearch`, `${stem}.json`, `${stem}.g9.usearch.tmp-999`, `${stem}x.g1.usearch`].sort(),
    );
  });

  it('lets go of a deleted memory: never returned, not counted, and out of the file after the next flush', async () => {
    const m = fx.manager({ exactThreshold: 10 });
    await m.warm('big');
    // One deleted from the graph, one written since (in the delta) and deleted too.
    const late = fx.add('big', randomUnitVectors(1, DIMS, 45), () => ({}), 'late');
    m.apply(late.stored);
    expect(m.status('big').size).toBe(N + 1);
    fx.store.delete('big', 'm7');
    fx.store.delete('big', 'late0');
    m.forget('big', [keys[7]!, late.keys[0]!]);
    expect(m.status('big')).toEqual({ state: 'hnsw', size: N - 1 });
    const found = (await okSearch(m, 'big', vectors[7]!, 5)).candidates.map((c) => c.key);
    expect(found).not.toContain(keys[7]);
    expect(found.length).toBe(5);
    // One graph key of 200 is not worth a new file (a load drops it again); two, 1%, are.
    const before = sidecar();
    await m.flush();
    expect(sidecar()).toEqual(before);
    fx.store.delete('big', 'm9');
    m.forgetDeletes();
    await m.flush();
    expect(sidecar().count).toBe(N - 2);
    // A new process reads the count from the file, and finds what is left.
    const m2 = fx.manager({ exactThreshold: 10 });
    expect(m2.status('big')).toEqual({ state: 'unloaded', size: N - 2 });
    expect((await okSearch(m2, 'big', vectors[7]!, 5)).candidates.map((c) => c.key)).not.toContain(keys[7]);
    expect((await okSearch(m2, 'big', vectors[8]!, 1)).candidates[0]?.key).toBe(keys[8]);
  });

  it('a memory deleted while the merge that holds it runs is dropped once the merge lands', async () => {
    const m = fx.manager({ exactThreshold: 10 });
    await m.warm('big');
    const late = fx.add('big', randomUnitVectors(2, DIMS, 47), () => ({}), 'late');
    m.apply(late.stored);
    fx.builder.hold();
    const flushed = m.flush(); // the merge takes both late vectors, then waits at the gate
    await new Promise((r) => setTimeout(r, 20));
    fx.store.delete('big', 'late0');
    m.forget('big', [late.keys[0]!]);
    expect(m.status('big').size).toBe(N + 1);
    fx.builder.open();
    await flushed;
    // The new file holds late0 (it was merged from the snapshot): it stays uncounted and unreturned.
    expect(m.status('big').size).toBe(N + 1);
    const lateVector = randomUnitVectors(2, DIMS, 47)[0]!;
    expect((await okSearch(m, 'big', lateVector, 5)).candidates.map((c) => c.key)).not.toContain(
      late.keys[0],
    );
    expect((await okSearch(m, 'big', randomUnitVectors(2, DIMS, 47)[1]!, 1)).candidates[0]?.key).toBe(
      late.keys[1],
    );
  });

  it('a memory deleted while its namespace is built leaves the built index', async () => {
    const m = fx.manager({ exactThreshold: 10 });
    fx.builder.hold();
    const warming = m.warm('big');
    await new Promise((r) => setTimeout(r, 20));
    fx.store.delete('big', 'm7');
    m.forget('big', [keys[7]!]);
    fx.builder.open();
    await warming;
    expect(m.status('big')).toEqual({ state: 'hnsw', size: N - 1 });
    expect((await okSearch(m, 'big', vectors[7]!, 5)).candidates.map((c) => c.key)).not.toContain(keys[7]);
  });

  it('a memory deleted while no process has its namespace loaded is neither counted nor kept once mapped', async () => {
    const m = fx.manager({ exactThreshold: 10 });
    await m.warm('big');
    await m.close();
    // `cairn delete` with no server: only the store hears of it; the saved file still holds the vectors.
    fx.store.delete('big', 'm7');
    fx.store.delete('big', 'm8');
    const m2 = fx.manager({ exactThreshold: 10 });
    expect(m2.status('big')).toEqual({ state: 'unloaded', size: N - 2 });
    await m2.warm('big');
    expect(m2.status('big')).toEqual({ state: 'hnsw', size: N - 2 });
    expect(fx.builder.builds).toBe(1);
    expect((await okSearch(m2, 'big', vectors[7]!, 5)).candidates.map((c) => c.key)).not.toContain(keys[7]);
    // The next save writes a file without them, recording that it is clean of deletes up to now.
    await m2.flush();
    expect(sidecar().count).toBe(N - 2);
    expect(sidecar().metaSeq).toBe(fx.store.metaSeq());
    const m3 = fx.manager({ exactThreshold: 10 });
    expect(m3.status('big')).toEqual({ state: 'unloaded', size: N - 2 });
  });

  it('a file written by a merge that removed keys is mapped by the next process, not rebuilt', async () => {
    const m = fx.manager({ exactThreshold: 10 });
    await m.warm('big');
    for (let i = 0; i < 5; i++) fx.store.delete('big', `m${i}`);
    m.forgetDeletes();
    await m.close();
    expect(fx.builder.builds).toBe(2); // the build, then the merge that removed five keys
    // usearch keeps a removed key's slot in the file: the sidecar records the rows it holds.
    expect(sidecar()).toMatchObject({ count: N - 5, rows: N });
    const m2 = fx.manager({ exactThreshold: 10 });
    await m2.warm('big');
    expect(fx.builder.builds).toBe(2);
    expect(rebuildWarnings()).toEqual([]);
    expect(m2.status('big')).toEqual({ state: 'hnsw', size: N - 5 });
    // A reader maps the new generation too, rather than warning on every refresh.
    const reader = fx.manager({ exactThreshold: 10, role: 'reader' });
    await reader.warm('big');
    fx.store.delete('big', 'm5');
    fx.store.delete('big', 'm6');
    m2.forgetDeletes();
    await m2.flush();
    reader.refresh();
    expect(reader.status('big')).toEqual({ state: 'hnsw', size: N - 7 });
    expect(rebuildWarnings()).toEqual([]);
  });

  it("counts an unloaded namespace's deleted keys in its file once, not on every stats call", async () => {
    const m = fx.manager({ exactThreshold: 10 });
    await m.warm('big');
    await m.close();
    fx.store.delete('big', 'm7');
    const m2 = fx.manager({ exactThreshold: 10 });
    expect(m2.status('big')).toEqual({ state: 'unloaded', size: N - 1 });
    // The answer is kept for the same file and deletes: the file is not read again (here, it is gone).
    rmSync(indexFile());
    expect(m2.status('big')).toEqual({ state: 'unloaded', size: N - 1 });
    expect(fx.warnings()).toEqual([]);
  });

  it('hears of deletes made by any process since its last look, loaded namespaces at once', async () => {
    const m = fx.manager({ exactThreshold: 10 });
    await m.warm('big');
    const small = fx.add('small', randomUnitVectors(5, DIMS, 49), () => ({}), 's');
    fx.store.delete('big', 'm3');
    fx.store.delete('big', 'm4');
    fx.store.delete('small', 's1');
    // A memory deleted and written again is live: its new vector stays.
    fx.store.delete('big', 'm5');
    const again = fx.add('big', [vectors[5]!], () => ({ id: 'm5' }));
    expect(again.keys[0]).toBe(keys[5]);
    m.apply(again.stored);
    m.forgetDeletes();
    expect(m.status('big')).toEqual({ state: 'hnsw', size: N - 2 });
    expect((await okSearch(m, 'big', vectors[5]!, 1)).candidates[0]?.key).toBe(again.keys[0]);
    // `small` was not loaded: it reads its vectors, the deleted one's gone, from the store.
    expect(m.status('small')).toEqual({ state: 'unloaded', size: 4 });
    expect(small.keys).toHaveLength(5);
    m.forgetDeletes();
    expect(m.status('big')).toEqual({ state: 'hnsw', size: N - 2 });
  });

  it('a reader keeps the deletes it knows when it maps a generation saved before the writer knew them', async () => {
    const writer = fx.manager({ exactThreshold: 10 });
    await writer.warm('big');
    const reader = fx.manager({ exactThreshold: 10, role: 'reader' });
    await reader.warm('big');
    fx.store.delete('big', 'm7');
    reader.forget('big', [keys[7]!]);
    // The writer merges a new memory before it hears of the delete: its file still holds m7.
    const late = fx.add('big', randomUnitVectors(1, DIMS, 48), () => ({}), 'late');
    writer.apply(late.stored);
    await writer.flush();
    reader.refresh();
    expect(reader.status('big')).toEqual({ state: 'hnsw', size: N });
    expect((await okSearch(reader, 'big', vectors[7]!, 5)).candidates.map((c) => c.key)).not.toContain(
      keys[7],
    );
  });

  it('re-indexes a re-embedded memory in place', async () => {
    const m = fx.manager({ exactThreshold: 10 });
    await m.warm('big');
    const moved = randomUnitVectors(1, DIMS, 44)[0]!;
    fx.store.write([normalizeMemory({ namespace: 'big', id: 'm7', text: 'rewritten' }, T0)]);
    const [p] = fx.store.embeddings.pending(fx.space.id, 10);
    const stored = fx.store.embeddings.put(fx.space, [{ memory: p!, vector: moved }], p!.changeSeq);
    m.apply(stored);
    expect((await okSearch(m, 'big', moved)).candidates[0]?.key).toBe(keys[7]);
    expect(m.status('big').size).toBe(N);
  });

  it('hands out the new vector of a re-embedded memory, whichever process read the old one first', async () => {
    const writer = fx.manager({ exactThreshold: 10 });
    await writer.warm('big');
    const reader = fx.manager({ exactThreshold: 10, role: 'reader' });
    await reader.warm('big');
    // Both read (and cache) the old vector for the page's near-duplicate check.
    for (const m of [writer, reader])
      expect(cosineOf(m.vectorsFor('big', [keys[7]!]).get(keys[7]!)!, vectors[7]!)).toBeCloseTo(1, 5);
    const moved = randomUnitVectors(1, DIMS, 45)[0]!;
    fx.store.write([normalizeMemory({ namespace: 'big', id: 'm7', text: 'rewritten again' }, T0)]);
    const [p] = fx.store.embeddings.pending(fx.space.id, 10);
    writer.apply(fx.store.embeddings.put(fx.space, [{ memory: p!, vector: moved }], p!.changeSeq));
    expect(cosineOf(writer.vectorsFor('big', [keys[7]!]).get(keys[7]!)!, moved)).toBeCloseTo(1, 5);
    // Merged into a new graph, the vector leaves the in-memory delta: it must not come back from the cache.
    await writer.flush();
    expect(cosineOf(writer.vectorsFor('big', [keys[7]!]).get(keys[7]!)!, moved)).toBeCloseTo(1, 5);
    // A reader learns of it on its next refresh, as its graph does.
    reader.refresh();
    expect(cosineOf(reader.vectorsFor('big', [keys[7]!]).get(keys[7]!)!, moved)).toBeCloseTo(1, 5);
    // Keys with no stored vector are left out, cached or not, and so are another namespace's.
    expect([...writer.vectorsFor('big', [keys[3]!, 999_999]).keys()]).toEqual([keys[3]]);
    fx.add('other', randomUnitVectors(3, DIMS, 46));
    await writer.warm('other');
    expect(writer.vectorsFor('other', [keys[3]!]).size).toBe(0);
    await reader.close();
  });

  it('keeps in its cache what a search reads, but not what a keep: false read fetched', async () => {
    const writer = fx.manager({ exactThreshold: 10 });
    await writer.warm('big');
    const reader = fx.manager({ exactThreshold: 10, role: 'reader' });
    await reader.warm('big');
    reader.vectorsFor('big', [keys[5]!]);
    reader.vectorsFor('big', [keys[6]!], { keep: false });
    // Both re-embedded by the writer; the reader has not refreshed, so only its cache can be stale.
    const fresh = randomUnitVectors(2, DIMS, 47);
    fx.store.write([
      normalizeMemory({ namespace: 'big', id: 'm5', text: 'rewritten five' }, T0),
      normalizeMemory({ namespace: 'big', id: 'm6', text: 'rewritten six' }, T0),
    ]);
    // In write order: m5, then m6.
    const [p5, p6] = fx.store.embeddings.pending(fx.space.id, 10);
    writer.apply(
      fx.store.embeddings.put(
        fx.space,
        [
          { memory: p5!, vector: fresh[0]! },
          { memory: p6!, vector: fresh[1]! },
        ],
        p6!.changeSeq,
      ),
    );
    expect(cosineOf(reader.vectorsFor('big', [keys[5]!]).get(keys[5]!)!, vectors[5]!)).toBeCloseTo(1, 5);
    expect(cosineOf(reader.vectorsFor('big', [keys[6]!]).get(keys[6]!)!, fresh[1]!)).toBeCloseTo(1, 5);
    await reader.close();
  });

  it('rebuilds a deleted index file from SQLite embeddings, and logs the rebuild', async () => {
    const m1 = fx.manager({ exactThreshold: 10 });
    await m1.warm('big');
    await m1.close();
    const path = indexFile();
    rmSync(path);
    fx.logs.length = 0;
    fx.builder.builds = 0;

    const m2 = fx.manager({ exactThreshold: 10 });
    const res = await okSearch(m2, 'big', vectors[77]!);
    expect(res.candidates[0]?.key).toBe(keys[77]);
    expect(fx.builder.builds).toBe(1);
    // The rebuild is a new generation: a new file, which the sidecar now names.
    expect(existsSync(indexFile())).toBe(true);
    expect(sidecar()).toMatchObject({ count: N });
    const warn = fx.warnings()[0];
    expect(warn?.msg).toBe('rebuilding vector index: index file missing');
    expect(warn?.data).toMatchObject({ namespace: 'big', space: fx.space.id });
    expect(fx.logs.some((l) => l.level === 'info' && l.msg === 'vector index built')).toBe(true);
  });

  it('with unbuiltSearch "exact", a search over a missing file answers exactly and builds nothing; warm then builds', async () => {
    const m1 = fx.manager({ exactThreshold: 10 });
    await m1.warm('big');
    await m1.close();
    rmSync(indexFile());
    fx.logs.length = 0;
    fx.builder.builds = 0;

    const m2 = fx.manager({ exactThreshold: 10, unbuiltSearch: 'exact' });
    for (const i of [77, 5, 140]) {
      const res = await okSearch(m2, 'big', vectors[i]!);
      expect(res.candidates[0]?.key).toBe(keys[i]);
      expect(res.exact).toBe(true);
    }
    expect(fx.builder.builds).toBe(0);
    expect(indexFiles().filter((f) => f.endsWith('.usearch'))).toEqual([]);
    expect(m2.status('big')).toEqual({ state: 'exact', size: N });
    expect(fx.warnings().map((w) => w.msg)).toEqual(['no usable vector index: index file missing']);
    expect(
      fx.logs.find((l) => l.msg === 'vector index not built: searching the stored vectors exactly')?.data,
    ).toMatchObject({ namespace: 'big', vectors: N });

    // Writes while it stands in (a one-shot search embedding a backlog) do not start the build either:
    // the command's close would wait for it.
    const more = fx.add('big', randomUnitVectors(20, DIMS, 61), () => ({}), 'late');
    m2.apply(more.stored);
    await m2.flush(); // what a closing process waits for: any build under way
    expect(fx.builder.builds).toBe(0);
    expect(indexFiles().filter((f) => f.endsWith('.usearch'))).toEqual([]);
    expect(m2.status('big')).toEqual({ state: 'exact', size: N + 20 });

    // What promises a saved graph (an engine's drain) still gets one.
    await m2.warm('big');
    expect(fx.builder.builds).toBe(1);
    expect(m2.status('big')).toEqual({ state: 'hnsw', size: N + 20 });
    expect(sidecar()).toMatchObject({ count: N + 20 });
    expect((await okSearch(m2, 'big', vectors[77]!)).candidates[0]?.key).toBe(keys[77]);
  });

  // usearch 2.26 aborts the process (std::bad_alloc) or hangs on some damaged files instead of throwing, so
  // these also cover damage that must be caught before usearch reads the file.
  it.each([
    ['truncated to half', (p: string) => truncateSync(p, Math.floor(readFileSync(p).length / 2))],
    ['emptied', (p: string) => truncateSync(p, 0)],
    [
      'overwritten with text of the same size',
      (p: string) => writeFileSync(p, Buffer.alloc(readFileSync(p).length, 'not an index; ')),
    ],
    ['overwritten with a few bytes of text', (p: string) => writeFileSync(p, 'garbage')],
    [
      'stripped of its header',
      (p: string) => {
        const bytes = readFileSync(p);
        bytes.fill(0, 64);
        writeFileSync(p, bytes);
      },
    ],
  ])('rebuilds an index file that was %s, and logs why', async (_what, damage) => {
    const m1 = fx.manager({ exactThreshold: 10 });
    await m1.warm('big');
    await m1.close();
    damage(indexFile());
    fx.logs.length = 0;
    fx.builder.builds = 0;

    const m2 = fx.manager({ exactThreshold: 10 });
    expect((await okSearch(m2, 'big', vectors[9]!)).candidates[0]?.key).toBe(keys[9]);
    expect(fx.builder.builds).toBe(1);
    expect(rebuildWarnings()).toEqual([expect.stringMatching(/^rebuilding vector index: /)]);
    expect(sidecar().count).toBe(N);
  });

  it('rebuilds when the sidecar is missing or unreadable', async () => {
    const m1 = fx.manager({ exactThreshold: 10 });
    await m1.warm('big');
    await m1.close();
    writeFileSync(sidecarPath(), '{ not json');
    fx.logs.length = 0;
    fx.builder.builds = 0;
    const m2 = fx.manager({ exactThreshold: 10 });
    await m2.warm('big');
    expect(fx.builder.builds).toBe(1);
    expect(rebuildWarnings()).toEqual(['rebuilding vector index: sidecar missing or unreadable']);
  });

  it('rebuilds when the sidecar disagrees with the file', async () => {
    const m1 = fx.manager({ exactThreshold: 10 });
    await m1.warm('big');
    await m1.close();
    writeFileSync(sidecarPath(), JSON.stringify({ ...sidecar(), count: N + 1 }));
    fx.logs.length = 0;
    const m2 = fx.manager({ exactThreshold: 10 });
    await m2.warm('big');
    expect(rebuildWarnings()).toEqual([expect.stringMatching(/^rebuilding vector index: /)]);
    expect(fx.builder.builds).toBe(2);
  });

  it('rebuilds when the HNSW parameters changed', async () => {
    const m1 = fx.manager({ exactThreshold: 10 });
    await m1.warm('big');
    await m1.close();
    fx.logs.length = 0;
    fx.builder.builds = 0;
    const m2 = fx.manager({ exactThreshold: 10, hnsw: { connectivity: 8 } });
    expect((await okSearch(m2, 'big', vectors[3]!)).candidates[0]?.key).toBe(keys[3]);
    expect(fx.builder.builds).toBe(1);
    expect(rebuildWarnings()).toEqual(['rebuilding vector index: HNSW parameters changed']);
  });

  it('catches a stale file up from SQLite when more embeddings were added after the flush', async () => {
    const m1 = fx.manager({ exactThreshold: 10 });
    await m1.warm('big');
    await m1.close();
    const saved = sidecar();
    const fresh = randomUnitVectors(20, DIMS, 45);
    const added = fx.add('big', fresh, () => ({}), 'late'); // stored in SQLite, never applied to a manager
    fx.logs.length = 0;
    fx.builder.builds = 0;

    const m2 = fx.manager({ exactThreshold: 10 });
    const res = await okSearch(m2, 'big', fresh[11]!);
    expect(res.candidates[0]?.key).toBe(added.keys[11]);
    expect(m2.status('big')).toEqual({ state: 'hnsw', size: N + 20 });
    expect(fx.builder.builds).toBe(0);
    expect(rebuildWarnings()).toEqual([]);
    // The caught-up index is dirty: flushing brings the file up to date.
    expect(sidecar()).toEqual(saved);
    await m2.flush();
    expect(sidecar()).toMatchObject({
      count: N + 20,
      watermark: Math.max(...added.stored.map((s) => s.writeSeq)),
    });
  });

  it('rebuilds instead of catching up when more than maxCatchUp embeddings are newer than the file', async () => {
    const m1 = fx.manager({ exactThreshold: 10 });
    await m1.warm('big');
    await m1.close();
    const fresh = randomUnitVectors(20, DIMS, 46);
    const added = fx.add('big', fresh, () => ({}), 'late');
    fx.logs.length = 0;
    fx.builder.builds = 0;
    const m2 = fx.manager({ exactThreshold: 10, maxCatchUp: 5 });
    expect((await okSearch(m2, 'big', fresh[0]!)).candidates[0]?.key).toBe(added.keys[0]);
    expect(fx.builder.builds).toBe(1);
    expect(rebuildWarnings()).toEqual([
      'rebuilding vector index: more than 5 vectors newer than the saved file',
    ]);
  });

  it("answers 'unavailable' at once while the index builds when waitForBuild is false", async () => {
    fx.builder.hold();
    const m = fx.manager({ exactThreshold: 10, waitForBuild: false });
    const first = await m.searchVector({ namespace: 'big', vector: vectors[0]!, filters: {}, limit: 5 });
    expect(first.status).toBe('unavailable');
    if (first.status === 'unavailable') expect(first.reason).toMatch(/being built/);
    expect(m.status('big')).toEqual({ state: 'building', size: null });
    const again = await m.searchVector({ namespace: 'big', vector: vectors[0]!, filters: {}, limit: 5 });
    expect(again.status).toBe('unavailable');
    expect(fx.builder.builds).toBe(1);

    fx.builder.open();
    await m.warm('big');
    const res = await okSearch(m, 'big', vectors[0]!);
    expect(res.candidates[0]?.key).toBe(keys[0]);
    expect(res.exact).toBe(false);
  });

  it('waits for a build in progress when waitForBuild is true', async () => {
    fx.builder.hold();
    const m = fx.manager({ exactThreshold: 10, waitForBuild: true });
    const pending = m.searchVector({ namespace: 'big', vector: vectors[1]!, filters: {}, limit: 5 });
    fx.builder.open();
    const res = await pending;
    expect(res.status).toBe('ok');
    if (res.status === 'ok') expect(res.candidates[0]?.key).toBe(keys[1]);
  });

  it('reports a failed build as unavailable and logs it, then recovers on a later search', async () => {
    fx.builder.failNext = 1;
    const m = fx.manager({ exactThreshold: 10 });
    const failed = await m.searchVector({ namespace: 'big', vector: vectors[2]!, filters: {}, limit: 5 });
    expect(failed.status).toBe('unavailable');
    if (failed.status === 'unavailable') expect(failed.reason).toMatch(/simulated build failure/);
    expect(fx.logs.some((l) => l.level === 'error' && l.msg === 'vector index build failed')).toBe(true);
    let res = failed;
    for (let attempt = 0; attempt < 3 && res.status !== 'ok'; attempt++) {
      res = await m.searchVector({ namespace: 'big', vector: vectors[2]!, filters: {}, limit: 5 });
    }
    expect(res.status).toBe('ok');
    expect(fx.builder.builds).toBe(2);
  });

  it('a build reads its vectors where it runs: the calling thread hands it none', async () => {
    const wide = randomUnitVectors(2_500, DIMS, 95);
    const { keys: wideKeys } = fx.add('wide', wide);
    const m = fx.manager({ exactThreshold: 10 });
    await m.warm('wide');
    expect(fx.builder.bufferBytes).toEqual([0]);
    expect(m.status('wide')).toEqual({ state: 'hnsw', size: 2_500 });
    expect(sidecar().watermark).toBe(fx.store.embeddings.maxWriteSeq(fx.space.id, 'wide'));
    expect((await okSearch(m, 'wide', wide[123]!, 1)).candidates[0]?.key).toBe(wideKeys[123]);
  });

  it('builds from the vectors counted at its start, and catches up the ones stored while it reads them', async () => {
    // Vectors stored between the build's reads, as a live reindex's writes are: the build must neither
    // grow its buffers for them (a stall of the serving thread at 100k) nor lose them.
    const base = randomUnitVectors(2_500, DIMS, 91);
    fx.add('big', base);
    const late = randomUnitVectors(40, DIMS, 92);
    const lateKeys: number[] = [];
    const store = fx.store.embeddings;
    // The real store; its reads store 20 more vectors after the 1,000th row they hand out, once.
    const embeddings = Object.create(store) as typeof store;
    // The reads on the calling thread (a store a worker cannot open; see the reader's own test in @cairn/store).
    embeddings.offThreadReader = () => null;
    embeddings.iterate = function* (space, namespace, after) {
      let n = 0;
      for (const e of store.iterate(space, namespace, after)) {
        yield e;
        if (++n === 1_000 && lateKeys.length === 0)
          for (let i = 0; i < 20; i++)
            lateKeys.push(...fx.add('big', [late[i]!], () => ({}), `late${i}-`).keys);
      }
    };
    const m = fx.manager({ exactThreshold: 10, embeddings });
    await m.warm('big');
    expect(lateKeys).toHaveLength(20);
    expect(m.status('big')).toEqual({ state: 'hnsw', size: base.length + lateKeys.length });
    // The graph was built from the 2,500 counted, in buffers of that size; the 20 are in its delta.
    expect(fx.builder.bufferBytes).toEqual([base.length * (8 + DIMS * 4)]);
    for (let i = 0; i < lateKeys.length; i++) {
      const res = await okSearch(m, 'big', late[i]!, 1);
      expect(res.candidates[0]?.key).toBe(lateKeys[i]);
    }
    // Held by the build and its catch-up, not added back by the audit that looks for holes.
    expect(fx.warnings().map((w) => w.msg)).not.toContain('vector index lacked stored vectors; added them');
  });

  it('builds once per key when a vector it already read is stored again while it reads, and one not yet read is deleted', async () => {
    const base = randomUnitVectors(2_500, DIMS, 93);
    const { keys } = fx.add('big', base);
    const store = fx.store.embeddings;
    const fresh = randomUnitVectors(1, DIMS, 94)[0]!;
    // After 1,000 rows: m0 (read) gets a new vector, so it comes again at the end in write order, and the
    // last memory (not read yet) is deleted, so the count taken at the start is not reached before it.
    const embeddings = Object.create(store) as typeof store;
    embeddings.offThreadReader = () => null;
    let done = false;
    embeddings.iterate = function* (space, namespace, after) {
      let n = 0;
      for (const e of store.iterate(space, namespace, after)) {
        yield e;
        if (++n === 1_000 && !done) {
          done = true;
          const m0 = fx.store.db
            .prepare(
              `SELECT key, namespace, kind, title, text, content_hash AS contentHash, change_seq AS changeSeq
               FROM memories WHERE key = ?`,
            )
            .get(keys[0]) as PendingMemory;
          fx.store.embeddings.put(fx.space, [{ memory: m0, vector: fresh }]);
          fx.store.delete('big', `m${base.length - 1}`);
        }
      }
    };
    const m = fx.manager({ exactThreshold: 10, embeddings });
    await m.warm('big');
    // One build, not a failed one ("duplicate keys") and a retry.
    expect(fx.builder.builds).toBe(1);
    expect(fx.logs.filter((l) => l.level === 'error')).toEqual([]);
    expect(m.status('big')).toEqual({ state: 'hnsw', size: base.length - 1 });
    const res = await okSearch(m, 'big', fresh, 1);
    expect(res.candidates[0]).toMatchObject({ key: keys[0] });
    expect(res.candidates[0]!.cosine).toBeCloseTo(1, 5);
  });

  it('promotes an exact namespace that outgrows exactThreshold to HNSW, serving exactly meanwhile', async () => {
    const m = fx.manager({ exactThreshold: 10 });
    const small = randomUnitVectors(8, DIMS, 47);
    const first = fx.add('grow', small);
    await m.warm('grow');
    expect(m.status('grow').state).toBe('exact');
    fx.builder.hold();
    const more = fx.add('grow', randomUnitVectors(6, DIMS, 48), () => ({}), 'more');
    m.apply(more.stored);
    const during = await okSearch(m, 'grow', small[3]!);
    expect(during.exact).toBe(true);
    expect(during.candidates[0]?.key).toBe(first.keys[3]);
    fx.builder.open();
    await m.flush();
    expect(fx.builder.builds).toBe(1);
    expect(m.status('grow')).toEqual({ state: 'hnsw', size: 14 });
    expect((await okSearch(m, 'grow', small[3]!)).exact).toBe(false);
  });

  it('keeps spaces whose names differ only in punctuation in separate index folders', async () => {
    // `org/model` and `org_model` sanitise to the same readable name; the folder's hash keeps them apart.
    const a = new VectorFixture(DIMS, 'org/model');
    const b = new VectorFixture(DIMS, 'org_model');
    try {
      a.add('ns', randomUnitVectors(50, DIMS, 1));
      b.add('ns', randomUnitVectors(50, DIMS, 2));
      const shared = join(fx.dir, 'shared-index');
      const ma = a.manager({ dir: shared, exactThreshold: 10 });
      await ma.warm('ns');
      const mb = b.manager({ dir: shared, exactThreshold: 10 });
      await mb.warm('ns');
      // Each space's first build, in its own folder: neither found the other's file.
      for (const f of [a, b]) {
        expect(f.warnings()).toEqual([]);
        expect(
          f.logs.some((l) => l.level === 'info' && l.msg === 'building vector index: no index saved yet'),
        ).toBe(true);
      }
    } finally {
      await a.cleanup();
      await b.cleanup();
    }
  });
});

describe('VectorIndexManager: ANN recall against exact search', () => {
  it('the HNSW leg finds at least 90% of the exact top 10 (its default graph, i8, ef 64)', async () => {
    const vectors = randomUnitVectors(4_000, DIMS, 21);
    const { keys } = fx.add('ann', vectors);
    const m = fx.manager({ exactThreshold: 100 });
    const exact = new ExactMatrix(DIMS, vectors.length);
    for (const [i, v] of vectors.entries()) exact.upsert(keys[i]!, v);
    const queries = randomUnitVectors(100, DIMS, 22);
    let found = 0;
    for (const q of queries) {
      const want = new Set(exact.search(q, 10).map((h) => h.key));
      const got = (await okSearch(m, 'ann', q, 10)).candidates.map((c) => c.key);
      expect(m.status('ann').state).toBe('hnsw');
      found += got.filter((k) => want.has(k)).length;
    }
    // A bound, not a speed or an exact figure: HNSW is approximate, and usearch's batch insert leaves a few
    // nodes less reachable at random. bench/RESULTS.md has the recall at 100k (bench:peers, HNSW tuning).
    expect(found / (queries.length * 10)).toBeGreaterThanOrEqual(0.9);
  });
});

describe('VectorIndexManager: a deleted cluster', () => {
  it('a query near memories deleted below the rewrite threshold still gets its nearest live ones', async () => {
    const spread = randomUnitVectors(3_000, DIMS, 31);
    fx.add('big', spread);
    const q = randomUnitVectors(1, DIMS, 32)[0]!;
    // 25 near-copies of the query (under 1% of the graph): the graph's whole answer near q, once deleted.
    const noise = randomUnitVectors(25, DIMS, 33);
    const near = noise.map((n) => {
      const v = q.map((x, i) => x + 0.01 * n[i]!);
      const norm = Math.hypot(...v);
      return v.map((x) => x / norm);
    });
    fx.add('big', near, () => ({}), 'near');
    const m = fx.manager({ exactThreshold: 100 });
    await m.warm('big');
    for (let i = 0; i < near.length; i++) fx.store.delete('big', `near${i}`);
    m.forgetDeletes();
    await m.flush();
    for (const manager of [m, fx.manager({ exactThreshold: 100 })]) {
      const got = (await okSearch(manager, 'big', q, 10)).candidates;
      expect(got).toHaveLength(10);
      expect(got.every((c) => c.cosine < 0.99)).toBe(true);
    }
  });
});

describe('VectorIndexManager: filters and liveness', () => {
  const N = 200;
  let vectors: Float32Array[];
  let keys: number[];
  beforeEach(() => {
    vectors = randomUnitVectors(N, DIMS, 11);
    keys = fx.add('ns', vectors, (i) => ({
      kind: i % 2 === 0 ? 'fact' : 'turn',
      tags: i % 50 === 0 ? ['rare'] : [],
      session: `s${i % 4}`,
    })).keys;
  });

  for (const mode of ['exact', 'hnsw'] as const) {
    const threshold = mode === 'exact' ? 10_000 : 10;

    it(`never returns a memory that fails the filters (${mode})`, async () => {
      const m = fx.manager({ exactThreshold: threshold });
      await m.warm('ns');
      expect(m.status('ns').state).toBe(mode);
      const filters = fc.record(
        {
          kinds: fc.subarray(['fact', 'turn', 'summary']),
          sessions: fc.subarray(['s0', 's1', 's2', 's3']),
          tags: fc.subarray(['rare', 'none']),
        },
        { requiredKeys: [] },
      );
      await fc.assert(
        fc.asyncProperty(
          filters,
          fc.integer({ min: 0, max: N - 1 }),
          fc.integer({ min: 1, max: 30 }),
          async (f, qi, limit) => {
            const res = await okSearch(m, 'ns', vectors[qi]!, limit, f);
            const allowed = fx.store.filterKeys(
              'ns',
              res.candidates.map((c) => c.key),
              f,
            );
            expect(allowed.size).toBe(res.candidates.length);
            expect(res.candidates.length).toBeLessThanOrEqual(limit);
            expect(res.candidates.map((c) => c.rank)).toEqual(res.candidates.map((_, i) => i + 1));
            for (let i = 1; i < res.candidates.length; i++) {
              expect(res.candidates[i]!.cosine).toBeLessThanOrEqual(res.candidates[i - 1]!.cosine + 1e-6);
            }
            const matching = fx.store.countMatching('ns', f);
            // Exact mode fills the page; HNSW returns at least min(limit, 10) of the memories that pass.
            if (mode === 'exact') expect(res.candidates.length).toBe(Math.min(limit, matching));
            else expect(res.candidates.length).toBeGreaterThanOrEqual(Math.min(limit, matching, 10));
          },
        ),
        { numRuns: 60 },
      );
    });
  }

  it('answers a very selective filter over HNSW with an exact scan of the allowed set', async () => {
    const m = fx.manager({ exactThreshold: 10 });
    const res = await okSearch(m, 'ns', vectors[1]!, 10, { tags: ['rare'] });
    expect(res.exact).toBe(true);
    const rareKeys = [0, 50, 100, 150].map((i) => keys[i]!);
    const expected = rareKeys
      .map((k, j) => ({ key: k, cosine: cosineOf(vectors[[0, 50, 100, 150][j]!]!, vectors[1]!) }))
      .sort((a, b) => b.cosine - a.cosine);
    expect(res.candidates.map((c) => c.key)).toEqual(expected.map((e) => e.key));
  });

  it('drops superseded and deleted memories, filtered or not', async () => {
    for (const threshold of [10_000, 10]) {
      const m = fx.manager({ exactThreshold: threshold });
      await m.warm('ns');
      fx.store.delete('ns', 'm20');
      fx.store.write([
        normalizeMemory({ namespace: 'ns', id: 'm30-v2', text: 'replacement', supersedes: ['m30'] }, T0),
      ]);
      for (const i of [20, 30]) {
        const filtered = await m.searchVector({
          namespace: 'ns',
          vector: vectors[i]!,
          filters: { kinds: ['fact', 'turn'] },
          limit: 5,
        });
        expect(filtered.status === 'ok' && filtered.candidates.map((c) => c.key)).not.toContain(keys[i]);
        // Unfiltered too: dead keys keep their vectors in the index, and the leg skips them.
        const unfiltered = await okSearch(m, 'ns', vectors[i]!, 5);
        expect(unfiltered.candidates.map((c) => c.key)).not.toContain(keys[i]);
        expect(unfiltered.candidates).toHaveLength(5);
      }
      await m.close();
    }
  });

  it('finds the one live copy of a merged dup storm, however many dead copies share its cosine', async () => {
    const storm = randomUnitVectors(1, DIMS, 99)[0]!;
    const copies = fx.add(
      'storm',
      Array.from({ length: 400 }, () => storm),
      () => ({}),
      's',
    );
    fx.add('storm', randomUnitVectors(200, DIMS, 98), () => ({}), 'o');
    // The newest copy absorbs the other 399, as the consolidation job would.
    fx.store.consolidations.merge(
      copies.keys.slice(0, -1).map((key) => ({ key, byKey: copies.keys.at(-1)!, cosine: 1 })),
    );
    for (const threshold of [10_000, 50]) {
      const m = fx.manager({ exactThreshold: threshold });
      const res = await okSearch(m, 'storm', storm, 5);
      expect(res.candidates[0]!.key).toBe(copies.keys.at(-1));
      expect(res.candidates.filter((c) => copies.keys.includes(c.key))).toHaveLength(1);
      await m.close();
    }
  });
});

describe('VectorIndexManager: namespace isolation', () => {
  it('never returns another namespace’s vectors, in exact or HNSW mode', async () => {
    const shared = randomUnitVectors(60, DIMS, 21);
    const a = fx.add('team/a', shared);
    const b = fx.add('team:b', shared);
    const c = fx.add('team@c', shared.slice(0, 5));
    const m = fx.manager({ exactThreshold: 20 });
    for (const [ns, own] of [
      ['team/a', a.keys],
      ['team:b', b.keys],
      ['team@c', c.keys],
    ] as const) {
      for (const qi of [0, 3, 4]) {
        const res = await okSearch(m, ns, shared[qi]!, 10);
        expect(res.candidates.length).toBeGreaterThan(0);
        for (const cand of res.candidates) expect(own).toContain(cand.key);
        expect(res.candidates[0]?.key).toBe(own[qi]);
      }
    }
    expect(m.status('team/a').state).toBe('hnsw');
    expect(m.status('team@c').state).toBe('exact');
    expect(m.status('nobody')).toEqual({ state: 'unloaded', size: 0 });
    await m.flush();
    // One file per HNSW namespace, with a name that is safe on disk whatever the namespace holds.
    const files = indexFiles().filter((f) => f.endsWith('.usearch'));
    expect(files).toHaveLength(2);
    for (const f of files) expect(f.split(/[\\/]/).at(-1)).toMatch(/^[A-Za-z0-9._-]+\.usearch$/);
  });
});
