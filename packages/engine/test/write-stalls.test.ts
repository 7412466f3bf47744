import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { embeddingSpaceOf, normalizeMemory } from '@cairn/core';
import { HashingEmbedder } from '@cairn/embed';
import { embedPending } from '@cairn/pipeline';
import { MemoryStore, openDatabase } from '@cairn/store';
import { afterEach, describe, expect, it } from 'vitest';
import { BackgroundCheckpointer } from '../src/background-checkpointer.js';
import { BULK_WRITE_MEMORIES, type EngineOptions } from '../src/engine-options.js';
import { useEngines } from './helpers.js';

// What keeps a writer's serving thread from stalling on its own writes: vectors stored in small
// transactions, and WAL checkpoints on a thread of their own. Real SQLite files, a real worker thread.

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
const tempDir = () => {
  const d = mkdtempSync(join(tmpdir(), 'cairn-stalls-'));
  dirs.push(d);
  return d;
};
const engines = useEngines();

async function eventually(check: () => boolean, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('condition not reached');
    await new Promise((r) => setTimeout(r, 25));
  }
}

const autocheckpoint = (db: { pragma(s: string, o: { simple: true }): unknown }) =>
  db.pragma('wal_autocheckpoint', { simple: true }) as number;

describe('vectors stored in slices', () => {
  function setUp(n: number) {
    const store = new MemoryStore({ path: join(tempDir(), 'cairn.db') });
    store.write(
      Array.from({ length: n }, (_, i) =>
        normalizeMemory({ namespace: 'ns', id: `m${i}`, text: `memory number ${i} about topic ${i % 3}` }),
      ),
    );
    const embedder = new HashingEmbedder({ dimensions: 32 });
    const space = embeddingSpaceOf(embedder);
    store.spaces.ensureSpace(space, { embedder: 'hash:32' });
    return { store, embedder, space };
  }

  it('commits one transaction per slice, each moving the cursor past its own memories only', async () => {
    const { store, embedder, space } = setUp(10);
    const puts: Array<{ items: number; cursor: number | undefined }> = [];
    const sink = Object.assign(Object.create(store.embeddings) as typeof store.embeddings, {
      put: (s: typeof space, items: Parameters<MemoryStore['embeddings']['put']>[1], cursor?: number) => {
        puts.push({ items: items.length, cursor });
        return store.embeddings.put(s, items, cursor);
      },
    });
    const pending = store.embeddings.pending(space.id, 10);
    const r = await embedPending(sink, { apply: () => {} }, embedder, space, 10, 4);
    expect(r.stored).toHaveLength(10);
    expect(puts.map((p) => p.items)).toEqual([4, 4, 2]);
    expect(puts.map((p) => p.cursor)).toEqual([
      pending[3]!.changeSeq,
      pending[7]!.changeSeq,
      pending[9]!.changeSeq,
    ]);
    expect(store.embeddings.count(space.id, 'ns')).toBe(10);
    expect(store.embeddings.pending(space.id, 10)).toEqual([]);
    store.close();
  });

  it('loses nothing when the process stops between two slices: the next pass stores the rest', async () => {
    const { store, embedder, space } = setUp(10);
    let calls = 0;
    // Each slice is its own transaction: a failure at the second leaves what a kill -9 there would.
    const dying = Object.assign(Object.create(store.embeddings) as typeof store.embeddings, {
      put: (s: typeof space, items: Parameters<MemoryStore['embeddings']['put']>[1], cursor?: number) => {
        if (++calls === 2) throw new Error('killed');
        return store.embeddings.put(s, items, cursor);
      },
    });
    await expect(embedPending(dying, { apply: () => {} }, embedder, space, 10, 4)).rejects.toThrow('killed');
    expect(store.embeddings.count(space.id, 'ns')).toBe(4);
    expect(store.embeddings.pending(space.id, 10)).toHaveLength(6);
    const r = await embedPending(store.embeddings, { apply: () => {} }, embedder, space, 10, 4);
    expect(r.stored).toHaveLength(6);
    expect(store.embeddings.count(space.id, 'ns')).toBe(10);
    store.close();
  });
});

