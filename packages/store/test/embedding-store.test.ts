import { spawn } from 'node:child_process';
import { pathToFileURL } from 'node:url';
import { embeddingSpaceOf, type PendingMemory } from '@cairn/core';
import { blobToVector, vectorToBlob } from '@cairn/store';
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { cairnErrorFrom, mem, openTempStore, rawRow, type TempStore } from './helpers.js';

let t: TempStore;
beforeEach(() => {
  t = openTempStore('cairn-embeddings-');
});
afterEach(() => {
  t.cleanup();
});

const space = embeddingSpaceOf({ modelId: 'test-model', dimensions: 4 });
const vec = (...xs: number[]) => new Float32Array(xs);

/** Embeds pending memories with vector [key, 0, 0, 1] and returns what `put` stored. */
function embedAll(items: PendingMemory[] = t.store.embeddings.pending(space.id, 1000)) {
  return t.store.embeddings.put(
    space,
    items.map((memory) => ({ memory, vector: vec(memory.key, 0, 0, 1) })),
    Math.max(0, ...items.map((m) => m.changeSeq)),
  );
}

/**
 * Another process inserts `s` as the active space and holds its transaction open 400 ms: resolves once it
 * holds it, with that process's exit code to come.
 */
async function holdInsertOfSpace(path: string, s: { id: string; modelId: string; dimensions: number }) {
  const storeDist = new URL('../dist/index.js', import.meta.url).href;
  const script = `const { openDatabase } = await import(${JSON.stringify(storeDist)});
    const db = openDatabase(${JSON.stringify(path)});
    db.exec('BEGIN IMMEDIATE');
    db.prepare("INSERT INTO embedding_spaces (id, model_id, dimensions, created_at, active, state, storage) VALUES (?, ?, ?, 1, 1, 'ready', 'f32')").run(${JSON.stringify(s.id)}, ${JSON.stringify(s.modelId)}, ${s.dimensions});
    process.stdout.write('held\\n');
    const until = Date.now() + 400;
    while (Date.now() < until) {}
    db.exec('COMMIT');
    db.close();`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let err = '';
  child.stderr!.on('data', (d) => {
    err += d;
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (d) => String(d).includes('held') && resolve());
    child.on('exit', () => reject(new Error(`the other process exited before holding its write: ${err}`)));
  });
  // Wrapped: an async function returning the promise itself would wait for it.
  return { exited };
}

describe('EmbeddingStore: spaces', () => {
  it('registers a space idempotently and makes the first one active', () => {
    const a = t.store.spaces.ensureSpace(space);
    expect(a).toMatchObject({ id: 'test-model/4', dimensions: 4, active: true, cursor: 0 });
    expect(t.store.spaces.ensureSpace(space)).toEqual(a);
    const b = t.store.spaces.ensureSpace(embeddingSpaceOf({ modelId: 'other', dimensions: 8 }));
    expect(b.active).toBe(false);
    expect(t.store.spaces.activeSpace()?.id).toBe(space.id);
    expect(t.store.spaces.listSpaces().map((s) => s.id)).toEqual([space.id, 'other/8']);
  });

  it('registers a space another process is inserting at that moment once, without a UNIQUE failure', async () => {
    // Hooks finishing together each open a new folder and register its space: the other process's row was
    // still uncommitted when this one looked, so a read-then-insert inserted it a second time.
    const { exited } = await holdInsertOfSpace(t.path, space);
    const registered = t.store.spaces.ensureSpace(space);
    expect(await exited).toBe(0);
    expect(registered).toMatchObject({ id: space.id, active: true, state: 'ready' });
    expect(t.store.spaces.listSpaces().map((s) => s.id)).toEqual([space.id]);
  });

  it("a new folder's first space is the first registered: another process's, committed while this one looked", async () => {
    // Processes opening a new folder with different embedders each saw no active space and registered
    // their own; the later ones became inactive spaces to build, which a writer reindexed into unasked.
    const theirs = embeddingSpaceOf({ modelId: 'their-model', dimensions: 8 });
    const { exited } = await holdInsertOfSpace(t.path, theirs);
    expect(t.store.spaces.activeSpace()).toBeUndefined();
    const active = t.store.spaces.ensureActiveSpace(space);
    expect(await exited).toBe(0);
    expect(active).toMatchObject({ id: theirs.id, active: true });
    expect(t.store.spaces.listSpaces().map((s) => s.id)).toEqual([theirs.id]);
    // On a folder with none, it registers the one given, active.
    const fresh = openTempStore('cairn-embeddings-');
    try {
      expect(fresh.store.spaces.ensureActiveSpace(space)).toMatchObject({
        id: space.id,
        active: true,
        state: 'ready',
      });
    } finally {
      fresh.cleanup();
    }
  });

  it('refuses to re-register a space id with other dimensions', () => {
    t.store.spaces.ensureSpace(space);
    const err = cairnErrorFrom(() => t.store.spaces.ensureSpace({ ...space, dimensions: 5 }));
    expect(err.code).toBe('DIMENSION_MISMATCH');
  });
});

