import { rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { embeddingSpaceOf } from '@cairn/core';
import { MemoryStore } from '@cairn/store';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { mem, openTempStore, type TempStore } from './helpers.js';

// Disk proportional to what is stored: a vector costs about its bytes, and a dropped space's pages go back
// to the filesystem. Real SQLite files, sizes read from the filesystem.

let t: TempStore | undefined;
afterEach(() => {
  t?.cleanup();
  t = undefined;
});

/** Stores `n` memories with a vector of `dims` floats each in a space of that size. */
function fill(store: MemoryStore, n: number, dims: number): string {
  const space = embeddingSpaceOf({ modelId: 'test-model', dimensions: dims });
  store.spaces.ensureSpace(space);
  store.write(Array.from({ length: n }, (_, i) => mem({ id: `m${i}`, text: `memory ${i}` })));
  const pending = store.embeddings.pending(space.id, n);
  store.embeddings.put(
    space,
    pending.map((memory) => ({ memory, vector: new Float32Array(dims).fill(memory.key / n) })),
    Math.max(...pending.map((m) => m.changeSeq)),
  );
  return space.id;
}

/** Bytes the embeddings table and its indexes take, from SQLite's own page accounting. */
function embeddingBytes(store: MemoryStore): number {
  return store.db
    .prepare("SELECT sum(pgsize) FROM dbstat WHERE name = 'embeddings' OR name LIKE '%embeddings%'")
    .pluck()
    .get() as number;
}

describe('disk space', () => {
  it('a vector costs about its bytes: 384-d takes half of 768-d, not a page each', () => {
    t = openTempStore('cairn-disk-');
    fill(t.store, 2_000, 768);
    const big = embeddingBytes(t.store);
    t.cleanup();
    t = openTempStore('cairn-disk-');
    fill(t.store, 2_000, 384);
    const small = embeddingBytes(t.store);
    // 768-d: 3 KiB of floats a row, one row a 4 KiB page; 384-d: two rows a page.
    expect(big / 2_000).toBeLessThan(4_400);
    expect(small / 2_000).toBeLessThan(2_300);
    expect(small / big).toBeLessThan(0.6);
  });

  it('a new file uses incremental auto-vacuum: a dropped space is given back to the filesystem in steps', () => {
    t = openTempStore('cairn-disk-');
    const a = fill(t.store, 1_000, 768);
    const b = embeddingSpaceOf({ modelId: 'other-model', dimensions: 768 });
    t.store.spaces.ensureSpace(b);
    const pending = t.store.embeddings.pending(b.id, 1_000);
    t.store.embeddings.put(
      b,
      pending.map((memory) => ({ memory, vector: new Float32Array(768) })),
      Math.max(...pending.map((m) => m.changeSeq)),
    );
    expect(t.store.diskUsage().autoVacuum).toBe('incremental');
    const full = t.store.diskUsage().bytes;
    expect(t.store.spaces.drop(b.id)).toBe(1_000);
    expect(t.store.diskUsage().freeBytes).toBeGreaterThan(3_000_000);
    let free = t.store.diskUsage().freeBytes;
    let steps = 0;
    while (free > 0) {
      free = t.store.reclaimFreePages(256);
      steps += 1;
    }
    expect(steps).toBeGreaterThan(1);
    const after = t.store.diskUsage().bytes;
    expect(after).toBeLessThan(full * 0.6);
    t.store.db.pragma('wal_checkpoint(TRUNCATE)');
    expect(statSync(t.path).size).toBe(after);
    // The remaining space is intact.
    expect(t.store.spaces.progress(a)).toMatchObject({ total: 1_000, embedded: 1_000 });
  });

  it('compact() converts an older file (no auto-vacuum) and shrinks it, keeping every row', () => {
    t = openTempStore('cairn-disk-');
    const path = t.path;
    t.store.close();
    // An older folder: the file was created before auto-vacuum was set.
    rmSync(path, { force: true });
    for (const f of ['-wal', '-shm']) rmSync(path + f, { force: true });
    const raw = new Database(path);
    raw.pragma('journal_mode = WAL');
    raw.exec('CREATE TABLE placeholder (x)');
    raw.close();
    const store = new MemoryStore({ path });
    t = {
      ...t,
      store,
      cleanup() {
        store.close();
        rmSync(join(path, '..'), { recursive: true, force: true });
      },
    };
    const a = fill(store, 1_000, 768);
    const other = embeddingSpaceOf({ modelId: 'other-model', dimensions: 768 });
    store.spaces.ensureSpace(other);
    const pending = store.embeddings.pending(other.id, 1_000);
    store.embeddings.put(
      other,
      pending.map((memory) => ({ memory, vector: new Float32Array(768) })),
      Math.max(...pending.map((m) => m.changeSeq)),
    );
    store.spaces.drop(other.id);
    expect(store.diskUsage().autoVacuum).toBe('none');
    expect(store.reclaimFreePages(1_000_000)).toBeGreaterThan(3_000_000); // nothing given back
    const { before, after } = store.compact();
    expect(after).toBeLessThan(before * 0.6);
    expect(store.diskUsage()).toMatchObject({ autoVacuum: 'incremental', freeBytes: 0 });
    expect(statSync(path).size).toBe(after);
    expect(store.spaces.progress(a)).toMatchObject({ total: 1_000, embedded: 1_000 });
  });
});
