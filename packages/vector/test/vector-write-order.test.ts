import { pathToFileURL } from 'node:url';
import { normalizeMemory, type PendingMemory } from '@cairn/core';
import type { StoredEmbedding } from '@cairn/store';
import {
  GRAPH_LOOKUP_TASK_FILE,
  type IndexBuilder,
  type OffThreadRead,
  type VectorIndexManager,
  workerIndexBuilder,
} from '@cairn/vector';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import keysMissingFromFile from '../src/graph-lookup-task.js';
import { AUDIT_RECHECK_MS } from '../src/index-audit.js';
import {
  DIMS,
  randomUnitVectors,
  singleThreadIndexBuilder,
  T0,
  ThreadRunner,
  VectorFixture,
} from './helpers.js';

/**
 * Distributed embed workers finish batches in any order: a batch of older memories (lower change_seq) can
 * be stored after a newer one, for example when its worker was SIGKILLed and BullMQ retried the stalled
 * job 30 s later. Every stored vector must still reach every index, whatever order it was written in.
 */
let fx: VectorFixture;
beforeEach(() => {
  fx = new VectorFixture();
});
afterEach(async () => {
  await fx.cleanup();
});

/** Writes `n` memories and returns them as the embed stage reads them, in change order. */
function writeMemories(namespace: string, n: number): PendingMemory[] {
  fx.store.write(
    Array.from({ length: n }, (_, i) =>
      normalizeMemory({ namespace, id: `m${i}`, text: `${namespace} memory ${i}` }, T0),
    ),
  );
  return fx.store.embeddings.pending(fx.space.id, 100_000).filter((p) => p.namespace === namespace);
}

/** Stores the vectors of `slice` (no cursor: an out-of-order producer never moves it). */
function put(slice: PendingMemory[], vectors: Map<number, Float32Array>): StoredEmbedding[] {
  return fx.store.embeddings.put(
    fx.space,
    slice.map((memory) => ({ memory, vector: vectors.get(memory.key)! })),
  );
}

async function missingFrom(m: VectorIndexManager, namespace: string, vectors: Map<number, Float32Array>) {
  const missing: number[] = [];
  for (const [key, v] of vectors) {
    const res = await m.searchVector({ namespace, vector: v, filters: {}, limit: 1 });
    if (res.status !== 'ok') throw new Error(res.reason);
    if (res.candidates[0]?.key !== key) missing.push(key);
  }
  return missing;
}

/**
 * 120 vectors stored in 'ns', of which a saved graph holds 80 and its catch-up finds 20 more: the other 20
 * are below the file's watermark and not in it (the damage an old ordering left).
 */
/** A look-up's keys, read now where it says which module reads them (see `GraphKeyLookup.keys`). */
async function keysOf(keys: Float64Array | OffThreadRead): Promise<Float64Array> {
  if (keys instanceof Float64Array) return keys;
  const reader = (await import(pathToFileURL(keys.module).href)) as {
    default: (args: Record<string, unknown>) => Float64Array;
  };
  return reader.default(keys.args);
}

async function saveGraphLackingTwenty(builder: {
  builder?: IndexBuilder;
}): Promise<Map<number, Float32Array>> {
  const pending = writeMemories('ns', 120);
  const vectors = new Map(pending.map((p, i) => [p.key, randomUnitVectors(120, DIMS, 9)[i]!]));
  const writer = fx.manager({ exactThreshold: 10, ...builder });
  writer.apply(put(pending.slice(0, 80), vectors));
  await writer.warm('ns');
  await writer.close();
  const lost = put(pending.slice(80, 100), vectors);
  fx.store.db
    .prepare(`UPDATE embeddings SET write_seq = 1 WHERE key IN (${lost.map((l) => l.key).join(',')})`)
    .run();
  put(pending.slice(100), vectors);
  return vectors;
}

