import { randomUUID } from 'node:crypto';
import type { PendingMemory } from '@cairn/core';
import { type Job, UnrecoverableError, Worker } from 'bullmq';
import { afterEach, describe, expect, it } from 'vitest';
import { parsePayload } from '../src/distributed/job-catalog.js';
import { QueueTopology, redisConnection } from '../src/distributed/queue-topology.js';
import { requeueEmbeds } from '../src/distributed/requeue-embeds.js';
import { embedJobsFor, type SpaceRef } from '../src/distributed/stage-processors.js';
import { eventually, useRedisServer } from './helpers.js';

const SPACE: SpaceRef = { id: 'hash-v1:8', embedder: 'hash', dimensions: 8 };

const pending = (keys: number[], seq = 1): PendingMemory[] =>
  keys.map((key) => ({
    key,
    namespace: 'team/alpha',
    kind: 'observation',
    title: null,
    text: `memory ${key}`,
    contentHash: `hash-${key}`,
    changeSeq: seq,
  }));

describe('requeueEmbeds against a real Redis', () => {
  const redis = useRedisServer();
  const cleanups: Array<() => Promise<void> | void> = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  async function topology(): Promise<QueueTopology> {
    const t = await QueueTopology.connect({ redisUrl: redis.url, prefix: `rq-${randomUUID()}`, shards: 1 });
    cleanups.push(() => t.close());
    return t;
  }

  /** Runs one real BullMQ embed worker over the queue until `jobId` reaches `state`, then closes it. */
  async function drainWith(
    t: QueueTopology,
    jobId: string,
    state: 'completed' | 'failed',
    process: (job: Job) => Promise<unknown>,
  ): Promise<void> {
    const connection = redisConnection(redis.url, 'worker');
    const worker = new Worker('embed', process, { connection, prefix: t.opts.prefix });
    try {
      await eventually(async () => (await t.queue('embed').getJobState(jobId)) === state);
    } finally {
      await worker.close();
      connection.disconnect();
    }
  }

  it('adds one embed job per batch, with an id derived from the space and the memories', async () => {
    const t = await topology();
    const items = pending([1, 2, 3]);
    expect(await requeueEmbeds(t, SPACE, items)).toBe(3);
    const [expected] = embedJobsFor(SPACE, items);
    const jobs = await t.queue('embed').getJobs(['waiting']);
    expect(jobs.map((j) => j.id)).toEqual([expected!.id]);
    expect(jobs[0]!.name).toBe('embed');
    expect(jobs[0]!.data).toEqual(expected!.data);
    // What was queued is a valid embed payload.
    expect(parsePayload('embed', jobs[0]!.data).ok).toBe(true);
  });

  it('enqueues nothing for nothing pending', async () => {
    const t = await topology();
    expect(await requeueEmbeds(t, SPACE, [])).toBe(0);
    expect(await t.queue('embed').count()).toBe(0);
  });

  it('splits large pending sets into batches of 500', async () => {
    const t = await topology();
    const items = pending(Array.from({ length: 1_200 }, (_, i) => i + 1));
    expect(await requeueEmbeds(t, SPACE, items)).toBe(1_200);
    const jobs = await t.queue('embed').getJobs(['waiting']);
    expect(jobs.map((j) => j.data.items.length).sort((a, b) => a - b)).toEqual([200, 500, 500]);
  });

  it('adds nothing again while the same job is still pending, and keeps it', async () => {
    const t = await topology();
    const items = pending([1, 2]);
    expect(await requeueEmbeds(t, SPACE, items)).toBe(2);
    const [job] = embedJobsFor(SPACE, items);
    const before = await t.queue('embed').getJob(job!.id);
    expect(await requeueEmbeds(t, SPACE, items)).toBe(0);
    expect(await t.queue('embed').getJobCounts('waiting', 'completed', 'failed')).toMatchObject({
      waiting: 1,
      completed: 0,
      failed: 0,
    });
    const after = await t.queue('embed').getJob(job!.id);
    expect(after?.timestamp).toBe(before?.timestamp);
  });

  it('treats a changed memory (new change sequence) as new work', async () => {
    const t = await topology();
    expect(await requeueEmbeds(t, SPACE, pending([1, 2], 1))).toBe(2);
    expect(await requeueEmbeds(t, SPACE, pending([1, 2], 2))).toBe(2);
    expect(await t.queue('embed').getJobCounts('waiting')).toMatchObject({ waiting: 2 });
  });

  it('removes a completed job whose memories still lack vectors and adds it again', async () => {
    const t = await topology();
    const items = pending([1, 2, 3]);
    const [job] = embedJobsFor(SPACE, items);
    await requeueEmbeds(t, SPACE, items);
    // A worker completed it, but its downstream work was lost: the memories are still pending.
    await drainWith(t, job!.id, 'completed', async () => ({ embedded: 3 }));
    expect(await requeueEmbeds(t, SPACE, items)).toBe(3);
    const again = await t.queue('embed').getJob(job!.id);
    expect(await again?.getState()).toBe('waiting');
    expect(again?.returnvalue).toBeFalsy();
    expect(again?.data).toEqual(job!.data);
    expect(await t.queue('embed').getJobCounts('waiting', 'completed')).toMatchObject({
      waiting: 1,
      completed: 0,
    });
  });

  it('leaves a dead-lettered (failed) job where the operator sees it', async () => {
    const t = await topology();
    const items = pending([4, 5]);
    const [job] = embedJobsFor(SPACE, items);
    await requeueEmbeds(t, SPACE, items);
    await drainWith(t, job!.id, 'failed', async () => {
      throw new UnrecoverableError('bad api key');
    });
    expect(await requeueEmbeds(t, SPACE, items)).toBe(0);
    const dead = await t.queue('embed').getJob(job!.id);
    expect(await dead?.getState()).toBe('failed');
    expect(dead?.failedReason).toBe('bad api key');
    expect(await t.queue('embed').getJobCounts('waiting', 'failed')).toMatchObject({ waiting: 0, failed: 1 });
  });
});
