import { randomUUID } from 'node:crypto';
import { Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queueCounts } from '../src/distributed/queue-inspection.js';
import { QueueTopology } from '../src/distributed/queue-topology.js';
import { type RedisServer, startRedisServer } from '../src/testing/redis-server.js';

// Its own redis-server: one test changes the default user's ACL.
let redis: RedisServer;
beforeAll(async () => {
  redis = await startRedisServer();
});
afterAll(async () => {
  await redis?.close();
});

describe('queueCounts', () => {
  it("counts each queue's workers, and says unknown rather than failing when Redis refuses CLIENT LIST", async () => {
    const topology = await QueueTopology.connect({
      redisUrl: redis.url,
      prefix: `qi-${randomUUID()}`,
      shards: 1,
    });
    const capture = topology.queue('capture');
    const worker = new Worker(capture.name, async () => {}, {
      connection: new Redis(redis.url, { maxRetriesPerRequest: null }),
      prefix: topology.opts.prefix,
    });
    try {
      await worker.waitUntilReady();
      await capture.add('capture', { memories: [] });
      let counts = await queueCounts(topology);
      for (let i = 0; i < 50 && counts.capture!.workers === 0; i++) {
        await new Promise((r) => setTimeout(r, 100));
        counts = await queueCounts(topology);
      }
      expect(counts.capture!.workers).toBeGreaterThanOrEqual(1);
      expect(counts.embed!.workers).toBe(0);

      // A managed Redis whose ACL refuses CLIENT LIST: the job counts still come, the workers are unknown.
      const admin = new Redis(redis.url);
      await admin.call('ACL', 'SETUSER', 'default', '-client|list');
      admin.disconnect();
      const refused = await queueCounts(topology);
      expect(refused.capture!.workers).toBeNull();
      expect(
        refused.capture!.waiting + refused.capture!.active + refused.capture!.completed,
      ).toBeGreaterThanOrEqual(1);
    } finally {
      await worker.close();
      await topology.close();
    }
  }, 60_000);
});
