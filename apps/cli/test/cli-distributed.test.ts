import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { QueueTopology, queueCounts } from '@cairn/pipeline/distributed';
import { type RedisServer, startRedisServer } from '@cairn/pipeline/testing';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';

// The distributed contract of the CLI, through a private redis-server: ingest enqueues, `cairn worker`
// processes, stats reports queues, reindex goes through the same queues, SIGTERM drains.

const MAIN = fileURLToPath(new URL('../dist/main.js', import.meta.url));
let redis: RedisServer;
let dir: string;
let env: Record<string, string>;
const workers: ChildProcess[] = [];

beforeAll(async () => {
  redis = await startRedisServer();
});
afterAll(async () => {
  await redis?.close();
});
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'cairn-cli-dist-'));
  env = {
    REDIS_URL: redis.url,
    CAIRN_QUEUE_PREFIX: `t-${randomUUID()}`,
    CAIRN_SHARDS: '2',
    CAIRN_DATA_DIR: join(dir, 'data'),
  };
});
afterEach(async () => {
  for (const w of workers.splice(0)) {
    if (w.exitCode === null && w.signalCode === null) {
      const exited = once(w, 'exit');
      w.kill('SIGKILL');
      await exited;
    }
  }
  rmSync(dir, { recursive: true, force: true });
});

