import { type ChildProcess, spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { type AddressInfo, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { QueueTopology } from '@cairn/pipeline/distributed';
import { type RedisServer, startRedisServer } from '@cairn/pipeline/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MAIN, postJson, servedUrl, startCli } from './cli-process.js';

// `cairn serve` as a user starts it: a real process, real HTTP on loopback; in distributed mode with a
// private redis-server and a `cairn worker`.

const KEY = 'test-key-0123456789';
const ADMIN = 'admin-key-0123456789';
let dir: string;
const children: ChildProcess[] = [];
const cleanups: Array<() => Promise<void>> = [];

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'cairn-serve-'));
});
afterEach(async () => {
  for (const c of children.splice(0)) {
    if (c.exitCode === null && c.signalCode === null) {
      const exited = once(c, 'exit');
      c.kill('SIGKILL');
      await exited;
    }
  }
  for (const c of cleanups.splice(0).reverse()) await c();
  rmSync(dir, { recursive: true, force: true });
});

function start(args: string[], env: Record<string, string> = {}): ChildProcess {
  const c = startCli(args, { CAIRN_DATA_DIR: join(dir, 'data'), ...env });
  children.push(c);
  return c;
}

/** Starts `cairn serve --port 0` and resolves with its base URL, read from its start-up line. */
async function serve(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ url: string; child: ChildProcess }> {
  const child = start(['serve', '--port', '0', ...args], env);
  return { url: await servedUrl(child), child };
}

function post(url: string, body: unknown, key: string | null = KEY) {
  return postJson(url, body, key);
}

