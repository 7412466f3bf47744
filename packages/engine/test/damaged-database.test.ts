import { closeSync, openSync, statSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { type CairnError, isCairnError } from '@cairn/core';
import { openDatabase } from '@cairn/store';
import { describe, expect, it } from 'vitest';
import type { CairnEngine } from '../src/index.js';
import { eventually } from './distributed-helpers.js';
import { useEngines } from './helpers.js';

const engines = useEngines();

const memories = (n: number) =>
  Array.from({ length: n }, (_, i) => ({
    namespace: 'ns',
    id: `m${i}`,
    text: `memory ${i} about the auth middleware and token zq${i}x`,
  }));

/**
 * Overwrites `count` pages of the file with garbage, as a failing disk might; never the schema's pages
 * (`spare`), which SQLite reads to open the file at all: the damage is to be met by the searches.
 */
function damagePages(path: string, count: number, spare: ReadonlySet<number> = new Set([1])): void {
  const pageSize = 4096;
  const pages = Math.floor(statSync(path).size / pageSize);
  const fd = openSync(path, 'r+');
  try {
    let seed = 7;
    const garbage = Buffer.alloc(pageSize);
    for (let i = 0; i < count; i++) {
      seed = (seed * 1103515245 + 12345) >>> 0;
      for (let b = 0; b < pageSize; b++) garbage[b] = (seed >>> (b % 24)) & 0xff;
      const page = 2 + (seed % (pages - 2));
      if (spare.has(page + 1)) continue;
      writeSync(fd, garbage, 0, pageSize, page * pageSize);
    }
  } finally {
    closeSync(fd);
  }
}

/**
 * The pages (1-based) SQLite reads to open the file: the schema, and the statistics `PRAGMA optimize`
 * leaves (sqlite_stat1), which it loads with the schema. Both grew past one page with the named-field tables.
 * Also the FTS5 tables' `_config` pages, which FTS5 reads when the store prepares its first statement over
 * them at open (the consolidation tables moved them where the damage landed), and the embedding spaces, read
 * to find the active one (the write receipts' table moved it where the damage landed).
 */
function schemaPages(path: string): Set<number> {
  // Read after the engine closed: closing runs PRAGMA optimize, which writes the statistics.
  const db = openDatabase(path, { readonly: true });
  try {
    return new Set(
      db
        .prepare(
          "SELECT pageno FROM dbstat WHERE name LIKE 'sqlite_%' OR name LIKE '%_fts_config' OR name = 'embedding_spaces'",
        )
        .pluck()
        .all() as number[],
    );
  } finally {
    db.close();
  }
}

async function errorOf(fn: () => unknown): Promise<CairnError> {
  try {
    await fn();
  } catch (err) {
    if (isCairnError(err)) return err;
    throw err;
  }
  throw new Error('expected a CairnError');
}

describe('a damaged cairn.db', () => {
  it('a long-lived engine finds the damage off-thread, then refuses every operation with one named error', async () => {
    const dir = engines.tempDir();
    const first = await engines.open({}, dir);
    first.ingest(memories(2_000));
    await first.drain();
    await first.close();
    damagePages(join(dir, 'cairn.db'), 12, schemaPages(join(dir, 'cairn.db')));

    const engine: CairnEngine = await engines.open({ refreshIntervalMs: 1_000, persistIntervalMs: 0 }, dir);
    await eventually(() => engine.health.status.state === 'damaged');
    expect(engine.health.status.problems.length).toBeGreaterThan(0);
    // A server waits for this before it listens: on a damaged file it answers, never throws.
    expect(typeof (await engine.whenWarm(2_000))).toBe('boolean');
    const attempts: Array<() => unknown> = [
      () => engine.search({ namespace: 'ns', query: 'zq5x' }),
      () => engine.ingest(memories(1)),
      () => engine.get('ns', ['m1']),
      () => engine.timeline('ns', 'm1'),
      () => engine.stats(),
      () => engine.delete('ns', 'm1'),
    ];
    for (const attempt of attempts) {
      const err = await errorOf(attempt);
      expect(err.code).toBe('STORAGE_ERROR');
      expect(err.data.reason).toBe('damaged');
      expect(err.message).toMatch(/cairn\.db is damaged .*cairn check --data-dir/);
    }
  });

  it("a server's warm-up on a damaged index answers false, and an engine closed during its check stops it safely", async () => {
    const dir = engines.tempDir();
    const first = await engines.open({}, dir);
    first.ingest(memories(3_000));
    await first.drain();
    await first.close();
    const path = join(dir, 'cairn.db');
    const db = openDatabase(path, { readonly: true });
    const pages = db
      .prepare("SELECT pageno FROM dbstat WHERE name = 'memories_meta_seq'")
      .pluck()
      .all() as number[];
    db.close();
    const fd = openSync(path, 'r+');
    for (const p of pages) writeSync(fd, Buffer.alloc(4096, 0xab), 0, 4096, (p - 1) * 4096);
    closeSync(fd);
    // No vector leg, whose deletes' look-up reads the same index at open (a failed open: the CLI's tests).
    // The key catalog's first read (before its first await) meets the damage: a false, not a rejection.
    const lexicalOnly = { embedder: null, refreshIntervalMs: 1_000, persistIntervalMs: 0 };
    const engine = await engines.open(lexicalOnly, dir);
    expect(await engine.whenWarm(2_000)).toBe(false);
    await engine.close();
    // Closed at once, while the check opens the file or reports the damage: the check runs where it can be
    // killed at any point (a thread terminated inside better-sqlite3 aborted this whole process).
    for (let i = 0; i < 4; i++) {
      const e = await engines.open(lexicalOnly, dir);
      await new Promise((r) => setTimeout(r, i * 150));
      await e.close();
    }
    const last = await engines.open(lexicalOnly, dir);
    await eventually(() => last.health.status.state === 'damaged');
  });

  it('a healthy database passes the check and serves as before', async () => {
    const engine = await engines.open({ refreshIntervalMs: 1_000, persistIntervalMs: 0 });
    engine.ingest(memories(50));
    await eventually(() => engine.health.status.state === 'ok');
    const res = await engine.search({ namespace: 'ns', query: 'zq7x' });
    expect(res.hits[0]?.id).toBe('m7');
  });

  it('a one-shot engine skips the check, and names SQLite damage it meets instead of calling it internal', async () => {
    const dir = engines.tempDir();
    const first = await engines.open({}, dir);
    first.ingest(memories(2_000));
    await first.drain();
    await first.close();
    damagePages(join(dir, 'cairn.db'), 400, schemaPages(join(dir, 'cairn.db')));
    const e = await engines.open({ refreshIntervalMs: 0 }, dir);
    expect(e.health.status.state).toBe('unchecked');
    const outcomes = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        (async () => {
          try {
            await e.search({ namespace: 'ns', query: `zq${i * 50}x` });
            return 'ok';
          } catch (err) {
            return isCairnError(err) ? err.code : `raw: ${(err as Error).message}`;
          }
        })(),
      ),
    );
    // Each search either answers or fails with the named error; none surfaces SQLite's raw error.
    expect(outcomes.filter((o) => o !== 'ok' && o !== 'STORAGE_ERROR')).toEqual([]);
    expect(outcomes).toContain('STORAGE_ERROR');
    expect(e.health.status.state).toBe('damaged');
    // Once damage is known, nothing answers from the file any more.
    const after = await errorOf(() => e.search({ namespace: 'ns', query: 'zq1x' }));
    expect(after.data.reason).toBe('damaged');
  });
});
