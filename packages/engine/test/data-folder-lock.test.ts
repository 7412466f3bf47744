import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { chmodSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CairnEngine, DataFolderLock, whenWriterEmbedded } from '../src/index.js';

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
  it('refuses a second writer with WRITER_ELSEWHERE, naming the first; a follower opens beside it and stores', async () => {
    const writer = await engine();
    writer.ingest([{ namespace: 'ns', id: 'a', text: 'written by the writer about kafka' }]);
    await writer.drain();
    await expect(engine()).rejects.toMatchObject({
      code: 'WRITER_ELSEWHERE',
      message: expect.stringContaining(`process ${process.pid}`),
    });
    const follower = await engine({ ifWriterRunning: 'read' });
    expect(follower.writerRole).toMatchObject({
      role: 'follower',
      writer: expect.stringMatching(/being written by process/),
    });
    expect((await follower.search({ namespace: 'ns', query: 'kafka' })).hits[0]!.id).toBe('a');
    // The follower stores (durably, lexically searchable at once); the writer embeds it on its next refresh.
    expect(
      follower.ingest([{ namespace: 'ns', id: 'b', text: 'stored by the follower about zookeeper' }]).counts
        .stored,
    ).toBe(1);
    expect((await writer.search({ namespace: 'ns', query: 'zookeeper' })).hits[0]!.id).toBe('b');
    expect(writer.stats().namespaces.ns).toMatchObject({ stored: 2, pending: 1 });
    writer.refresh();
    await writer.drain();
    expect(writer.stats().namespaces.ns).toMatchObject({ stored: 2, embedded: 2, pending: 0 });
    // A delete by the follower: the writer's served index lets go of the vector on its next refresh.
    await writer.search({ namespace: 'ns', query: 'kafka' });
    expect(writer.stats().namespaces.ns).toMatchObject({ embedded: 2, indexed: 2 });
    expect(follower.delete('ns', 'a')).toBe(true);
    writer.refresh();
    expect(writer.stats().namespaces.ns).toMatchObject({ stored: 1, embedded: 1, indexed: 1 });
  });

  it('a follower takes the writer role over once the writer is gone, and embeds what was stored meanwhile', async () => {
    const writer = await engine();
    const follower = await engine({ ifWriterRunning: 'read' });
    follower.ingest([{ namespace: 'ns', id: 'f1', text: 'saved while the writer ran' }]);
    follower.refresh();
    expect(follower.writerRole.role).toBe('follower');
    await writer.close();
    open.splice(open.indexOf(writer), 1);
    follower.ingest([{ namespace: 'ns', id: 'f2', text: 'saved while nobody embedded' }]);
    follower.refresh();
    expect(follower.writerRole).toEqual({ role: 'writer', writer: null });
    await follower.drain();
    expect(follower.stats().namespaces.ns).toMatchObject({ stored: 2, embedded: 2, pending: 0 });
    const res = await follower.search({ namespace: 'ns', query: 'nobody embedded', weights: { lexical: 0 } });
    expect(res.hits[0]!.id).toBe('f2');
    await expect(engine()).rejects.toMatchObject({ code: 'WRITER_ELSEWHERE' });
  });

  it("a follower's wait for its writes' vectors: a long-lived writer embeds them; a one-shot writer is not waited on", async () => {
    // A one-shot writer (no refresh: a `cairn search --queries` reading a pipe) embeds only its own writes.
    const oneShot = await engine();
    const follower = await engine({ ifWriterRunning: 'read' });
    const stored = follower.ingest([{ namespace: 'ns', id: 'f1', text: 'stored beside a one-shot writer' }]);
    const t0 = Date.now();
    const beside = await whenWriterEmbedded(follower, stored.keys, { stallMs: 60_000 });
    expect(beside).toEqual({ pending: 1, tookOver: false, writerEmbedsOthers: false });
    expect(Date.now() - t0).toBeLessThan(30_000);
    await follower.close();
    await oneShot.close();
    open.splice(0);
    // A long-lived writer (its refresh notices others' writes) embeds them, and the wait ends with none left.
    const writer = await engine({ refreshIntervalMs: 100 });
    const second = await engine({ ifWriterRunning: 'read' });
    const more = second.ingest([{ namespace: 'ns', id: 'f2', text: 'stored beside a serving writer' }]);
    expect(await whenWriterEmbedded(second, more.keys, { stallMs: 60_000 })).toEqual({
      pending: 0,
      tookOver: false,
      writerEmbedsOthers: true,
    });
    expect(writer.stats().namespaces.ns).toMatchObject({ stored: 2, embedded: 2 });
  });

  it('frees the folder on close', async () => {
    const first = await engine();
    await first.close();
    open.splice(open.indexOf(first), 1);
    const second = await engine();
    expect(second.writerRole.role).toBe('writer');
  });

  it('takes over the lock of a writer that died (kill -9 leaves the file behind)', async () => {
    // A pid that existed and is gone now.
    const dead = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], {
      encoding: 'utf8',
    });
    const pid = Number(dead.stdout);
    const lock = (holder: object) => writeFileSync(DataFolderLock.file(dir), JSON.stringify(holder));
    lock({ pid, host: hostname(), since: Date.now(), token: 'dead' });
    expect((await engine()).writerRole.role).toBe('writer');
    await open.pop()!.close();
    // An earlier process with our pid (PID 1 in a restarted container) is not us.
    lock({ pid: process.pid, host: hostname(), since: Date.now(), token: 'earlier-incarnation' });
    expect((await engine()).writerRole.role).toBe('writer');
    await open.pop()!.close();
  });

  // A writer killed while its parent never reaps it (a container without an init) is a zombie: kill(pid, 0)
  // still answers for it, and its lock was kept for the minute of staleness.
  it.runIf(process.platform === 'linux')(
    'takes over the lock of a writer that exited and was never reaped (a zombie)',
    async () => {
      // `sh` starts a child, then becomes `sleep 30`, which never waits for it: the child stays a zombie.
      const parent = spawn('sh', ['-c', 'sleep 0 & echo $!; exec sleep 30'], {
        stdio: ['ignore', 'pipe', 'ignore'],
      });
      try {
        const [chunk] = (await once(parent.stdout!, 'data')) as [Buffer];
        const pid = Number(chunk.toString().trim());
        const state = () => {
          const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
          return stat.slice(stat.lastIndexOf(')') + 1).trim()[0];
        };
        for (let i = 0; i < 250 && state() !== 'Z'; i++) await new Promise((r) => setTimeout(r, 20));
        expect(state()).toBe('Z');
        expect(() => process.kill(pid, 0)).not.toThrow();
        writeFileSync(
          DataFolderLock.file(dir),
          JSON.stringify({ pid, host: hostname(), since: Date.now(), token: 'zombie' }),
        );
        expect((await engine()).writerRole.role).toBe('writer');
      } finally {
        parent.kill('SIGKILL');
      }
    },
  );

  it("one process of many taking over a dead writer's lock at the same instant gets it, every time", async () => {
    // Each renamed the dead holder's file away and linked its own; one's rename could move another's fresh
    // lock aside, and a third link it: two writers (2 of 40 rounds of 8 processes).
    const engineDist = new URL('../dist/index.js', import.meta.url).href;
    for (let round = 0; round < 3; round++) {
      const folder = mkdtempSync(join(tmpdir(), 'cairn-lock-race-'));
      try {
        const dead = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], {
          encoding: 'utf8',
        });
        writeFileSync(
          DataFolderLock.file(folder),
          JSON.stringify({ pid: Number(dead.stdout), host: hostname(), since: 0, token: 'dead' }),
        );
        const at = Date.now() + 1_200;
        const script = `const { DataFolderLock } = await import(${JSON.stringify(engineDist)});
          while (Date.now() < ${at}) {}
          const r = DataFolderLock.acquire(${JSON.stringify(folder)});
          process.stdout.write(r instanceof DataFolderLock ? 'got' : 'held');
          await new Promise((res) => setTimeout(res, 1_500));`;
        const children = Array.from({ length: 6 }, () =>
          spawn(process.execPath, ['--input-type=module', '-e', script], {
            stdio: ['ignore', 'pipe', 'inherit'],
          }),
        );
        const said = await Promise.all(
          children.map(
            (c) =>
              new Promise<string>((resolve) => {
                let out = '';
                c.stdout!.on('data', (d) => {
                  out += d;
                });
                c.on('exit', () => resolve(out));
              }),
          ),
        );
        expect(said.sort()).toEqual(['got', 'held', 'held', 'held', 'held', 'held']);
      } finally {
        rmSync(folder, { recursive: true, force: true });
      }
    }
  });

  it.runIf(process.platform !== 'win32')(
    'never takes the lock of a live writer, however long it was paused (SIGSTOP, a laptop asleep)',
    async () => {
      const engineDist = new URL('../dist/index.js', import.meta.url).href;
      const script = `const { DataFolderLock } = await import(${JSON.stringify(engineDist)});
        const r = DataFolderLock.acquire(${JSON.stringify(dir)});
        process.stdout.write(r instanceof DataFolderLock ? 'got' : 'held');
        setInterval(() => {}, 1_000);`;
      const writer = spawn(process.execPath, ['--input-type=module', '-e', script], {
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      try {
        const [said] = (await once(writer.stdout!, 'data')) as [Buffer];
        expect(String(said)).toBe('got');
        writer.kill('SIGSTOP');
        // Its heartbeat stopped five minutes ago, as far as the file can tell.
        const old = new Date(Date.now() - 5 * 60_000);
        utimesSync(DataFolderLock.file(dir), old, old);
        expect(DataFolderLock.free(dir)).toBe(false);
        expect(DataFolderLock.holder(dir)?.pid).toBe(writer.pid);
        await expect(engine()).rejects.toMatchObject({ code: 'WRITER_ELSEWHERE' });
        // Once it is gone, however it went, the folder is free at once.
        writer.kill('SIGKILL');
        await once(writer, 'exit');
        expect(DataFolderLock.free(dir)).toBe(true);
        expect((await engine()).writerRole.role).toBe('writer');
      } finally {
        writer.kill('SIGKILL');
      }
    },
  );

  it("a follower's probe of the lock never makes a writer starting at that instant refuse a free folder", async () => {
    // free() takes the guard for an instant; an acquire at that instant was refused, naming no one (177
    // of 20,965 beside a probe every 5 ms). A follower probes once a second; this one, every millisecond.
    // (A probe in a tight loop finds the defect at once, but also outlasts the wait on a loaded machine.)
    const engineDist = new URL('../dist/index.js', import.meta.url).href;
    const prober = spawn(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `const { DataFolderLock } = await import(${JSON.stringify(engineDist)});
         process.stdout.write('probing');
         const tick = () => { DataFolderLock.free(${JSON.stringify(dir)}); setTimeout(tick, 1); };
         tick();`,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    try {
      await once(prober.stdout!, 'data');
      const refused: unknown[] = [];
      let acquires = 0;
      for (const until = Date.now() + 2_000; Date.now() < until; acquires++) {
        const r = DataFolderLock.acquire(dir);
        if (r instanceof DataFolderLock) r.release();
        else refused.push(r.heldBy);
      }
      expect(refused).toEqual([]);
      expect(acquires).toBeGreaterThan(100);
    } finally {
      prober.kill('SIGKILL');
    }
  });

  // Root writes any file, so the case needs another user: here, or through runuser where it can read the build.
  const nobodyCanRun =
    process.getuid?.() === 0 &&
    spawnSync('runuser', [
      '-u',
      'nobody',
      '--',
      'test',
      '-r',
      new URL('../dist/index.js', import.meta.url).pathname,
    ]).status === 0;
  it.runIf(process.platform === 'linux' && (process.getuid?.() !== 0 || nobodyCanRun))(
    'a guard file this user cannot write is a named error, not a lock that excludes no one',
    async () => {
      // SQLite opened it read-only without a word, and a read-only BEGIN IMMEDIATE excludes nobody: every
      // process of that user held "the" guard.
      chmodSync(dir, 0o777);
      // The guard file, made by this user (root's, 0644, when the other user is nobody).
      const taken = DataFolderLock.acquire(dir);
      expect(taken).toBeInstanceOf(DataFolderLock);
      (taken as DataFolderLock).release();
      const engineDist = new URL('../dist/index.js', import.meta.url).href;
      const script = `const { CairnEngine } = await import(${JSON.stringify(engineDist)});
        try { await CairnEngine.open({ dataDir: ${JSON.stringify(dir)}, persistIntervalMs: 0, refreshIntervalMs: 0 }); process.stdout.write('opened'); }
        catch (e) { process.stdout.write(e.code + ' ' + e.message); }`;
      if (process.getuid?.() !== 0) chmodSync(DataFolderLock.guardFile(dir), 0o444);
      const r = spawnSync(
        process.getuid?.() === 0 ? 'runuser' : process.execPath,
        [
          ...(process.getuid?.() === 0 ? ['-u', 'nobody', '--', process.execPath] : []),
          '--input-type=module',
          '-e',
          script,
        ],
        { encoding: 'utf8' },
      );
      expect(r.stdout).toMatch(/^STORAGE_ERROR .*cannot be written \((EACCES|EPERM)\)/);
    },
  );

  it('respects a fresh lock from another host, and takes over one that stopped beating', async () => {
    const file = DataFolderLock.file(dir);
    writeFileSync(file, JSON.stringify({ pid: 1, host: 'elsewhere', since: Date.now(), token: 'remote' }));
    await expect(engine()).rejects.toMatchObject({
      code: 'WRITER_ELSEWHERE',
      message: expect.stringContaining('elsewhere'),
    });
    const old = new Date(Date.now() - 5 * 60_000);
    utimesSync(file, old, old);
    expect((await engine()).writerRole.role).toBe('writer');
  });

  it('external readers of a distributed deployment never take the lock', async () => {
    const external = await engine({ pipeline: 'external' });
    expect(external.writerRole.role).toBe('external');
    const writer = await engine();
    expect(writer.writerRole.role).toBe('writer');
    external.refresh();
    expect(external.writerRole.role).toBe('external');
  });
});
