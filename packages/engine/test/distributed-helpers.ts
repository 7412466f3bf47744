import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CaptureProducer, QueueTopology } from '@cairn/pipeline/distributed';
import { type RedisServer, startRedisServer } from '@cairn/pipeline/testing';
import { afterEach } from 'vitest';
import { StageWorkerHost, type StageWorkerHostOptions } from '../src/distributed.js';
import { CairnEngine } from '../src/index.js';

/** Fast settings so stalled jobs, lost leases and sweeps happen within a test's patience. */
export const FAST = {
  lockDurationMs: 2_000,
  leaseTtlMs: 1_500,
  reconcileIntervalMs: 500,
  reconcileGraceMs: 300,
  persistIntervalMs: 0,
} satisfies Partial<StageWorkerHostOptions>;

/**
 * One isolated distributed deployment per test: a private redis-server (real, from PATH), a unique queue
 * prefix, a data folder; everything opened through it is closed and deleted after the test.
 */
export function useDeployment() {
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c().catch(() => {});
  });
  return {
    async create(redisOpts: { appendonly?: boolean } = {}) {
      const redis: RedisServer = await startRedisServer(redisOpts);
      cleanups.push(() => redis.close());
      const dataDir = mkdtempSync(join(tmpdir(), 'cairn-dist-'));
      cleanups.push(async () => rmSync(dataDir, { recursive: true, force: true }));
      const prefix = `test-${randomUUID()}`;
      const shards = 2;
      const d = {
        redis,
        dataDir,
        prefix,
        shards,
        queue: { prefix, shards },
        async workers(opts: Partial<StageWorkerHostOptions> = {}) {
          const host = await StageWorkerHost.start({
            dataDir,
            redisUrl: redis.url,
            stages: ['capture', 'embed', 'index'],
            queue: { prefix, shards },
            ...FAST,
            ...(process.env.CAIRN_TEST_LOG
              ? { log: (l: string, m: string, d?: unknown) => console.error(l, m, JSON.stringify(d)) }
              : {}),
            ...opts,
          });
          cleanups.push(() => host.close(2_000).then(() => {}));
          return host;
        },
        async producer(wait: 'stored' | 'queued' = 'stored') {
          const topology = await QueueTopology.connect({ redisUrl: redis.url, prefix, shards });
          const producer = new CaptureProducer(topology, { wait, batchSize: 100 });
          cleanups.push(async () => {
            await producer.close();
            await topology.close();
          });
          return { producer, topology };
        },
        async reader(env?: Record<string, string | undefined>) {
          const engine = await CairnEngine.open({
            dataDir,
            pipeline: 'external',
            waitForIndex: true,
            refreshIntervalMs: 100,
            env,
          });
          cleanups.push(() => engine.close());
          return engine;
        },
      };
      return d;
    },
  };
}

/** Polls until `check` returns true (no timing assertions: the test's own timeout is the limit). */
export async function eventually(check: () => boolean | Promise<boolean>, everyMs = 50): Promise<void> {
  for (;;) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

export function memories(n: number, namespace = 'team/alpha', from = 0) {
  return Array.from({ length: n }, (_, i) => ({
    namespace,
    id: `m${from + i}`,
    kind: 'observation',
    text: `observation ${from + i}: token${from + i}q about the billing service and deploy ${from + i}`,
  }));
}