describe('EmbeddingStore: pending and put', () => {
  beforeEach(() => {
    t.store.spaces.ensureSpace(space);
  });

  it('lists memories changed after the cursor, oldest change first, up to the limit', () => {
    t.store.write([
      mem({ id: 'a', text: 'one' }),
      mem({ id: 'b', text: 'two' }),
      mem({ id: 'c', text: 'three' }),
    ]);
    const pending = t.store.embeddings.pending(space.id, 10);
    expect(pending.map((p) => p.text)).toEqual(['one', 'two', 'three']);
    expect(pending.map((p) => p.changeSeq)).toEqual(
      [...pending.map((p) => p.changeSeq)].sort((x, y) => x - y),
    );
    expect(t.store.embeddings.pending(space.id, 2)).toHaveLength(2);
  });

  it('advances the cursor on put so stored memories are no longer pending', () => {
    t.store.write([mem({ id: 'a', text: 'one' }), mem({ id: 'b', text: 'two' })]);
    const pending = t.store.embeddings.pending(space.id, 10);
    const stored = embedAll(pending);
    expect(stored.map((s) => s.key)).toEqual(pending.map((p) => p.key));
    expect(t.store.spaces.getSpace(space.id)?.cursor).toBe(pending.at(-1)!.changeSeq);
    expect(t.store.embeddings.pending(space.id, 10)).toEqual([]);
    expect(t.store.embeddings.count(space.id, 'ns')).toBe(2);
  });

  it('never moves the cursor backwards', () => {
    t.store.write([mem({ id: 'a', text: 'one' })]);
    embedAll();
    const cursor = t.store.spaces.getSpace(space.id)!.cursor;
    t.store.embeddings.put(space, [], 0);
    expect(t.store.spaces.getSpace(space.id)?.cursor).toBe(cursor);
  });

  it('resumes from the cursor in batches', () => {
    t.store.write(Array.from({ length: 7 }, (_, i) => mem({ id: `m${i}`, text: `text ${i}` })));
    let batches = 0;
    for (;;) {
      const batch = t.store.embeddings.pending(space.id, 3);
      if (batch.length === 0) break;
      embedAll(batch);
      batches++;
    }
    expect(batches).toBe(3);
    expect(t.store.embeddings.count(space.id, 'ns')).toBe(7);
  });

  it('counts up to a limit only, whatever number the limit is', () => {
    t.store.write(Array.from({ length: 7 }, (_, i) => mem({ id: `m${i}`, text: `text ${i}` })));
    embedAll(t.store.embeddings.pending(space.id, 10));
    const upTo = (limit: number) => t.store.embeddings.countUpTo(space.id, 'ns', limit);
    expect([upTo(0), upTo(3), upTo(7), upTo(100), upTo(2.5), upTo(Number.POSITIVE_INFINITY)]).toEqual([
      0, 3, 7, 7, 3, 7,
    ]);
    // Past 2^53 (an exact threshold of Number.MAX_SAFE_INTEGER, plus one): it counted forever before.
    expect([upTo(Number.MAX_SAFE_INTEGER + 1), upTo(2 ** 60)]).toEqual([7, 7]);
    expect(t.store.embeddings.countUpTo(space.id, 'other', 5)).toBe(0);
  });

  it('skips a memory whose change_seq moved since it was read, leaving its new text pending', () => {
    t.store.write([mem({ id: 'a', text: 'first draft' }), mem({ id: 'b', text: 'stable' })]);
    const stale = t.store.embeddings.pending(space.id, 10);
    t.store.write([mem({ id: 'a', text: 'second draft' })]);
    const stored = embedAll(stale);
    expect(stored.map((s) => s.key)).toEqual([rawRow(t.store, 'ns', 'b').key]);
    const still = t.store.embeddings.pending(space.id, 10);
    expect(still.map((p) => p.text)).toEqual(['second draft']);
    expect(t.store.embeddings.byKeys(space.id, 'ns', [rawRow(t.store, 'ns', 'a').key]).size).toBe(0);
  });

  it('skips a memory deleted since it was read: no vector for it, counted or returned to index', () => {
    t.store.write([mem({ id: 'a', text: 'to be deleted' }), mem({ id: 'b', text: 'kept' })]);
    const read = t.store.embeddings.pending(space.id, 10);
    t.store.delete('ns', 'a');
    const stored = embedAll(read);
    expect(stored.map((s) => s.key)).toEqual([rawRow(t.store, 'ns', 'b').key]);
    expect(t.store.embeddings.count(space.id, 'ns')).toBe(1);
    expect(t.store.embeddings.currentCount(space.id, 'ns')).toBe(1);
    expect(t.store.embeddings.pending(space.id, 10)).toEqual([]);
  });

  it('replaces a memory’s vector when its new text is embedded', () => {
    t.store.write([mem({ id: 'a', text: 'v1' })]);
    embedAll();
    t.store.write([mem({ id: 'a', text: 'v2' })]);
    const before = t.store.embeddings.maxWriteSeq(space.id, 'ns');
    const [p] = t.store.embeddings.pending(space.id, 10);
    const [stored] = t.store.embeddings.put(space, [{ memory: p!, vector: vec(9, 9, 9, 9) }], p!.changeSeq);
    expect([...t.store.embeddings.byKeys(space.id, 'ns', [p!.key]).get(p!.key)!]).toEqual([9, 9, 9, 9]);
    expect(t.store.embeddings.count(space.id, 'ns')).toBe(1);
    expect(stored!.writeSeq).toBeGreaterThan(before);
    expect(t.store.embeddings.maxWriteSeq(space.id, 'ns')).toBe(stored!.writeSeq);
  });

  it('refuses a vector of the wrong length and stores nothing of the batch', () => {
    t.store.write([mem({ id: 'a', text: 'one' }), mem({ id: 'b', text: 'two' })]);
    const [a, b] = t.store.embeddings.pending(space.id, 10);
    const err = cairnErrorFrom(() =>
      t.store.embeddings.put(
        space,
        [
          { memory: a!, vector: vec(1, 0, 0, 0) },
          { memory: b!, vector: vec(1, 0, 0) },
        ],
        b!.changeSeq,
      ),
    );
    expect(err.code).toBe('DIMENSION_MISMATCH');
    expect(t.store.embeddings.count(space.id, 'ns')).toBe(0);
    expect(t.store.spaces.getSpace(space.id)?.cursor).toBe(0);
  });

  it('does not list deleted memories as pending and drops their vectors', () => {
    t.store.write([mem({ id: 'a', text: 'one' }), mem({ id: 'b', text: 'two' })]);
    embedAll();
    t.store.delete('ns', 'a');
    expect(t.store.embeddings.count(space.id, 'ns')).toBe(1);
    t.store.write([mem({ id: 'c', text: 'three' })]);
    t.store.delete('ns', 'c');
    expect(t.store.embeddings.pending(space.id, 10)).toEqual([]);
  });

  it('records failures, moves past them, and clears them once embedded', () => {
    t.store.write([mem({ id: 'a', text: 'unembeddable' })]);
    const [p] = t.store.embeddings.pending(space.id, 10);
    t.store.embeddings.recordFailures(space.id, [{ key: p!.key, error: 'model refused' }], p!.changeSeq);
    expect(t.store.embeddings.failures(space.id, 'ns')).toBe(1);
    expect(t.store.embeddings.pending(space.id, 10)).toEqual([]);
    t.store.embeddings.put(space, [{ memory: p!, vector: vec(1, 1, 1, 1) }], p!.changeSeq);
    expect(t.store.embeddings.failures(space.id, 'ns')).toBe(0);
  });
});

