import { randomUUID } from 'node:crypto';
import { CairnError } from '@cairn/core';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { assertDeploymentFolder, bindDataFolder } from '../src/distributed/data-folder-binding.js';
import { JOB_CATALOG } from '../src/distributed/job-catalog.js';
import {
  assertRedisReachable,
  DEFAULT_QUEUE_TOPOLOGY,
  jobOptions,
  QueueTopology,
  queueName,
  redisConnection,
  shardOf,
} from '../src/distributed/queue-topology.js';
import { eventually, sleep, useRedisServer } from './helpers.js';

const DEAD_URL = 'redis://127.0.0.1:1';

/** Runs `fn`, which must reject with a CairnError, and returns that error. */
async function cairnErrorFrom(fn: () => Promise<unknown>): Promise<CairnError> {
  try {
    await fn();
  } catch (err) {
    expect(err).toBeInstanceOf(CairnError);
    return err as CairnError;
  }
  throw new Error('expected a CairnError, but nothing was thrown');
}

describe('shardOf', () => {
  it('is stable and within range', () => {
    for (const shards of [1, 2, 3, 4, 7, 16, 1024]) {
      for (let i = 0; i < 50; i++) {
        const ns = `team/${i}`;
        const s = shardOf(ns, shards);
        expect(Number.isInteger(s)).toBe(true);
        expect(s).toBeGreaterThanOrEqual(0);
        expect(s).toBeLessThan(shards);
        expect(shardOf(ns, shards)).toBe(s);
      }
    }
    expect(shardOf('anything', 1)).toBe(0);
  });

  it('is a pure function of the namespace (every process routes it the same way)', () => {
    // Pinned values (first 4 bytes of SHA-256, big-endian, modulo shards): a change of hash would
    // reroute every namespace of a running deployment.
    expect([shardOf('team/alpha', 4), shardOf('team/beta', 4), shardOf('', 4)]).toEqual([1, 1, 2]);
    expect([shardOf('team/alpha', 1024), shardOf('team/beta', 1024)]).toEqual([257, 989]);
    const again = Array.from({ length: 20 }, (_, i) => shardOf(`ns-${i}`, 8));
    expect(Array.from({ length: 20 }, (_, i) => shardOf(`ns-${i}`, 8))).toEqual(again);
  });

  it('spreads many namespaces across all shards', () => {
    const shards = 8;
    const counts = new Array<number>(shards).fill(0);
    const n = 4_000;
    for (let i = 0; i < n; i++) counts[shardOf(`tenant-${i}/agent-${i % 7}`, shards)]!++;
    // A uniform hash gives 500 each; every shard must get a fair share (well within 4 sigma).
    for (const c of counts) {
      expect(c).toBeGreaterThan(n / shards / 2);
      expect(c).toBeLessThan((n / shards) * 1.5);
    }
  });
});

describe('queue names and job options', () => {
  it('names capture, embed and one index queue per shard', () => {
    expect(queueName('capture')).toBe('capture');
    expect(queueName('embed', 3)).toBe('embed');
    expect(queueName('index', 3)).toBe('index-3');
    expect(queueName('index')).toBe('index-0');
  });

  it('takes attempts from the catalog and keeps failed jobs as dead letters', () => {
    for (const name of ['capture', 'embed', 'index'] as const) {
      const o = jobOptions(name)!;
      expect(o.attempts).toBe(JOB_CATALOG[name].retry.attempts);
      expect(o.backoff).toEqual({ type: 'cairn-capped' });
      expect(o.removeOnFail).toBe(false);
    }
  });
});

describe('QueueTopology against a dead Redis', () => {
  it('fails with BACKEND_UNAVAILABLE naming Redis', async () => {
    const err = await cairnErrorFrom(() => QueueTopology.connect({ redisUrl: DEAD_URL }));
    expect(err.code).toBe('BACKEND_UNAVAILABLE');
    expect(err.message).toMatch(/^Redis at redis:\/\/127\.0\.0\.1:1 is unreachable: /);
    expect(err.data.backend).toBe('redis');
  });

  it('does not repeat the password of the URL in its message', async () => {
    const err = await cairnErrorFrom(() =>
      QueueTopology.connect({ redisUrl: 'redis://user:s3cret-pw@127.0.0.1:1/0' }),
    );
    expect(err.code).toBe('BACKEND_UNAVAILABLE');
    expect(err.message).toContain('redis://***@127.0.0.1:1/0');
    expect(err.message).not.toContain('s3cret-pw');
  });

  it('assertRedisReachable fails the same way for a producer connection', async () => {
    const conn = redisConnection(DEAD_URL, 'producer');
    try {
      const err = await cairnErrorFrom(() => assertRedisReachable(conn, DEAD_URL, 2_000));
      expect(err.code).toBe('BACKEND_UNAVAILABLE');
      expect(err.message).toContain('Redis');
    } finally {
      conn.disconnect();
    }
  });
});