describe('BackgroundCheckpointer', () => {
  /** About 6 MB of rows (some 1,500 pages), more than SQLite's inline threshold of 1,000. */
  function writeRows(db: ReturnType<typeof openDatabase>, from: number) {
    const ins = db.prepare('INSERT INTO filler (id, body) VALUES (?, ?)');
    db.transaction(() => {
      for (let i = from; i < from + 1500; i++) ins.run(i, 'x'.repeat(4000));
    })();
  }

  it('copies the log into the database file from its own thread while the writer never checkpoints', async () => {
    const path = join(tempDir(), 'cairn.db');
    const db = openDatabase(path);
    db.exec('CREATE TABLE filler (id INTEGER PRIMARY KEY, body TEXT)');
    db.pragma('wal_checkpoint(TRUNCATE)');
    const logs: string[] = [];
    const cp = new BackgroundCheckpointer(path, db, (_l, msg) => logs.push(msg), 50);
    // Control: with inline checkpoints off and no thread, the pages stay in the log.
    db.pragma('wal_autocheckpoint = 0');
    const before = statSync(path).size;
    writeRows(db, 0);
    expect(statSync(path).size).toBe(before);
    expect(statSync(`${path}-wal`).size).toBeGreaterThan(5_000_000);
    cp.start();
    expect(cp.running).toBe(true);
    expect(autocheckpoint(db)).toBe(0);
    await eventually(() => statSync(path).size > before + 5_000_000);
    writeRows(db, 1500);
    await eventually(() => statSync(path).size > before + 11_000_000);
    await cp.stop();
    expect(cp.running).toBe(false);
    expect(autocheckpoint(db)).toBe(1000);
    expect(db.prepare('SELECT count(*) FROM filler').pluck().get()).toBe(3000);
    expect(logs).toEqual([]);
    db.close();
  });

  it('keeps the log bounded while the writer commits batch after batch (a bulk ingest)', async () => {
    // Passive checkpoints alone rarely end with every frame copied just as the writer begins its next
    // transaction, so the log never restarts: it grew to 4.4 GB in a million-memory `cairn ingest`.
    // 22,000 rows of 4 KB after the first 2,000: ~88 MB through the log.
    const ROWS = 24_000;
    const maxLog = async (restartFrames: number) => {
      const path = join(tempDir(), 'cairn.db');
      const db = openDatabase(path);
      db.exec('CREATE TABLE filler (id INTEGER PRIMARY KEY, body TEXT)');
      const cp = new BackgroundCheckpointer(path, db, () => {}, 10, restartFrames);
      cp.start();
      const ins = db.prepare('INSERT INTO filler (id, body) VALUES (?, ?)');
      const batch = db.transaction((from: number) => {
        for (let i = from; i < from + 20; i++) ins.run(i, 'x'.repeat(4000));
      });
      let max = 0;
      for (let id = 0; id < ROWS; id += 20) {
        // The log the thread's start let grow is cut, so the file's size measures what came after.
        if (id === 2_000) db.pragma('wal_checkpoint(TRUNCATE)');
        batch.immediate(id);
        // The work of the next batch (parsing, embedding) between two commits: about 1 ms, then a turn of
        // the event loop, where the thread's report of a long log is handled.
        const t = performance.now();
        while (performance.now() - t < 1);
        await new Promise((r) => setImmediate(r));
        if (id >= 2_000) max = Math.max(max, statSync(`${path}-wal`).size);
      }
      await cp.stop();
      expect(db.prepare('SELECT count(*) FROM filler').pluck().get()).toBe(ROWS);
      db.close();
      return max;
    };
    const bounded = await maxLog(256);
    const unbounded = await maxLog(Number.POSITIVE_INFINITY);
    // 256 frames of 4 KiB is 1 MiB; the commits made before each restart come on top, more of them when
    // the machine is busy (10.9 MB in one CI run beside the other test files, 22 MB in another, under 8 MB
    // alone): a third of the ~88 MB written through the log still says it restarted again and again.
    expect(bounded).toBeLessThan(32_000_000);
    expect(unbounded).toBeGreaterThan(3 * 1_048_576);
    expect(bounded).toBeLessThan(unbounded);
  });

  it('gives the writer its inline checkpoints back when the thread cannot run', async () => {
    const path = join(tempDir(), 'cairn.db');
    const db = openDatabase(path);
    const logs: string[] = [];
    // The thread's connection needs an existing file: this one is not there.
    const cp = new BackgroundCheckpointer(join(tempDir(), 'missing', 'cairn.db'), db, (_l, msg) =>
      logs.push(msg),
    );
    cp.start();
    expect(autocheckpoint(db)).toBe(0);
    await eventually(() => !cp.running);
    expect(autocheckpoint(db)).toBe(1000);
    expect(logs.some((m) => m.includes('checkpointing inline'))).toBe(true);
    db.close();
  });
});

