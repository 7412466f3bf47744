import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CairnEngine, DataFolderLock } from '../src/index.js';

let dir: string;
const open: CairnEngine[] = [];
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'cairn-lock-'));
});
afterEach(async () => {
  for (const e of open.splice(0)) await e.close();
  rmSync(dir, { recursive: true, force: true });
});

async function engine(opts: Partial<Parameters<typeof CairnEngine.open>[0]> = {}) {
  const e = await CairnEngine.open({ dataDir: dir, persistIntervalMs: 0, refreshIntervalMs: 0, ...opts });
  open.push(e);
  return e;
}

describe('one embedded writer per data folder', () => {
  it('refuses a second writer, naming the first; a reader may open beside it and cannot write', async () => {
    const writer = await engine();
    writer.ingest([{ namespace: 'ns', id: 'a', text: 'written by the writer about kafka' }]);
    await writer.drain();
    await expect(engine()).rejects.toMatchObject({
      code: 'STORAGE_ERROR',
      message: expect.stringContaining(`process ${process.pid}`),
    });
    const reader = await engine({ ifWriterRunning: 'read' });
    expect(reader.readerBecause).toMatch(/being written by process/);
    expect((await reader.search({ namespace: 'ns', query: 'kafka' })).hits[0]!.id).toBe('a');
    expect(() => reader.ingest([{ namespace: 'ns', text: 'x' }])).toThrow(/cairn serve/);
  });

  it('frees the folder on close', async () => {
    const first = await engine();
    await first.close();
    open.splice(open.indexOf(first), 1);
    const second = await engine();
    expect(second.readerBecause).toBeNull();
  });

  it('takes over the lock of a writer that died (kill -9 leaves the file behind)', async () => {
    // A pid that existed and is gone now.
    const dead = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], {
      encoding: 'utf8',
    });
    const pid = Number(dead.stdout);
    const lock = (holder: object) => writeFileSync(DataFolderLock.file(dir), JSON.stringify(holder));
    lock({ pid, host: hostname(), since: Date.now(), token: 'dead' });
    expect((await engine()).readerBecause).toBeNull();
    await open.pop()!.close();
    // An earlier process with our pid (PID 1 in a restarted container) is not us.
    lock({ pid: process.pid, host: hostname(), since: Date.now(), token: 'earlier-incarnation' });
    expect((await engine()).readerBecause).toBeNull();
    await open.pop()!.close();
  });

  it('respects a fresh lock from another host, and takes over one that stopped beating', async () => {
    const file = DataFolderLock.file(dir);
    writeFileSync(file, JSON.stringify({ pid: 1, host: 'elsewhere', since: Date.now(), token: 'remote' }));
    await expect(engine()).rejects.toMatchObject({
      code: 'STORAGE_ERROR',
      message: expect.stringContaining('elsewhere'),
    });
    const old = new Date(Date.now() - 5 * 60_000);
    utimesSync(file, old, old);
    expect((await engine()).readerBecause).toBeNull();
  });

  it('external readers of a distributed deployment never take the lock', async () => {
    await engine({ pipeline: 'external' });
    const writer = await engine();
    expect(writer.readerBecause).toBeNull();
  });
});