describe('QueueTopology against a real Redis', () => {
  const redis = useRedisServer();
  const open: Array<{ close(): Promise<void> | void }> = [];
  afterEach(async () => {
    for (const o of open.splice(0).reverse()) await o.close();
  });

  async function connect(opts: { prefix: string; shards?: number }): Promise<QueueTopology> {
    const t = await QueueTopology.connect({ redisUrl: redis.url, ...opts });
    open.push(t);
    return t;
  }

  function client(): Redis {
    const c = new Redis(redis.url);
    open.push({ close: () => c.disconnect() });
    return c;
  }

  it('defaults to the cairn prefix and 4 shards', async () => {
    const t = await QueueTopology.connect({ redisUrl: redis.url });
    open.push(t);
    expect(t.opts).toEqual({ redisUrl: redis.url, ...DEFAULT_QUEUE_TOPOLOGY });
    expect(t.all().map((q) => q.queue.name)).toEqual([
      'capture',
      'embed',
      'index-0',
      'index-1',
      'index-2',
      'index-3',
    ]);
  });

  it('opens capture, embed and index-<n> queues under the given prefix', async () => {
    const prefix = `t-${randomUUID()}`;
    const t = await connect({ prefix, shards: 3 });
    const all = t.all();
    expect(all.map((q) => [q.name, q.queue.name])).toEqual([
      ['capture', 'capture'],
      ['embed', 'embed'],
      ['index', 'index-0'],
      ['index', 'index-1'],
      ['index', 'index-2'],
    ]);
    for (const { queue } of all) expect(queue.opts.prefix).toBe(prefix);
    // One queue object per name.
    expect(t.queue('index', 2)).toBe(all[4]!.queue);
    expect(t.queue('embed')).toBe(all[1]!.queue);

    for (const { queue } of all) await queue.add('probe', { from: queue.name }, { jobId: 'probe' });
    const keys = await client().keys(`${prefix}:*`);
    const queuesInRedis = new Set(keys.map((k) => k.split(':')[1]));
    // Beside the queues, the deployment's shard count (see the test below).
    expect([...queuesInRedis].sort()).toEqual([
      'capture',
      'embed',
      'index-0',
      'index-1',
      'index-2',
      'shards',
    ]);
    for (const { name, queue } of all) {
      const job = await queue.getJob('probe');
      expect(job?.data).toEqual({ from: queue.name });
      expect(job?.opts.attempts).toBe(JOB_CATALOG[name].retry.attempts);
    }
  });

  it('keeps two prefixes on one Redis apart', async () => {
    const a = await connect({ prefix: `a-${randomUUID()}`, shards: 1 });
    const b = await connect({ prefix: `b-${randomUUID()}`, shards: 1 });
    await a.queue('capture').add('capture', { n: 1 });
    expect(await a.queue('capture').count()).toBe(1);
    expect(await b.queue('capture').count()).toBe(0);
  });

  /** Connections the server holds, other than `observer`'s own. */
  async function otherClients(observer: Redis): Promise<number> {
    const list = (await observer.client('LIST')) as string;
    return list.trim().split('\n').length - 1;
  }

  it('closes its queues and its connection', async () => {
    const observer = client();
    // Earlier tests of this file closed theirs in afterEach; wait until the server has seen them go.
    await eventually(async () => (await otherClients(observer)) === 0);
    const t = await QueueTopology.connect({ redisUrl: redis.url, prefix: `c-${randomUUID()}`, shards: 2 });
    for (const { queue } of t.all()) await queue.waitUntilReady();
    expect(await otherClients(observer)).toBeGreaterThan(0);
    await t.close();
    await eventually(async () => (await otherClients(observer)) === 0);
  });

  it('refuses a shard count out of range without leaving a connection behind', async () => {
    const observer = client();
    await eventually(async () => (await otherClients(observer)) === 0);
    for (const shards of [0, 1025, 1.5])
      await expect(QueueTopology.connect({ redisUrl: redis.url, shards })).rejects.toMatchObject({
        code: 'INVALID_INPUT',
        data: { field: 'shards' },
      });
    await sleep(100);
    expect(await otherClients(observer)).toBe(0);
  });

  it("refuses a process whose shard count is not its deployment's, by name, leaving no connection behind", async () => {
    const observer = client();
    const prefix = `s-${randomUUID()}`;
    await connect({ prefix, shards: 4 });
    await expect(connect({ prefix, shards: 4 })).resolves.toBeInstanceOf(QueueTopology);
    await eventually(async () => (await otherClients(observer)) === 2);
    const err = await cairnErrorFrom(() => QueueTopology.connect({ redisUrl: redis.url, prefix, shards: 8 }));
    expect(err).toMatchObject({ code: 'INVALID_INPUT', data: { field: 'shards' } });
    expect(err.message).toContain('routes namespaces over 4 index shards and this process was given 8');
    expect(err.message).toContain('set CAIRN_SHARDS=4');
    await sleep(100);
    expect(await otherClients(observer)).toBe(2);
    // Another deployment on the same Redis keeps its own count.
    await expect(connect({ prefix: `${prefix}-other`, shards: 8 })).resolves.toBeInstanceOf(QueueTopology);
  });
});

describe('assertDeploymentFolder', () => {
  const redis = useRedisServer();
  const open: Array<{ close(): Promise<void> | void }> = [];
  afterEach(async () => {
    for (const o of open.splice(0)) await o.close();
  });

  it('refuses a missing folder once the deployment has one, and takes one made while the binding was read', async () => {
    const t = await QueueTopology.connect({ redisUrl: redis.url, prefix: `f-${randomUUID()}` });
    open.push(t);
    const path = '/srv/cairn-data';
    // A new deployment: nothing recorded, a missing folder is its first.
    await expect(assertDeploymentFolder(t, path, () => false)).resolves.toBeUndefined();
    await bindDataFolder(t, { id: 'folder-1', path });
    const err = await cairnErrorFrom(() => assertDeploymentFolder(t, path, () => false));
    expect(err).toMatchObject({ code: 'NOT_FOUND', data: { field: 'dataDir' } });
    expect(err.message).toContain('it was deleted or its volume replaced');
    // Started beside the deployment's first worker: no folder when it looked, the worker's folder and its
    // binding made before it read the binding. The folder is there: not a deleted one.
    let looks = 0;
    await expect(assertDeploymentFolder(t, path, () => looks++ > 0)).resolves.toBeUndefined();
    expect(looks).toBe(2);
  });
});
