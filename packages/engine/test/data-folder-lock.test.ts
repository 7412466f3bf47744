import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
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
    writeFileSync(DataFolderLock.file(dir), JSON.stringify({ pid, host: hostname(), since: Date.now() }));
    const e = await engine();
    expect(e.readerBecause).toBeNull();
  });

  it('external readers of a distributed deployment never take the lock', async () => {
    await engine({ pipeline: 'external' });
    const writer = await engine();
    expect(writer.readerBecause).toBeNull();
  });
});