describe('an engine', () => {
  it('embeds a long-lived writer’s writes on a lane by default: this thread neither embeds nor stores them', async () => {
    const writeAndSearch = async (opts: Partial<EngineOptions>) => {
      const engine = await engines.open(opts);
      const here = { embedded: 0, stored: 0 };
      const embedder = engine.embedder!;
      const embed = embedder.embed.bind(embedder);
      embedder.embed = (texts) => {
        here.embedded += texts.length;
        return embed(texts);
      };
      const put = engine.store.embeddings.put.bind(engine.store.embeddings);
      engine.store.embeddings.put = (space, items, cursor) => {
        here.stored += items.length;
        return put(space, items, cursor);
      };
      engine.ingest(
        Array.from({ length: 40 }, (_, i) => ({
          namespace: 'ns',
          id: `m${i}`,
          text: `note ${i}: the ${['zanzibar', 'kilimanjaro', 'serengeti', 'okavango'][i % 4]} deploy ${i}`,
          fields: { owner: `team ${i % 4}` },
        })),
      );
      await engine.drain();
      const counted = { ...here };
      const { stored, embedded, indexed, pending, fieldsEmbedded } = engine.stats().namespaces.ns!;
      // Found by its vector: the lane's vectors are in the index this thread serves.
      const r = await engine.search({ namespace: 'ns', query: 'note 13: the serengeti deploy 13', k: 3 });
      return { counted, counts: { stored, embedded, indexed, pending, fieldsEmbedded }, top: r.hits[0] };
    };
    const complete = { stored: 40, embedded: 40, indexed: 40, pending: 0, fieldsEmbedded: 40 };
    const lane = await writeAndSearch({});
    expect(lane.counted).toEqual({ embedded: 0, stored: 0 });
    expect(lane.counts).toEqual(complete);
    expect(lane.top).toMatchObject({ id: 'm13' });
    expect(lane.top!.vecRank).not.toBeNull();
    // Control: inline, this thread embeds every memory and the four distinct field values, and stores the
    // memories' vectors.
    const inline = await writeAndSearch({ embedWrites: 'inline' });
    expect(inline.counted).toEqual({ embedded: 44, stored: 40 });
    expect(inline.counts).toEqual(complete);
    // A one-shot engine embeds inline even when asked for the lane.
    const oneShot = await writeAndSearch({ refreshIntervalMs: 0, embedWrites: 'worker' });
    expect(oneShot.counted).toEqual({ embedded: 44, stored: 40 });
  }, 60_000);

  it('applies a lane pass without the memories deleted while it stored their vectors', async () => {
    // The lane stores a pass's vectors on its own connection, a slice at a time, and the serving thread
    // applies them when the pass returns: a delete in between found nothing in the index to drop.
    const engine = await engines.open({ embedBatchSize: 2_000, embedWrites: 'worker' });
    engine.ingest([{ namespace: 'ns', id: 'first', text: 'the first note' }]);
    await engine.drain();
    await engine.search({ namespace: 'ns', query: 'first note', k: 1 });
    engine.ingest(
      Array.from({ length: 2_000 }, (_, i) => ({
        namespace: 'ns',
        id: `m${i}`,
        text: `note ${i} on deploys`,
      })),
    );
    const stored = engine.store.db.prepare(
      "SELECT count(*) FROM embeddings e JOIN memories m ON m.key = e.key WHERE m.id = 'm0'",
    );
    await eventually(() => (stored.pluck().get() as number) > 0, 20_000);
    expect(engine.pipeline.status.running).toBe(true);
    expect(engine.delete('ns', 'm0')).toBe(true);
    await engine.drain();
    const { stored: live, embedded, indexed, pending } = engine.stats().namespaces.ns!;
    expect({ live, embedded, indexed, pending }).toEqual({
      live: 2_000,
      embedded: 2_000,
      indexed: 2_000,
      pending: 0,
    });
  }, 60_000);

  it('checkpoints in the background when long-lived, inline when one-shot', async () => {
    const served = await engines.open();
    expect(autocheckpoint(served.store.db)).toBe(0);
    const oneShot = await engines.open({ refreshIntervalMs: 0 });
    expect(autocheckpoint(oneShot.store.db)).toBe(1000);
    const chosen = await engines.open({ refreshIntervalMs: 0, checkpoints: 'background' });
    expect(autocheckpoint(chosen.store.db)).toBe(0);
  });

  it('moves a one-shot engine to background checkpoints at its first bulk write, and stays there', async () => {
    const memories = (n: number, from = 0) =>
      Array.from({ length: n }, (_, i) => ({
        namespace: 'ns',
        id: `m${from + i}`,
        text: `bulk memory ${from + i} about the deploy of service ${(from + i) % 7}`,
      }));
    const dir = engines.tempDir();
    const oneShot = await engines.open({ refreshIntervalMs: 0 }, dir);
    // A few memories (cairn add, an agent's write): checkpoints stay in the commit.
    expect(oneShot.ingest(memories(BULK_WRITE_MEMORIES - 1)).counts.stored).toBe(BULK_WRITE_MEMORIES - 1);
    expect(autocheckpoint(oneShot.store.db)).toBe(1000);
    // A batch of cairn ingest: from here the thread checkpoints, for the rest of the process.
    const path = join(dir, 'cairn.db');
    const before = statSync(path).size;
    oneShot.ingest(memories(2_000, 1_000));
    expect(autocheckpoint(oneShot.store.db)).toBe(0);
    oneShot.ingest(memories(3, 5_000));
    expect(autocheckpoint(oneShot.store.db)).toBe(0);
    // The thread copies the log into the database file while the writer's commits never do.
    await eventually(() => statSync(path).size > before);
    await oneShot.drain();
    expect(oneShot.store.db.prepare('SELECT count(*) FROM memories').pluck().get()).toBe(2_258);

    // Chosen inline: never moved.
    const inline = await engines.open({ refreshIntervalMs: 0, checkpoints: 'inline' });
    inline.ingest(memories(BULK_WRITE_MEMORIES));
    expect(autocheckpoint(inline.store.db)).toBe(1000);
  });

  it('moves a one-shot engine to background checkpoints when it runs a reindex (a vector per memory)', async () => {
    const dir = engines.tempDir();
    const oneShot = await engines.open({ refreshIntervalMs: 0 }, dir);
    oneShot.ingest([{ namespace: 'ns', id: 'a', text: 'one memory, written alone' }]);
    expect(autocheckpoint(oneShot.store.db)).toBe(1000);
    const space = await oneShot.requestReindex('hash:64', { activate: true });
    expect(autocheckpoint(oneShot.store.db)).toBe(0);
    await eventually(() => oneShot.store.spaces.getSpace(space.id)?.active === true);
  });
});