describe('EmbeddingStore: reading vectors', () => {
  beforeEach(() => {
    t.store.spaces.ensureSpace(space);
  });

  it('reuses a vector for the same content hash, whatever the namespace', () => {
    t.store.write([mem({ id: 'a', text: 'the same words' })]);
    const [p] = t.store.embeddings.pending(space.id, 10);
    t.store.embeddings.put(space, [{ memory: p!, vector: vec(0.5, 0.5, 0.5, 0.5) }], p!.changeSeq);
    const other = t.store.write([mem({ namespace: 'elsewhere', id: 'z', text: 'the same words' })]);
    const [q] = t.store.embeddings.pending(space.id, 10);
    expect(q?.key).toBe(other[0]!.key);
    expect(q?.contentHash).toBe(p!.contentHash);
    const hits = t.store.embeddings.vectorsByContentHash(space, [
      q!.contentHash,
      'no-such-hash',
      q!.contentHash,
    ]);
    expect([...hits.keys()]).toEqual([q!.contentHash]);
    expect([...hits.get(q!.contentHash)!]).toEqual([0.5, 0.5, 0.5, 0.5]);
    expect(
      t.store.embeddings.vectorsByContentHash({ ...space, id: 'unknown/4' }, [q!.contentHash]).size,
    ).toBe(0);
  });

  it('reads one vector per content hash, however many memories share it (a dup storm stays linear)', () => {
    t.store.write(Array.from({ length: 300 }, (_, i) => mem({ id: `d${i}`, text: 'heartbeat ok' })));
    embedAll();
    expect(t.store.embeddings.pending(space.id, 1)).toEqual([]);
    const h = t.store.db.prepare("SELECT content_hash FROM memories WHERE id = 'd0'").pluck().get() as string;
    expect(t.store.db.prepare('SELECT count(*) FROM embeddings WHERE content_hash = ?').pluck().get(h)).toBe(
      300,
    );
    const got = t.store.embeddings.vectorsByContentHash(space, [h, h]);
    expect([...got.keys()]).toEqual([h]);
    // How fast this is (one row read per hash, not 300) is measured through `cairn ingest` of a dup-storm
    // file: bench/RESULTS.md, "Dup storm".
  });

  it('reads a page of vectors by probing (space, key), never by walking the namespace', () => {
    t.store.write([
      mem({ id: 'a', text: '1' }),
      mem({ id: 'b', text: '2' }),
      mem({ namespace: 'x', id: 'c', text: '3' }),
    ]);
    embedAll();
    const [a, b, c] = [
      rawRow(t.store, 'ns', 'a').key,
      rawRow(t.store, 'ns', 'b').key,
      rawRow(t.store, 'x', 'c').key,
    ];
    const got = t.store.embeddings.byKeys(space.id, 'ns', [a, b, c]);
    // c is in another namespace: never returned.
    expect([...got.keys()].sort()).toEqual([a, b].sort());
    // The plan SQLite picks for the statement: by (space, key), whatever the namespace's size. Walking
    // the (space, namespace, write_seq) index instead cost ~25 ms a search at 100k memories.
    const stmt = (t.store.embeddings as unknown as { byKeysStmt: { source: string } }).byKeysStmt;
    const plan = t.store.db.prepare(`EXPLAIN QUERY PLAN ${stmt.source}`).all(space.id, 'ns', '[1]') as Array<{
      detail: string;
    }>;
    expect(plan.map((r) => r.detail).join(' ')).toContain('(space=? AND key=?)');
  });

  it("lists a namespace's vector keys from an index alone, never from the rows that hold the vectors", () => {
    t.store.write([
      mem({ id: 'a', text: '1' }),
      mem({ id: 'b', text: '2' }),
      mem({ namespace: 'x', id: 'c', text: '3' }),
    ]);
    embedAll();
    const keys = [...t.store.embeddings.keyPages(space.id, 'ns')].flat().sort((x, y) => x - y);
    expect(keys).toEqual(
      [rawRow(t.store, 'ns', 'a').key, rawRow(t.store, 'ns', 'b').key].sort((x, y) => x - y),
    );
    // The index audit reads every key of a namespace on the serving thread: a row lookup per key read
    // every vector's page (110 ms at 100k), the covering index ~10 ms (migration 19).
    const plan = t.store.db
      .prepare(
        `EXPLAIN QUERY PLAN SELECT key FROM embeddings WHERE space = ? AND namespace = ? AND write_seq > ?
         ORDER BY write_seq LIMIT ?`,
      )
      .all(space.id, 'ns', 0, 10) as Array<{ detail: string }>;
    expect(plan.map((r) => r.detail).join(' ')).toContain('COVERING INDEX');
  });

  it("pages a namespace's keys in write order, each page read when asked: a key re-embedded between pages comes again, none is skipped", () => {
    const written = t.store.write(
      Array.from({ length: 7 }, (_, i) => mem({ id: `m${i}`, text: `text ${i}` })),
    );
    t.store.write([mem({ namespace: 'x', id: 'other', text: 'elsewhere' })]);
    embedAll();
    const pages = t.store.embeddings.keyPages(space.id, 'ns', 3);
    const first = pages.next();
    expect(first.value).toHaveLength(3);
    // Re-embed one key already read and one not yet read: both move to the end of write order.
    const [early, late] = [written[0]!, written[5]!];
    t.store.write([mem({ id: 'm0', text: 'text 0, edited' }), mem({ id: 'm5', text: 'text 5, edited' })]);
    expect(embedAll().map((e) => e.key)).toEqual([early.key, late.key]);
    const rest = [...pages].flat();
    const all = [...(first.value as number[]), ...rest];
    expect(new Set(all)).toEqual(new Set(written.map((w) => w.key)));
    expect(all.filter((k) => k === early.key)).toHaveLength(2);
    expect(all.filter((k) => k === late.key)).toHaveLength(1);
  });

  it('iterates a namespace in write order, after a given write_seq', () => {
    t.store.write([
      mem({ id: 'a', text: '1' }),
      mem({ id: 'b', text: '2' }),
      mem({ namespace: 'x', id: 'c', text: '3' }),
    ]);
    embedAll();
    const all = [...t.store.embeddings.iterate(space.id, 'ns')];
    expect(all.map((e) => e.key)).toEqual([rawRow(t.store, 'ns', 'a').key, rawRow(t.store, 'ns', 'b').key]);
    expect(all.every((e) => e.namespace === 'ns')).toBe(true);
    expect([...t.store.embeddings.iterate(space.id, 'ns', all[0]!.writeSeq)].map((e) => e.key)).toEqual([
      all[1]!.key,
    ]);
    expect([...all[0]!.vector]).toEqual([all[0]!.key, 0, 0, 1]);
  });

  it('a worker reads a namespace in write order with its own connection: the newest vector of each key, up to a limit', async () => {
    t.store.write(Array.from({ length: 2_500 }, (_, i) => mem({ id: `m${i}`, text: `text ${i}` })));
    t.store.write([mem({ namespace: 'x', id: 'other', text: 'another namespace' })]);
    embedAll(t.store.embeddings.pending(space.id, 5_000));
    // m0 is written again and re-embedded: its new vector comes last in write order.
    t.store.write([mem({ id: 'm0', text: 'text 0, rewritten' })]);
    const [again] = t.store.embeddings.pending(space.id, 10);
    const [last] = t.store.embeddings.put(space, [{ memory: again!, vector: vec(9, 9, 9, 9) }]);
    const all = [...t.store.embeddings.iterate(space.id, 'ns')];
    const reader = t.store.embeddings.offThreadReader(space.id, 'ns')!;
    const read = (await import(pathToFileURL(reader.module).href)).default as (args: object) => {
      keys: BigUint64Array;
      vectors: Float32Array;
      watermark: number;
    };
    const whole = read({ ...reader.args, limit: 2_500, dimensions: 4 });
    expect(whole.keys).toHaveLength(2_500);
    expect(new Set(whole.keys).size).toBe(2_500);
    expect([...whole.keys].map(Number)).toEqual(all.map((e) => e.key));
    // m0's row holds its newest vector, last in write order.
    expect(Number(whole.keys[2_499])).toBe(rawRow(t.store, 'ns', 'm0').key);
    expect([...whole.vectors.subarray(2_499 * 4)]).toEqual([9, 9, 9, 9]);
    expect(whole.watermark).toBe(last!.writeSeq);
    // Counted at the start of a build: it stops there, and says how far it read.
    const part = read({ ...reader.args, limit: 1_000, dimensions: 4 });
    expect([...part.keys].map(Number)).toEqual(all.slice(0, 1_000).map((e) => e.key));
    expect(part.watermark).toBe(all[999]!.writeSeq);
  });

  it("a worker reads a namespace's vector keys with its own connection, as keyPages pages them, past pages and after a write_seq", async () => {
    t.store.write(Array.from({ length: 12_001 }, (_, i) => mem({ id: `m${i}`, text: `text ${i}` })));
    t.store.write([mem({ namespace: 'x', id: 'other', text: 'another namespace' })]);
    embedAll(t.store.embeddings.pending(space.id, 20_000));
    const reader = t.store.embeddings.offThreadKeyReader(space.id, 'ns')!;
    const read = (await import(pathToFileURL(reader.module).href)).default as (args: object) => Float64Array;
    const paged = [...t.store.embeddings.keyPages(space.id, 'ns')].flat();
    const whole = read(reader.args);
    expect(whole).toBeInstanceOf(Float64Array);
    expect([...whole]).toEqual(paged);
    expect(whole).toHaveLength(12_001);
    // Only what was written after a write_seq: an audit of the keys written since its last whole check.
    const all = [...t.store.embeddings.iterate(space.id, 'ns')];
    const since = all[11_990]!.writeSeq;
    const recent = read(t.store.embeddings.offThreadKeyReader(space.id, 'ns', since)!.args);
    expect([...recent]).toEqual(all.slice(11_991).map((e) => e.key));
    expect([...recent]).toEqual([...t.store.embeddings.keyPages(space.id, 'ns', 5_000, since)].flat());
  });

  it('orders vectors by when they were written, not by when their memories changed', () => {
    t.store.write([mem({ id: 'old', text: '1' }), mem({ id: 'new', text: '2' })]);
    const [older, newer] = t.store.embeddings.pending(space.id, 10);
    // The newer memory's vector is stored first, as an out-of-order embed worker does.
    const [first] = t.store.embeddings.put(space, [{ memory: newer!, vector: vec(1, 0, 0, 0) }]);
    const [second] = t.store.embeddings.put(space, [{ memory: older!, vector: vec(0, 1, 0, 0) }]);
    expect(second!.writeSeq).toBeGreaterThan(first!.writeSeq);
    // An index that caught up after the first write finds the second.
    expect([...t.store.embeddings.iterate(space.id, 'ns', first!.writeSeq)].map((e) => e.key)).toEqual([
      older!.key,
    ]);
    // One clock for every namespace (and space).
    t.store.write([mem({ namespace: 'x', id: 'c', text: '3' })]);
    const [c] = t.store.embeddings.pending(space.id, 10);
    const [third] = t.store.embeddings.put(space, [{ memory: c!, vector: vec(0, 0, 1, 0) }]);
    expect(third!.writeSeq).toBe(second!.writeSeq + 1);
    expect([...t.store.embeddings.keyPages(space.id, 'ns')].flat().sort((a, b) => a - b)).toEqual(
      [older!.key, newer!.key].sort((a, b) => a - b),
    );
  });

  it('reads vectors by key within one namespace only', () => {
    const res = t.store.write([mem({ id: 'a', text: '1' }), mem({ namespace: 'x', id: 'b', text: '2' })]);
    embedAll();
    const keys = res.map((r) => r.key);
    expect([...t.store.embeddings.byKeys(space.id, 'ns', keys).keys()]).toEqual([keys[0]]);
    expect(t.store.embeddings.byKeys(space.id, 'ns', []).size).toBe(0);
  });

  it('hands out vectors that own their memory, at offset 0', () => {
    t.store.write(Array.from({ length: 5 }, (_, i) => mem({ id: `m${i}`, text: `t${i}` })));
    embedAll();
    const vectors = [
      ...[...t.store.embeddings.iterate(space.id, 'ns')].map((e) => e.vector),
      ...t.store.embeddings.byKeys(space.id, 'ns', [1, 2, 3]).values(),
    ];
    for (const v of vectors) {
      expect(v.byteOffset).toBe(0);
      expect(v.buffer.byteLength).toBe(v.byteLength);
    }
  });

  it('stores a vector that is a view into a larger buffer by its own bytes', () => {
    t.store.write([mem({ id: 'a', text: 'view' })]);
    const [p] = t.store.embeddings.pending(space.id, 10);
    const pool = new Float32Array([9, 9, 1, 2, 3, 4, 9, 9]);
    const view = pool.subarray(2, 6);
    t.store.embeddings.put(space, [{ memory: p!, vector: view }], p!.changeSeq);
    expect([...t.store.embeddings.byKeys(space.id, 'ns', [p!.key]).get(p!.key)!]).toEqual([1, 2, 3, 4]);
  });
});