function cairn(args: string[], extra: Record<string, string | undefined> = {}) {
  const r = spawnSync(process.execPath, [MAIN, ...args], {
    encoding: 'utf8',
    env: { ...process.env, ...env, ...extra },
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

function startWorker(args: string[] = []) {
  const w = spawn(process.execPath, [MAIN, 'worker', ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let log = '';
  w.stdout!.on('data', (d) => {
    log += d;
  });
  w.stderr!.on('data', (d) => {
    log += d;
  });
  workers.push(w);
  return { process: w, log: () => log };
}

function corpus(n: number, namespace = 'proj'): string {
  const p = join(dir, `${namespace.replace('/', '_')}-${n}.jsonl`);
  const lines = Array.from({ length: n }, (_, i) =>
    JSON.stringify({
      namespace,
      id: `m${i}`,
      kind: i % 5 === 0 ? 'fact' : 'observation',
      session: `s${Math.floor(i / 10)}`,
      ts: 1_735_725_600_000 + i * 60_000,
      text: `memory ${i} about redis queue ${i % 7} and the parser token${i}q`,
    }),
  );
  writeFileSync(p, `${lines.join('\n')}\n`);
  return p;
}

async function until<T>(read: () => T, done: (v: T) => boolean, what: string, ms = 60_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = read();
    if (done(v)) return v;
    if (Date.now() > end) throw new Error(`gave up waiting for ${what}: ${JSON.stringify(v)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

const stats = () => JSON.parse(cairn(['stats', '--json']).stdout);

describe('cairn with REDIS_URL', () => {
  it('ingest enqueues, the worker stores, embeds and indexes, stats reports namespaces and queues', async () => {
    const worker = startWorker(['--stages', 'capture,embed,index']);
    const r = cairn(['ingest', corpus(120), '--json']);
    expect(r.code, r.stderr).toBe(0);
    // --wait stored (the default) returns once the capture worker committed the batch to SQLite.
    expect(JSON.parse(r.stdout)).toMatchObject({ mode: 'distributed', read: 120, stored: 120, rejected: 0 });

    const s = await until(stats, (s) => s.namespaces.proj?.embedded === 120, 'all 120 embedded');
    expect(s.namespaces.proj).toMatchObject({
      stored: 120,
      embedded: 120,
      indexed: 120,
      pending: 0,
      failed: 0,
    });
    expect(Object.keys(s.queues).sort()).toEqual(['capture', 'embed', 'index-0', 'index-1']);
    for (const q of Object.values(s.queues) as Array<Record<string, number>>) {
      expect(q).toMatchObject({ waiting: 0, failed: 0 });
      // The one worker runs every stage and holds both shards' leases: every queue has it.
      expect(q.workers).toBeGreaterThanOrEqual(1);
    }

    const hits = JSON.parse(cairn(['search', 'token57q', '-n', 'proj', '--json']).stdout).hits;
    expect(hits[0]).toMatchObject({ id: 'm57', explain: { bm25Rank: 1 } });
    expect(hits[0].explain.vecRank).toBeGreaterThan(0);

    // Ingesting the same file again is idempotent: nothing is stored or embedded again.
    const again = JSON.parse(cairn(['ingest', corpus(120), '--json']).stdout);
    expect(again).toMatchObject({ read: 120, stored: 0, unchanged: 120 });
    expect(stats().namespaces.proj).toMatchObject({ stored: 120, embedded: 120 });

    // cairn add goes through the capture queue too, and returns once a worker stored it.
    const add = cairn(['add', 'the zeppelin hangar is in Friedrichshafen', '-n', 'proj', '--json']);
    expect(add.code, add.stderr).toBe(0);
    expect(JSON.parse(add.stdout)).toMatchObject({ namespace: 'proj', status: 'stored' });
    expect(stats().namespaces.proj.stored).toBe(121);

    worker.process.kill('SIGTERM');
    const [code] = await once(worker.process, 'exit');
    expect(code).toBe(0);
    expect(worker.log()).toMatch(/"graceful":true/);
  });

  it("a worker, a server or a read on another data folder than the deployment's is refused, and creates nothing", async () => {
    startWorker(['--stages', 'capture,embed,index']);
    expect(cairn(['ingest', corpus(5)]).code).toBe(0);
    const run = (args: string[], dataDir: string) =>
      spawnSync(process.execPath, [MAIN, ...args, '--data-dir', dataDir], {
        encoding: 'utf8',
        env: { ...process.env, ...env },
        timeout: 30_000,
      });
    // A mistyped path: refused by name, and no folder appears there.
    const typo = join(dir, 'dta');
    for (const args of [
      ['worker', '--stages', 'capture'],
      ['search', 'redis', '-n', 'proj'],
      ['serve', '--port', '0', '--no-auth'],
    ]) {
      const r = run(args, typo);
      expect(r.status, `${args[0]}: ${r.stderr}`).toBe(2);
      expect(r.stderr).toMatch(
        /\[NOT_FOUND\]: no Cairn data folder at .*dta: this deployment \(queue prefix "t-[^"]+"\) keeps its memories in the folder first opened at .*data/,
      );
      expect(existsSync(typo)).toBe(false);
    }
    // Another, existing folder (an embedded one): a writer of this deployment refuses it, and so does a read
    // (which answered from it before, with this deployment's queue depths beside its counts).
    expect(cairn(['ingest', corpus(3)], { REDIS_URL: '', CAIRN_DATA_DIR: join(dir, 'other') }).code).toBe(0);
    for (const args of [
      ['worker', '--stages', 'capture'],
      ['serve', '--port', '0', '--no-auth'],
      ['stats', '--json'],
      ['search', 'redis', '-n', 'proj'],
      ['export', '-n', 'proj'],
    ]) {
      const r = run(args, join(dir, 'other'));
      expect(r.status, `${args[0]}: ${r.stderr}`).toBe(2);
      expect(r.stderr).toMatch(/\[INVALID_INPUT\]: the data folder at .*other is not this deployment's/);
    }
    // The deployment's own folder still serves everything written to it.
    await until(stats, (s) => s.namespaces.proj?.stored === 5, 'the writes stored in the deployment folder');
  });

  it('cairn add with no capture worker says what it waits for, and is stored once a worker starts', async () => {
    const add = spawn(process.execPath, [MAIN, 'add', 'waiting for a worker', '-n', 'waits'], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    add.stdout!.on('data', (d) => {
      out += d;
    });
    add.stderr!.on('data', (d) => {
      err += d;
    });
    const exited = once(add, 'exit');
    // It was silent for the whole 300 s.
    await until(
      () => err,
      (e) => /not stored after 10 s: is a capture worker running/.test(e),
      'the waiting notice',
    );
    startWorker(['--stages', 'capture']);
    const [code] = await exited;
    expect(code, err).toBe(0);
    expect(out).toMatch(/^stored /);
  });

  it('--wait queued returns before any worker runs; a worker started later stores everything', async () => {
    const r = cairn(['ingest', corpus(50), '--wait', 'queued', '--json']);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ mode: 'distributed', queued: 50, stored: 0 });
    const before = stats();
    expect(before.queues.capture.waiting).toBe(1);
    // Nothing takes the batch yet, and stats says so.
    expect(before.queues.capture.workers).toBe(0);
    expect(before.namespaces.proj).toBeUndefined();
    const human = cairn(['stats']);
    expect(human.stdout).toMatch(/queue capture: waiting 1, .*workers 0 \(its jobs wait for a cairn worker/);

    startWorker(['--stages', 'capture,embed,index']);
    const s = await until(stats, (s) => s.namespaces.proj?.embedded === 50, 'queued batch processed');
    expect(s.namespaces.proj.stored).toBe(50);
    expect(s.queues.capture.workers).toBeGreaterThanOrEqual(1);
  });

  it('reindex builds a new space through the queues, then swaps it in; spaces lists and drops', async () => {
    startWorker(['--stages', 'capture,embed,index']);
    expect(cairn(['ingest', corpus(200)]).code).toBe(0);
    await until(stats, (s) => s.namespaces.proj?.embedded === 200, 'first space filled');

    // The worker's cache already holds every text's 384-d vector: the 768-d space must not reuse them.
    const r = cairn(['reindex', '--embedder', 'hash:768', '--json']);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({
      space: 'cairn-hash-v1/768',
      mode: 'distributed',
      total: 200,
      embedded: 200,
      failed: 0,
      activated: true,
    });
    const spaces = JSON.parse(cairn(['spaces', 'list', '--json']).stdout).spaces;
    expect(spaces.map((s: { id: string; active: boolean }) => [s.id, s.active])).toEqual(
      expect.arrayContaining([
        ['cairn-hash-v1/384', false],
        ['cairn-hash-v1/768', true],
      ]),
    );
    expect(stats()).toMatchObject({ space: 'cairn-hash-v1/768', namespaces: { proj: { embedded: 200 } } });
    const hits = JSON.parse(cairn(['search', 'token9q', '-n', 'proj', '--json']).stdout).hits;
    expect(hits[0]).toMatchObject({ id: 'm9', explain: { vecRank: 1 } });

    // The replaced space stays current for its grace period: a write made after the switch reaches it
    // too, so switching back is instant and complete.
    const late = join(dir, 'late.jsonl');
    writeFileSync(
      late,
      `${JSON.stringify({ namespace: 'proj', id: 'late', text: 'a late zebra memory' })}\n`,
    );
    expect(cairn(['ingest', late]).code).toBe(0);
    const progressOf = (id: string) =>
      JSON.parse(cairn(['spaces', 'list', '--json']).stdout).spaces.find((s: { id: string }) => s.id === id)
        .progress.embedded;
    await until(
      () => progressOf('cairn-hash-v1/384'),
      (n) => n === 201,
      'the late write in the old space',
    );
    const back = cairn(['spaces', 'activate', 'cairn-hash-v1/384']);
    expect(back.code, back.stderr).toBe(0);
    const lateHit = JSON.parse(cairn(['search', 'late zebra', '-n', 'proj', '--json']).stdout);
    expect(lateHit.degraded).toEqual([]);
    expect(lateHit.hits[0]).toMatchObject({ id: 'late', explain: { vecRank: 1 } });
    await until(
      () => progressOf('cairn-hash-v1/768'),
      (n) => n === 201,
      'the late write in the new space',
    );
    expect(cairn(['spaces', 'activate', 'cairn-hash-v1/768']).code).toBe(0);

    const drop = cairn(['spaces', 'drop', 'cairn-hash-v1/384', '--json']);
    expect(JSON.parse(drop.stdout)).toMatchObject({ dropped: 'cairn-hash-v1/384', vectors: 201 });
    const active = cairn(['spaces', 'drop', 'cairn-hash-v1/768']);
    expect(active.code).not.toBe(0);
    expect(active.stderr).toMatch(/active/);
    expect(JSON.parse(cairn(['dead-letters', '--json']).stdout)).toEqual({ deadLetters: [] });
  });

  it('a distributed reindex builds and saves the vector index of the new space before the switch', async () => {
    startWorker(['--stages', 'capture,embed,index']);
    // Above the exact-search threshold (5,000 a namespace), so the namespace has an HNSW file.
    expect(cairn(['ingest', corpus(6_000)]).code).toBe(0);
    await until(stats, (s) => s.namespaces.proj?.embedded === 6_000, 'first space filled', 120_000);
    const r = cairn(['reindex', '--embedder', 'hash:256', '--json']);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({
      space: 'cairn-hash-v1/256',
      embedded: 6_000,
      activated: true,
    });
    // The file exists as the command returns: the reindex saved it (workers never index an inactive space).
    const spaceDir = readdirSync(join(dir, 'data', 'vectors')).find((d) => d.startsWith('cairn-hash-v1_256'));
    expect(spaceDir).toBeDefined();
    const files = readdirSync(join(dir, 'data', 'vectors', spaceDir!));
    expect(files.some((f) => f.endsWith('.usearch'))).toBe(true);
    const hits = JSON.parse(cairn(['search', 'token9q', '-n', 'proj', '--json']).stdout);
    expect(hits.degraded).toEqual([]);
    expect(hits.hits[0]).toMatchObject({ id: 'm9', explain: { vecRank: 1 } });
  }, 180_000);

  it('a distributed reindex whose space is dropped meanwhile stops and says so', async () => {
    expect(cairn(['ingest', corpus(20)], { REDIS_URL: '' }).code).toBe(0);
    // No embed worker: the reindex waits on its queue until the drop.
    const reindex = spawn(
      process.execPath,
      [MAIN, 'reindex', '--embedder', 'hash:128', '--stall-timeout', '120'],
      {
        env: { ...process.env, ...env },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    workers.push(reindex);
    let stderr = '';
    reindex.stderr!.on('data', (d) => {
      stderr += d;
    });
    const exited = once(reindex, 'exit');
    await until(
      () => JSON.parse(cairn(['spaces', 'list', '--json']).stdout).spaces.map((s: { id: string }) => s.id),
      (ids: string[]) => ids.includes('cairn-hash-v1/128'),
      'the new space recorded',
    );
    expect(cairn(['spaces', 'drop', 'cairn-hash-v1/128']).code).toBe(0);
    const [code] = await Promise.race([
      exited,
      new Promise<[null]>((r) => setTimeout(() => r([null]), 20_000)),
    ]);
    expect(code, stderr).toBe(2); // not found: a usage error
    expect(stderr).toMatch(/\[NOT_FOUND\].*cairn-hash-v1\/128 was dropped during its reindex/);
  }, 60_000);

  it('a distributed reindex with no embed worker stops with a reason instead of waiting forever', () => {
    expect(cairn(['ingest', corpus(20)], { REDIS_URL: '' }).code).toBe(0);
    const r = cairn(['reindex', '--embedder', 'hash:128', '--stall-timeout', '1', '--json']);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/stalled at 0 memories: no embed worker is running/);
  });

  it('refuses mistyped worker, dead-letters and reindex numbers before starting anything', () => {
    const cases: Array<[string[], RegExp]> = [
      [['worker', '--shutdown-timeout', 'abc'], /--shutdown-timeout must be an integer/],
      [['worker', '--reconcile-interval', '-5'], /--reconcile-interval must be an integer/],
      [['worker', '--concurrency', '2abc'], /--concurrency must be an integer in \[1, 64\]/],
      [['worker', '--embed-rate', '0'], /--embed-rate must be an integer/],
      [['dead-letters', '--limit', 'lots'], /--limit must be an integer/],
      [['reindex', '--embedder', 'hash:64', '--stall-timeout', 'soon'], /--stall-timeout must be an integer/],
      [['reindex', '--embedder', 'hash:64', '--batch-size', '0'], /--batch-size must be an integer/],
    ];
    for (const [args, message] of cases) {
      const r = cairn(args);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr).toMatch(/\[INVALID_INPUT\]/);
      expect(r.stderr).toMatch(message);
    }
  });

  it('an ingest whose Redis dies mid-file says how far it got: every line before the failed batch is accepted', async () => {
    const own = await startRedisServer();
    try {
      const ingest = spawn(
        process.execPath,
        [MAIN, 'ingest', '-', '--wait', 'queued', '--batch-size', '10', '--json'],
        { env: { ...process.env, ...env, REDIS_URL: own.url }, stdio: ['pipe', 'pipe', 'pipe'] },
      );
      workers.push(ingest);
      let stdout = '';
      let stderr = '';
      ingest.stdout!.on('data', (d) => {
        stdout += d;
      });
      ingest.stderr!.on('data', (d) => {
        stderr += d;
      });
      const line = (i: number) =>
        `${JSON.stringify({ namespace: 'proj', id: `s${i}`, text: `line ${i}` })}\n`;
      // The first batch (lines 1–10) is queued while Redis is up…
      for (let i = 1; i <= 10; i++) ingest.stdin!.write(line(i));
      const topology = await QueueTopology.connect({
        redisUrl: own.url,
        prefix: env.CAIRN_QUEUE_PREFIX!,
        shards: 2,
      });
      try {
        for (let i = 0; (await queueCounts(topology)).capture!.waiting === 0; i++) {
          if (i > 300) throw new Error(`the first batch was never queued: ${stderr}`);
          await new Promise((r) => setTimeout(r, 100));
        }
      } finally {
        await topology.close();
      }
      // …then Redis dies, and the second batch (lines 11–20) cannot be.
      await own.close();
      for (let i = 11; i <= 20; i++) ingest.stdin!.write(line(i));
      ingest.stdin!.end();
      const [code] = (await once(ingest, 'exit')) as [number | null];
      expect(code, stderr).not.toBe(0);
      const summary = JSON.parse(stdout);
      expect(summary).toMatchObject({
        read: 20,
        queued: 10,
        stopped: { line: 11, code: 'BACKEND_UNAVAILABLE' },
        error: { code: 'BACKEND_UNAVAILABLE' },
      });
      expect(stderr).toMatch(/cairn: error \[BACKEND_UNAVAILABLE\]/);
    } finally {
      await own.close().catch(() => {});
    }
  });

  it('a worker stops on SIGTERM while Redis is down, instead of waiting for it to come back', async () => {
    const own = await startRedisServer();
    try {
      const w = spawn(process.execPath, [MAIN, 'worker', '--shutdown-timeout', '2'], {
        env: { ...process.env, ...env, REDIS_URL: own.url },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      workers.push(w);
      let log = '';
      w.stderr!.on('data', (d) => {
        log += d;
      });
      await until(
        () => log,
        (l) => l.includes('worker started'),
        'the worker to start',
      );
      await own.close();
      const exited = once(w, 'exit');
      w.kill('SIGTERM');
      // Bounded by the shutdown timeout plus a few bounded Redis steps; without the bounds it never exits.
      const [code] = (await Promise.race([
        exited,
        new Promise((_, reject) => setTimeout(() => reject(new Error(`still running:\n${log}`)), 30_000)),
      ])) as [number | null];
      expect(code, log).toBe(0);
      // Usually `graceful: false` (nothing can be reported done without Redis). A loaded machine can deliver
      // the signal before the worker's connection has seen Redis go (CI did once: EPIPE logged, status still
      // ready): its close then resolves as a graceful one. Either way it stops, which is what is guarded.
      expect(log).toMatch(/"graceful":(false|true).*"msg":"worker stopped"/);
      expect(log).not.toContain('did not stop in time');
    } finally {
      await own.close().catch(() => {});
    }
  });

  it('compact with REDIS_URL is refused by name before it opens the folder: the deployment holds no lock it could see', () => {
    expect(cairn(['ingest', corpus(3)], { REDIS_URL: '' }).code).toBe(0);
    const r = cairn(['compact']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(
      /\[INVALID_INPUT\]: cairn compact rewrites the whole data folder .* run it with REDIS_URL unset/,
    );
    // As an embedded folder, everything else stopped, it compacts.
    expect(cairn(['compact', '--json'], { REDIS_URL: '' }).code).toBe(0);
  });

  it('worker and dead-letters without REDIS_URL fail with a message naming it', () => {
    for (const args of [['worker'], ['dead-letters']]) {
      const r = cairn(args, { REDIS_URL: '' });
      expect(r.code).not.toBe(0);
      expect(r.stderr).toMatch(/REDIS_URL/);
    }
  });

  it('an unknown stage and a dead Redis are named in the error', () => {
    const bad = cairn(['worker', '--stages', 'capture,bogus']);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/unknown stage "bogus"/);
    const dead = cairn(['ingest', corpus(3)], { REDIS_URL: 'redis://127.0.0.1:1' });
    expect(dead.code).not.toBe(0);
    expect(dead.stderr).toMatch(/BACKEND_UNAVAILABLE|redis/i);
    // stats still prints what cairn.db knows, says the queue depths are unknown, and exits 1.
    expect(cairn(['ingest', corpus(3)], { REDIS_URL: '' }).code).toBe(0);
    const stats = cairn(['stats', '--json'], { REDIS_URL: 'redis://127.0.0.1:1' });
    expect(stats.code).toBe(1);
    expect(JSON.parse(stats.stdout)).toMatchObject({ namespaces: { proj: { stored: 3 } }, queues: null });
    expect(stats.stderr).toMatch(
      /\[BACKEND_UNAVAILABLE\]: queue depths unknown: Redis at redis:\/\/127\.0\.0\.1:1 is unreachable/,
    );
    const letters = cairn(['dead-letters'], { REDIS_URL: 'redis://127.0.0.1:1' });
    expect(letters.code).toBe(1);
    expect(letters.stderr).toMatch(/\[BACKEND_UNAVAILABLE\]: Redis at .* is unreachable/);
  });
});

describe('cairn reindex (embedded)', () => {
  it('is resumable: a SIGKILLed run keeps its vectors and the next run computes only the rest', async () => {
    const n = 20_000;
    const local = { REDIS_URL: '' };
    expect(cairn(['ingest', corpus(n), '--no-embed'], local).code).toBe(0);
    const child = spawn(
      process.execPath,
      [MAIN, 'reindex', '--embedder', 'hash:256', '--batch-size', '256'],
      {
        env: { ...process.env, ...env, ...local },
        stdio: ['ignore', 'ignore', 'pipe'],
      },
    );
    workers.push(child);
    const exited = once(child, 'exit');
    // Kill it at its first progress line (done / rate / ETA), which it prints once a second.
    let progress = '';
    await new Promise<void>((resolve) => {
      child.stderr!.on('data', (d) => {
        progress += d;
        if (/reindex cairn-hash-v1\/256: \d+\/20000 .*\/s/.test(progress)) resolve();
      });
      child.on('exit', () => resolve());
    });
    child.kill('SIGKILL');
    await exited;
    const mid = JSON.parse(cairn(['spaces', '--json'], local).stdout).spaces.find(
      (s: { id: string }) => s.id === 'cairn-hash-v1/256',
    );
    expect(mid.active).toBe(false);
    const done = JSON.parse(cairn(['reindex', '--embedder', 'hash:256', '--json'], local).stdout);
    expect(done).toMatchObject({ embedded: n, failed: 0, activated: true, mode: 'embedded' });
    // Nothing is embedded twice: this run computed exactly what the killed one had not.
    expect(done.computed).toBe(n - mid.progress.embedded);
  }, 120_000);
});
