import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  assertDeploymentFolder,
  bindDataFolder,
  dataFolderKey,
} from '../src/distributed/data-folder-binding.js';
import { keepDeploymentRecorded } from '../src/distributed/deployment-records.js';
import { QueueTopology, shardCountKey } from '../src/distributed/queue-topology.js';
import { type RedisServer, startRedisServer } from '../src/testing/index.js';
import { eventually } from './helpers.js';

describe('keepDeploymentRecorded', () => {
  let redis: RedisServer;
  const open: Array<() => unknown> = [];
  beforeAll(async () => {
    redis = await startRedisServer();
  });
  afterAll(async () => {
    await redis.close();
  });
  afterEach(async () => {
    for (const close of open.splice(0).reverse()) await close();
  });

  async function deployment(shards = 4) {
    const t = await QueueTopology.connect({ redisUrl: redis.url, prefix: `r-${randomUUID()}`, shards });
    open.push(() => t.close());
    return t;
  }

  it('records the folder and the shard count again after a FLUSHALL, so a mistyped folder is refused again', async () => {
    const t = await deployment();
    const folder = { id: 'folder-1', path: '/srv/cairn-data' };
    await bindDataFolder(t, folder);
    const logged: Array<{ level: string; msg: string }> = [];
    open.push(keepDeploymentRecorded(t, folder, (level, msg) => logged.push({ level, msg }), 50));
    await t.connection.flushall();
    // Without the keeper a worker on a mistyped, missing folder was accepted here, and made a new folder.
    await eventually(async () => (await t.connection.get(dataFolderKey(t))) !== null);
    await eventually(async () => (await t.connection.get(shardCountKey(t.opts.prefix))) === '4');
    await expect(assertDeploymentFolder(t, '/srv/cairn-dta', () => false)).rejects.toMatchObject({
      code: 'NOT_FOUND',
    });
    await expect(bindDataFolder(t, { id: 'folder-2', path: '/srv/other' })).rejects.toMatchObject({
      code: 'INVALID_INPUT',
    });
    expect(logged.filter((l) => l.level === 'warn').map((l) => l.msg)).toEqual([
      expect.stringContaining('recorded again'),
      expect.stringContaining('recorded again'),
    ]);
  });

  it('records them again when a Redis restarted without its data comes back', async () => {
    const t = await deployment();
    const folder = { id: 'folder-1', path: '/srv/cairn-data' };
    await bindDataFolder(t, folder);
    // A tick far away: only the reconnect can record them.
    open.push(keepDeploymentRecorded(t, folder, () => {}, 3_600_000));
    await redis.stop('SIGKILL');
    await redis.start();
    await eventually(async () => {
      try {
        return JSON.parse((await t.connection.get(dataFolderKey(t))) ?? '{}').id === 'folder-1';
      } catch {
        return false;
      }
    }, 100);
    expect(await t.connection.get(shardCountKey(t.opts.prefix))).toBe('4');
  });

  it("says once, as an error, that another process's folder or shard count was recorded meanwhile", async () => {
    const t = await deployment();
    const folder = { id: 'folder-1', path: '/srv/cairn-data' };
    await bindDataFolder(t, folder);
    const logged: Array<{ level: string; msg: string }> = [];
    open.push(keepDeploymentRecorded(t, folder, (level, msg) => logged.push({ level, msg }), 30));
    // A newcomer recorded its own between a flush and this process's next tick.
    await t.connection.set(dataFolderKey(t), JSON.stringify({ id: 'folder-2', path: '/srv/typo', since: 1 }));
    await t.connection.set(shardCountKey(t.opts.prefix), '8');
    await eventually(() => logged.filter((l) => l.level === 'error').length === 2);
    // Several more ticks: nothing said twice.
    await new Promise((r) => setTimeout(r, 200));
    const errors = logged.filter((l) => l.level === 'error').map((l) => l.msg);
    expect(errors).toHaveLength(2);
    expect(errors.join('\n')).toContain('now records 8 index shards, and this process routes over 4');
    expect(errors.join('\n')).toContain('/srv/typo');
    // The records are left as they are: the message tells the operator how to put them right.
    expect(await t.connection.get(shardCountKey(t.opts.prefix))).toBe('8');
  });

  it('stops with its stop function', async () => {
    const t = await deployment();
    const folder = { id: 'folder-1', path: '/srv/cairn-data' };
    await bindDataFolder(t, folder);
    const stop = keepDeploymentRecorded(t, folder, () => {}, 20);
    stop();
    await t.connection.del(dataFolderKey(t));
    await new Promise((r) => setTimeout(r, 200));
    expect(await t.connection.get(dataFolderKey(t))).toBeNull();
  });
});