describe('VectorIndexManager: vectors stored out of change order', () => {
  for (const mode of ['exact', 'hnsw'] as const) {
    const exactThreshold = mode === 'exact' ? 5_000 : 10;

    it(`a writer applies an older batch stored after a newer one (${mode})`, async () => {
      const pending = writeMemories('ns', 120);
      const vectors = new Map(pending.map((p, i) => [p.key, randomUnitVectors(120, DIMS, 7)[i]!]));
      const m = fx.manager({ exactThreshold });
      // The namespace is loaded with the first 40, then the newest 40 arrive, then the middle 40.
      m.apply(put(pending.slice(0, 40), vectors));
      await m.warm('ns');
      m.apply(put(pending.slice(80), vectors));
      m.apply(put(pending.slice(40, 80), vectors));
      expect(await missingFrom(m, 'ns', vectors)).toEqual([]);
      expect(m.status('ns').size).toBe(120);
      // And so does the next process, from the files and SQLite.
      await m.close();
      const next = fx.manager({ exactThreshold });
      expect(await missingFrom(next, 'ns', vectors)).toEqual([]);
      expect(next.status('ns').size).toBe(120);
    });

    it(`a reader picks up an older batch stored after it caught up with a newer one (${mode})`, async () => {
      const pending = writeMemories('ns', 120);
      const vectors = new Map(pending.map((p, i) => [p.key, randomUnitVectors(120, DIMS, 8)[i]!]));
      const writer = fx.manager({ exactThreshold });
      writer.apply(put(pending.slice(0, 60), vectors));
      await writer.warm('ns');
      await writer.flush();
      const reader = fx.manager({ exactThreshold, role: 'reader' });
      await reader.warm('ns');
      writer.apply(put(pending.slice(100), vectors));
      reader.refresh();
      writer.apply(put(pending.slice(60, 100), vectors));
      await writer.flush();
      reader.refresh();
      expect(await missingFrom(reader, 'ns', vectors)).toEqual([]);
      expect(reader.status('ns').size).toBe(120);
    });
  }

  it('an audit reads the keys again only once a vector was stored or applied since it found the index whole', async () => {
    const pending = writeMemories('ns', 122);
    const vectors = new Map(pending.map((p, i) => [p.key, randomUnitVectors(122, DIMS, 4)[i]!]));
    const m = fx.manager({ exactThreshold: 10 });
    m.apply(put(pending.slice(0, 120), vectors));
    await m.warm('ns');
    await m.flush();
    const embeddings = fx.store.embeddings;
    const original = embeddings.keyPages.bind(embeddings);
    let read = 0;
    const keyPages = vi.spyOn(embeddings, 'keyPages').mockImplementation(function* (...args) {
      for (const page of original(...args)) {
        read += page.length;
        yield page;
      }
    });
    expect(await m.audit()).toBe(0);
    const afterFirst = keyPages.mock.calls.length;
    // Nothing changed: the same check would read every key to the same answer (~1 s at a million).
    expect(await m.audit()).toBe(0);
    expect(keyPages.mock.calls.length).toBe(afterFirst);
    // A vector stored and applied: the next audit reads the keys written since, not all 120.
    m.apply(put(pending.slice(120, 121), vectors));
    read = 0;
    expect(await m.audit()).toBe(0);
    expect(keyPages.mock.calls.length).toBe(afterFirst + 1);
    expect(read).toBe(1);
    expect(await m.audit()).toBe(0);
    expect(keyPages.mock.calls.length).toBe(afterFirst + 1);
    // A vector stored that the index was never given (as if its write were lost): read, and added.
    put(pending.slice(121), vectors);
    read = 0;
    expect(await m.audit()).toBe(1);
    expect(keyPages.mock.calls.length).toBe(afterFirst + 2);
    expect(read).toBe(1);
    expect(await missingFrom(m, 'ns', vectors)).toEqual([]);
    // A merge maps a new graph file: the next check reads every key again.
    await m.flush();
    read = 0;
    expect(await m.audit()).toBe(0);
    expect(read).toBe(122);
    // So does the full check every AUDIT_RECHECK_MS, for damage no write_seq records.
    const now = Date.now();
    const clock = vi.spyOn(Date, 'now').mockReturnValue(now + AUDIT_RECHECK_MS + 1);
    try {
      m.apply(put(pending.slice(0, 1), vectors));
      read = 0;
      expect(await m.audit()).toBe(0);
      expect(read).toBe(122);
    } finally {
      clock.mockRestore();
    }
  });

  it('a key reader that fails costs one warning: later audits read the keys here and still look them up on the pool', async () => {
    const vectors = await saveGraphLackingTwenty({});
    const runner = new ThreadRunner();
    const embeddings = fx.store.embeddings;
    const reader = vi.spyOn(embeddings, 'offThreadKeyReader').mockReturnValue({
      module: '/nonexistent/namespace-keys-reader.js',
      args: { path: '', spaceId: fx.space.id, namespace: 'ns', afterWriteSeq: -1 },
    });
    const m = fx.manager({
      exactThreshold: 10,
      waitForBuild: false,
      builder: workerIndexBuilder(runner),
      auditOnLoad: false,
    });
    await m.warm('ns');
    expect(await m.audit()).toBe(20);
    expect(await missingFrom(m, 'ns', vectors)).toEqual([]);
    const failed = () => fx.warnings().filter((w) => w.msg.startsWith('index audit look-up failed'));
    expect(failed()).toHaveLength(1);
    // A merge maps a new file: the next audit checks every key again, read here, looked up on the pool.
    await m.flush();
    const keyPages = vi.spyOn(embeddings, 'keyPages');
    const lookups = runner.files.length;
    expect(await m.audit()).toBe(0);
    expect(keyPages).toHaveBeenCalled();
    expect(runner.files.slice(lookups)).toContain(GRAPH_LOOKUP_TASK_FILE);
    expect(failed()).toHaveLength(1);
    expect(reader).toHaveBeenCalledTimes(1);
  });

  it('an audit of the few keys written since a whole check looks them up in the mapped graph, not in the file on the pool', async () => {
    const pending = writeMemories('ns', 124);
    const vectors = new Map(pending.map((p, i) => [p.key, randomUnitVectors(124, DIMS, 5)[i]!]));
    const runner = new ThreadRunner();
    const m = fx.manager({ exactThreshold: 10, builder: workerIndexBuilder(runner), auditOnLoad: false });
    m.apply(put(pending.slice(0, 120), vectors));
    await m.warm('ns');
    await m.flush();
    const lookups = () => runner.files.filter((f) => f === GRAPH_LOOKUP_TASK_FILE).length;
    // The whole check: every key, read and looked up in the graph file on a worker thread.
    expect(await m.audit()).toBe(0);
    expect(lookups()).toBe(1);
    // Written since: one vector applied, and three stored that the index was never given (a lost write).
    m.apply(put(pending.slice(120, 121), vectors));
    put(pending.slice(121), vectors);
    expect(await m.audit()).toBe(3);
    // Four keys: looked up here, in the graph this manager maps, rather than by mapping the file again.
    expect(lookups()).toBe(1);
    expect(await missingFrom(m, 'ns', vectors)).toEqual([]);
  });

  for (const where of ['on the serving thread', 'in the file, on a worker thread'] as const)
    it(`an audit adds the vectors a saved graph lacks (a file from a version that dropped them), looked up ${where}`, async () => {
      const runner = where === 'on the serving thread' ? null : new ThreadRunner();
      const builder = runner ? { builder: workerIndexBuilder(runner) } : {};
      const vectors = await saveGraphLackingTwenty(builder);
      const next = fx.manager({ exactThreshold: 10, waitForBuild: false, ...builder });
      const keyPages = vi.spyOn(fx.store.embeddings, 'keyPages');
      // Stats tell the truth before anything is loaded: the file plus what a load catches up, not 120.
      expect(next.status('ns')).toEqual({ state: 'unloaded', size: 100 });
      await next.warm('ns');
      // The audit that follows a load from a file runs in the background, a chunk per turn.
      for (let i = 0; i < 200 && next.status('ns').size !== 120; i++)
        await new Promise((r) => setTimeout(r, 10));
      expect(await missingFrom(next, 'ns', vectors)).toEqual([]);
      expect(next.status('ns').size).toBe(120);
      expect(fx.warnings().some((w) => w.msg === 'vector index lacked stored vectors; added them')).toBe(
        true,
      );
      // Off the thread: every stored key was read and looked up in the file by the task, none here.
      if (runner) expect(runner.files).toContain(GRAPH_LOOKUP_TASK_FILE);
      if (runner) expect(keyPages).not.toHaveBeenCalled();
      else expect(keyPages).toHaveBeenCalled();
      // The repair is saved with the next generation, and a clean index audits to nothing.
      await next.flush();
      expect(await next.audit()).toBe(0);
      const after = fx.manager({ exactThreshold: 10 });
      expect(after.status('ns')).toEqual({ state: 'unloaded', size: 120 });
    });
  it('a close merges the vectors an audit put back, which no load would catch up, however few', async () => {
    // A graph of 2,600 lacking 5 stored below its watermark, and 3 stored after it: the 8 are under the
    // 2,600 / 256 a close may leave to the next load, but that load reads only what is newer than the file.
    const pending = writeMemories('ns', 2_608);
    const all = randomUnitVectors(2_608, DIMS, 19);
    const vectors = new Map(pending.map((p, i) => [p.key, all[i]!]));
    const writer = fx.manager({ exactThreshold: 10 });
    writer.apply(put(pending.slice(0, 2_600), vectors));
    await writer.warm('ns');
    await writer.close();
    const lost = put(pending.slice(2_600, 2_605), vectors);
    fx.store.db
      .prepare(`UPDATE embeddings SET write_seq = 1 WHERE key IN (${lost.map((l) => l.key).join(',')})`)
      .run();
    put(pending.slice(2_605), vectors);
    const m = fx.manager({ exactThreshold: 10, auditOnLoad: false });
    await m.warm('ns');
    expect(await m.audit()).toBe(5);
    await m.close();
    // A one-shot reader audits nothing: it finds all 2,608 only if the 5 reached the file.
    const reader = fx.manager({ exactThreshold: 10, role: 'reader', auditOnLoad: false });
    expect(await missingFrom(reader, 'ns', vectors)).toEqual([]);
    await reader.close();
  });
  it('an audit counts what it added: memories deleted while their keys were looked up are not', async () => {
    await saveGraphLackingTwenty({});
    let release!: () => void;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    let lookups = 0;
    const builder: IndexBuilder = {
      build: (req) => singleThreadIndexBuilder.build(req),
      keysMissingFromFile: async (req) => {
        // The keys are read before the deletes (where the task reads them itself, it would read them after).
        const keys = await keysOf(req.keys);
        lookups++;
        await gate;
        return keysMissingFromFile({ ...req, keys });
      },
    };
    const m = fx.manager({ exactThreshold: 10, waitForBuild: false, builder, auditOnLoad: false });
    await m.warm('ns');
    const audit = m.audit();
    for (let i = 0; i < 200 && lookups === 0; i++) await new Promise((r) => setTimeout(r, 5));
    // Five of the twenty the file lacks (m80 … m99) are deleted while their keys are looked up.
    for (let i = 80; i < 85; i++) expect(fx.store.delete('ns', `m${i}`)).toBe(true);
    release();
    expect(await audit).toBe(15);
    const repaired = fx.warnings().filter((w) => w.msg === 'vector index lacked stored vectors; added them');
    expect(repaired.map((w) => w.data?.added)).toEqual([15]);
  });

  it('an audit of an index the manager let go of meanwhile ends quietly, its graph file deleted or not', async () => {
    // `cairn ingest` warned "vector index audit failed: ENOENT": the audit after its graph's load looked
    // keys up in the file on a pool thread while the close merged the delta and deleted that file.
    const saved = fx.manager({ exactThreshold: 10 });
    saved.apply(fx.add('ns', randomUnitVectors(60, DIMS, 90)).stored);
    await saved.warm('ns');
    await saved.close();
    let release!: () => void;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    let lookups = 0;
    const builder: IndexBuilder = {
      build: (req) => singleThreadIndexBuilder.build(req),
      keysMissingFromFile: async (req) => {
        lookups++;
        await gate;
        return keysMissingFromFile(req);
      },
    };
    const m = fx.manager({ exactThreshold: 10, waitForBuild: false, builder });
    await m.warm('ns');
    for (let i = 0; i < 200 && lookups === 0; i++) await new Promise((r) => setTimeout(r, 5));
    expect(lookups).toBe(1);
    // New vectors: the close merges them into the next generation and deletes the file being looked in.
    m.apply(fx.add('ns', randomUnitVectors(5, DIMS, 91), () => ({}), 'n').stored);
    await m.close();
    release();
    for (let i = 0; i < 20; i++) await new Promise((r) => setTimeout(r, 5));
    expect(fx.warnings().map((w) => w.msg)).not.toContain('vector index audit failed');
  });

  it('a process that turns auditOnLoad off maps a graph without auditing it, and can still audit on demand', async () => {
    const runner = new ThreadRunner();
    const vectors = await saveGraphLackingTwenty({ builder: workerIndexBuilder(runner) });
    const oneShot = fx.manager({
      exactThreshold: 10,
      waitForBuild: false,
      auditOnLoad: false,
      builder: workerIndexBuilder(runner),
    });
    await oneShot.warm('ns');
    // Long enough for the background audit the default runs (the test above waits for it the same way).
    for (let i = 0; i < 30; i++) await new Promise((r) => setTimeout(r, 10));
    expect(oneShot.status('ns').size).toBe(100);
    expect(runner.files).not.toContain(GRAPH_LOOKUP_TASK_FILE);
    expect((await missingFrom(oneShot, 'ns', vectors)).length).toBe(20);
    expect(await oneShot.audit()).toBe(20);
    expect(await missingFrom(oneShot, 'ns', vectors)).toEqual([]);
  });
});