describe('blobToVector and vectorToBlob', () => {
  it('copies a Buffer slice of a larger pool into a fresh offset-0 Float32Array', () => {
    const pool = new ArrayBuffer(4096);
    const all = new Float32Array(pool);
    for (let i = 0; i < all.length; i++) all[i] = i;
    const offset = 1000; // bytes: 250 floats in, and deliberately not the start of the pool
    const blob = Buffer.from(pool, offset, 16);
    expect(blob.byteOffset).toBe(offset);
    const v = blobToVector(blob);
    expect([...v]).toEqual([250, 251, 252, 253]);
    expect(v.byteOffset).toBe(0);
    expect(v.buffer).not.toBe(pool);
    expect(v.buffer.byteLength).toBe(16);
  });

  it('copies even when the slice is not 4-byte aligned in the pool', () => {
    const pool = new ArrayBuffer(64);
    const bytes = Buffer.from(vectorToBlob(new Float32Array([1.5, -2.25, 3])));
    new Uint8Array(pool).set(bytes, 7);
    const v = blobToVector(Buffer.from(pool, 7, 12));
    expect([...v]).toEqual([1.5, -2.25, 3]);
    expect(v.byteOffset).toBe(0);
  });

  it('returns an independent copy: later writes to the pool do not change it', () => {
    const pool = new ArrayBuffer(64);
    new Float32Array(pool, 16, 2).set([1, 2]);
    const blob = Buffer.from(pool, 16, 8);
    const v = blobToVector(blob);
    new Float32Array(pool).fill(7);
    expect([...v]).toEqual([1, 2]);
  });

  it('round-trips any vector, including views with a non-zero offset', () => {
    fc.assert(
      fc.property(
        fc.array(fc.float({ noNaN: true }), { minLength: 1, maxLength: 64 }),
        fc.nat({ max: 8 }),
        (xs, pad) => {
          const backing = new Float32Array(xs.length + 2 * pad);
          backing.set(xs, pad);
          const view = backing.subarray(pad, pad + xs.length);
          const blob = vectorToBlob(view);
          expect(blob.byteLength).toBe(xs.length * 4);
          const back = blobToVector(blob);
          expect([...back]).toEqual([...new Float32Array(xs)]);
          expect(back.byteOffset).toBe(0);
        },
      ),
    );
  });
});