describe('cairn serve (embedded)', () => {
  it('serves with API keys from CAIRN_API_KEYS; 401 without one; SIGTERM stops it cleanly', async () => {
    const { url, child } = await serve([], { CAIRN_API_KEYS: `${KEY}=proj` });
    // It listens once warm: the key catalog is loaded before the first request can come.
    const ready = (await (await fetch(`${url}/readyz`)).json()) as {
      checks: Record<string, { detail?: string }>;
    };
    expect(ready.checks.catalog?.detail).toBe('loaded');
    expect((await post(`${url}/v1/search`, { namespace: 'proj', query: 'x' }, null)).status).toBe(401);
    const w = await post(`${url}/v1/memories`, {
      namespace: 'proj',
      text: 'the flaky test is in auth.spec.ts',
    });
    expect(w.status).toBe(201);
    const s = await post(`${url}/v1/search`, { namespace: 'proj', query: 'flaky auth test' });
    expect(s.body.hits[0].id).toBe(w.body.items[0].id);
    expect((await post(`${url}/v1/search`, { namespace: 'other', query: 'x' })).status).toBe(403);
    // The server owns the data folder: the CLI reads beside it, and stores beside it as its follower.
    const cli = (args: string[]) =>
      spawnSync(process.execPath, [MAIN, ...args], {
        encoding: 'utf8',
        env: { ...process.env, CAIRN_DATA_DIR: join(dir, 'data') },
      });
    const search = cli(['search', 'flaky auth test', '-n', 'proj', '--json']);
    expect(JSON.parse(search.stdout).hits[0].id).toBe(w.body.items[0].id);
    // cairn add stores beside the server (a follower); the server finds it at once and embeds it.
    const add = cli(['add', 'the release train leaves on Thursdays', '-n', 'proj', '--json']);
    expect(add.status, add.stderr).toBe(0);
    const addedId = JSON.parse(add.stdout).id as string;
    const found = await post(`${url}/v1/search`, { namespace: 'proj', query: 'release train Thursdays' });
    expect(found.body.hits[0].id).toBe(addedId);
    let embedded = 0;
    for (let i = 0; i < 50 && embedded < 2; i++) {
      await new Promise((r) => setTimeout(r, 200));
      const stats = await fetch(`${url}/v1/stats`, { headers: { authorization: `Bearer ${KEY}` } });
      embedded = ((await stats.json()) as { namespaces: Record<string, { embedded: number }> }).namespaces
        .proj!.embedded;
    }
    expect(embedded).toBe(2);
    let stderr = '';
    child.stderr!.on('data', (b: Buffer) => {
      stderr += b.toString();
    });
    const exited = once(child, 'exit');
    child.kill('SIGTERM');
    expect((await exited)[0]).toBe(0);
    // It says what it waits for, and how to stop at once.
    expect(stderr).toContain('Stopping: finishing requests, then saving vector indexes');
  });

  it('cairn ingest beside it stores as its follower and waits for it to embed; a server killed meanwhile leaves the ingest the writer, which finishes', async () => {
    const { url, child } = await serve(['--no-auth'], { CAIRN_API_KEYS: '' });
    const cli = (args: string[]) =>
      spawnSync(process.execPath, [MAIN, ...args], {
        encoding: 'utf8',
        env: { ...process.env, CAIRN_DATA_DIR: join(dir, 'data') },
      });
    const file = (name: string, from: number) => {
      const path = join(dir, name);
      const lines = Array.from({ length: 200 }, (_, i) =>
        JSON.stringify({
          namespace: 'proj',
          id: `m${from + i}`,
          text: `canary ${from + i}: rollback of shard ${i % 7}`,
        }),
      );
      writeFileSync(path, `${lines.join('\n')}\n`);
      return path;
    };
    const first = cli(['ingest', file('first.jsonl', 0), '--json']);
    expect(first.status, first.stderr).toBe(0);
    const summary = JSON.parse(first.stdout);
    expect(summary).toMatchObject({ stored: 200, rejected: 0, embedded: true, pending: 0 });
    expect(summary.writer).toContain(`process ${child.pid}`);
    // The server embedded them: its own counts say so when the command returns, and its vector leg finds one.
    const stats = (await (await fetch(`${url}/v1/stats`)).json()) as {
      namespaces: Record<string, { stored: number; embedded: number }>;
    };
    expect(stats.namespaces.proj).toMatchObject({ stored: 200, embedded: 200 });
    const hit = await post(
      `${url}/v1/search`,
      { namespace: 'proj', query: 'canary 17 rollback', explain: 'hits' },
      null,
    );
    expect(hit.body.hits[0]).toMatchObject({ id: 'm17' });
    expect(hit.body.hits[0].explain.vecRank).toBeGreaterThan(0);
    // The demo too: it stores its sample beside the server, which embeds it; its searches show both legs.
    const demo = cli(['demo']);
    expect(demo.status, demo.stderr).toBe(0);
    expect(demo.stdout).toMatch(/Ingested 31 memories/);
    expect(demo.stdout).toMatch(/"vecRank": \d+/);
    const human = cli(['ingest', file('again.jsonl', 0)]);
    expect(human.stdout).toContain('unchanged 200');
    expect(human.stdout).toContain("all embedded by the folder's running writer");

    // The server frozen (alive, holding the role, embedding nothing): an ingest stores and waits; the server
    // killed, the ingest takes the writer role over and embeds and indexes what it stored itself.
    child.kill('SIGSTOP');
    const second = start(['ingest', file('second.jsonl', 200), '--json']);
    let out = '';
    second.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
    });
    const done = once(second, 'exit');
    for (let i = 0; i < 300; i++) {
      const now = cli(['stats', '--json']);
      if (now.status === 0 && JSON.parse(now.stdout).namespaces.proj?.stored === 400) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const killed = once(child, 'exit');
    child.kill('SIGKILL');
    await killed;
    const [code] = await done;
    expect(code).toBe(0);
    expect(JSON.parse(out)).toMatchObject({ stored: 200, embedded: true, writer: null, pending: 0 });
    const after = JSON.parse(cli(['stats', '--json']).stdout).namespaces.proj;
    expect(after).toMatchObject({ stored: 400, embedded: 400, indexed: 400, pending: 0 });
  });

  it('refuses to start without keys unless --no-auth, and --no-auth only on loopback', () => {
    const noKeys = spawnSync(process.execPath, [MAIN, 'serve', '--port', '0'], {
      encoding: 'utf8',
      env: { ...process.env, CAIRN_DATA_DIR: join(dir, 'data'), CAIRN_API_KEYS: '' },
    });
    expect(noKeys.status).not.toBe(0);
    expect(noKeys.stderr).toMatch(/CAIRN_API_KEYS/);
    const open = spawnSync(
      process.execPath,
      [MAIN, 'serve', '--port', '0', '--no-auth', '--host', '0.0.0.0'],
      {
        encoding: 'utf8',
        env: { ...process.env, CAIRN_DATA_DIR: join(dir, 'data'), CAIRN_API_KEYS: '' },
      },
    );
    expect(open.status).not.toBe(0);
    expect(open.stderr).toMatch(/loopback/);
    // Refused before the folder was opened: a mistyped --data-dir is not left behind.
    expect(existsSync(join(dir, 'data'))).toBe(false);
  });

  it("names a port already in use as the user's to change, not an internal error, and exits 2", async () => {
    const taken = createServer();
    await new Promise<void>((r) => taken.listen(0, '127.0.0.1', r));
    cleanups.push(() => new Promise<void>((r) => taken.close(() => r())));
    const port = (taken.address() as AddressInfo).port;
    const folder = join(dir, 'never-made');
    const r = spawnSync(process.execPath, [MAIN, 'serve', '--port', String(port), '--no-auth'], {
      encoding: 'utf8',
      env: { ...process.env, CAIRN_DATA_DIR: folder, CAIRN_API_KEYS: '' },
    });
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(new RegExp(`INVALID_INPUT.*port ${port} on 127\\.0\\.0\\.1 is in use`));
    expect(r.stderr).not.toMatch(/INTERNAL/);
    // Refused before the data folder was opened: a mistyped command leaves no folder behind.
    expect(existsSync(folder)).toBe(false);
  });
});

describe('cairn serve --processes (embedded)', () => {
  it('serves from several processes: writes reach the folder owner, every process sees them, SIGTERM stops all', async () => {
    const { url, child } = await serve(['--processes', '2'], { CAIRN_API_KEYS: `${KEY}=proj;${ADMIN}=*` });
    const w = await post(`${url}/v1/memories`, {
      namespace: 'proj',
      memories: [
        { id: 'p1', text: 'the nightly export times out on large tenants' },
        { id: 'p2', text: 'export jobs run at 02:00 UTC' },
      ],
    });
    expect(w.status).toBe(201);
    expect(w.body.counts.stored).toBe(2);
    // Connections spread over the children; each one finds the new memories.
    for (let i = 0; i < 6; i++) {
      const s = await post(`${url}/v1/search`, { namespace: 'proj', query: 'nightly export' });
      expect(s.body.hits.map((h: { id: string }) => h.id)).toContain('p1');
    }
    const del = await fetch(`${url}/v1/memories/p2?namespace=proj`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${KEY}` },
    });
    expect(del.status).toBe(200);
    const gone = await post(`${url}/v1/memories/get`, { namespace: 'proj', ids: ['p2'] });
    expect(gone.body.missing).toEqual(['p2']);
    // A reindex asked of any process is run by the folder's owner; every process switches to the new space.
    for (const embedder of ['hash:64', 'hash:96']) {
      const started = await post(`${url}/v1/spaces/reindex`, { embedder }, ADMIN);
      expect(started.status, JSON.stringify(started.body)).toBe(202);
      expect(started.body).toMatchObject({
        space: { id: `cairn-hash-v1/${embedder.slice(5)}` },
        started: true,
      });
    }
    const deadline = Date.now() + 60_000;
    let active = '';
    while (active !== 'cairn-hash-v1/96' && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 200));
      const res = await fetch(`${url}/v1/spaces`, { headers: { authorization: `Bearer ${ADMIN}` } });
      const body = (await res.json()) as { spaces: Array<{ id: string; active: boolean }> };
      active = body.spaces.find((x) => x.active)?.id ?? '';
    }
    expect(active).toBe('cairn-hash-v1/96');
    for (let i = 0; i < 4; i++) {
      const s = await post(`${url}/v1/search`, { namespace: 'proj', query: 'nightly export' });
      expect(s.body.hits.map((h: { id: string }) => h.id)).toContain('p1');
      expect(s.body.degraded).toEqual([]);
    }
    const exited = once(child, 'exit');
    child.kill('SIGTERM');
    expect((await exited)[0]).toBe(0);
    // The folder is free again: a new writer may open it.
    const cli = spawnSync(process.execPath, [MAIN, 'ingest', '-'], {
      input: '{"namespace":"proj","text":"after shutdown"}\n',
      encoding: 'utf8',
      env: { ...process.env, CAIRN_DATA_DIR: join(dir, 'data') },
    });
    expect(cli.status, cli.stderr).toBe(0);
  });
});

describe('cairn serve (distributed)', () => {
  let redis: RedisServer;
  beforeEach(async () => {
    redis = await startRedisServer();
    cleanups.push(() => redis.close());
  });

  it('writes go through the capture queue (201 once stored, 202 once queued) and searches see them', async () => {
    const env = {
      REDIS_URL: redis.url,
      CAIRN_QUEUE_PREFIX: `t-${randomUUID()}`,
      CAIRN_SHARDS: '2',
      CAIRN_API_KEYS: `${KEY}=proj;${ADMIN}=*`,
    };
    const worker = start(['worker', '--stages', 'capture,embed,index'], { ...env, CAIRN_LOG_LEVEL: 'info' });
    let log = '';
    worker.stderr!.on('data', (d) => {
      log += d;
    });
    worker.stdout!.on('data', (d) => {
      log += d;
    });
    const workerLog = () => log.slice(-3_000);
    // A write that waits for "stored" gets a 503 after 30 s without a capture worker; on a loaded CI
    // machine a cold worker can take that long to come up, so the test waits for it as an operator would.
    await new Promise<void>((resolve, reject) => {
      const check = () => {
        if (log.includes('worker started')) resolve();
      };
      worker.stderr!.on('data', check);
      worker.stdout!.on('data', check);
      worker.on('exit', (code) => reject(new Error(`worker exited ${code}: ${workerLog()}`)));
      check();
    });
    // Two stateless API nodes over the same deployment.
    const a = await serve([], env);
    const b = await serve([], env);
    const stored = await post(`${a.url}/v1/memories`, {
      namespace: 'proj',
      id: 'd1',
      text: 'kafka consumer lag alert',
    });
    expect(stored.status, `${JSON.stringify(stored.body)}; worker: ${workerLog()}`).toBe(201);
    expect(stored.body).toMatchObject({ durable: true, items: [{ id: 'd1', status: 'stored' }] });
    const queued = await post(`${a.url}/v1/memories?wait=queued`, {
      namespace: 'proj',
      memories: [{ id: 'd2', text: 'kafka rebalance storm' }],
    });
    expect(queued.status).toBe(202);
    expect(queued.body).toMatchObject({ durable: false, items: [{ id: 'd2', status: 'queued' }] });
    const found = async () => {
      const deadline = Date.now() + 90_000;
      for (;;) {
        const s = await post(`${b.url}/v1/search`, { namespace: 'proj', query: 'kafka' });
        const ids = s.body.hits.map((h: { id: string }) => h.id).sort();
        if (ids.length === 2) return ids;
        if (Date.now() > deadline) {
          const stats = spawnSync(process.execPath, [MAIN, 'stats', '--json'], {
            encoding: 'utf8',
            env: { ...process.env, CAIRN_DATA_DIR: join(dir, 'data'), ...env },
          });
          throw new Error(
            `search on node b still sees ${JSON.stringify(ids)}; stats: ${stats.stdout} ${stats.stderr}; worker: ${workerLog()}`,
          );
        }
        await new Promise((r) => setTimeout(r, 200));
      }
    };
    expect(await found()).toEqual(['d1', 'd2']);
    const ready = await fetch(`${b.url}/readyz`);
    const checks = ((await ready.json()) as { checks: Record<string, { ok: boolean; detail?: string }> })
      .checks;
    expect(checks.redis!.ok).toBe(true);
    // The worker that stored d2 takes the capture queue, and readiness says whether every queue has one.
    expect(checks.workers).toMatchObject({ ok: true, detail: expect.stringMatching(/worker/) });
    const metrics = await (await fetch(`${b.url}/metrics`)).text();
    expect(metrics).toMatch(/cairn_queue_jobs\{queue="capture",state="waiting"\} \d+/);
    expect(metrics).not.toMatch(/state="workers"/);
    expect(Number(/cairn_queue_workers\{queue="capture"\} (\d+)/.exec(metrics)?.[1])).toBeGreaterThanOrEqual(
      1,
    );

    // A job that can never succeed is a dead letter, and an operator's key reads it over the API.
    const topology = await QueueTopology.connect({
      redisUrl: redis.url,
      prefix: env.CAIRN_QUEUE_PREFIX,
      shards: 2,
    });
    try {
      await topology.queue('capture').add('capture', { memories: 'not a list' } as never);
    } finally {
      await topology.close();
    }
    const letters = async () => {
      const res = await fetch(`${b.url}/v1/dead-letters`, { headers: { authorization: `Bearer ${ADMIN}` } });
      return (await res.json()) as { mode: string; dead_letters: Array<{ job: string; reason: string }> };
    };
    let dead = await letters();
    for (let i = 0; i < 300 && dead.dead_letters.length === 0; i++) {
      await new Promise((r) => setTimeout(r, 200));
      dead = await letters();
    }
    expect(dead.mode).toBe('distributed');
    expect(dead.dead_letters[0]).toMatchObject({
      job: 'capture',
      reason: expect.stringMatching(/INVALID_PAYLOAD|memories/),
    });
    const tenant = await fetch(`${b.url}/v1/dead-letters`, { headers: { authorization: `Bearer ${KEY}` } });
    expect(tenant.status).toBe(403);

    // Redis gone: the dead letters are unknown, and the answer names the backend (not an anonymous 500).
    await redis.stop('SIGKILL');
    const down = await fetch(`${b.url}/v1/dead-letters`, { headers: { authorization: `Bearer ${ADMIN}` } });
    expect(down.status).toBe(503);
    // …and says when to try again, as a client that retries 503s (the Python one) waits for.
    expect(down.headers.get('retry-after')).toBe('1');
    expect(((await down.json()) as { error: { code: string } }).error.code).toBe('BACKEND_UNAVAILABLE');
    // The scrape still has every metric but the queues' (it failed whole, or hung, while Redis was down).
    const scrape = await fetch(`${b.url}/metrics`);
    expect(scrape.status).toBe(200);
    const text = await scrape.text();
    expect(text).toMatch(/cairn_memories\{/);
    expect(text).toMatch(/process_resident_memory_bytes \d+/);
    expect(text.split('\n').filter((l) => l.startsWith('cairn_queue'))).toEqual([]);
  }, 120_000);
});
