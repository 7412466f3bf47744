import { randomUUID } from 'node:crypto';
import { CairnError } from '@cairn/core';
import { QueueEvents } from 'bullmq';
import { afterEach, describe, expect, it } from 'vitest';
import { CaptureProducer, waitUntilFinished } from '../src/distributed/capture-producer.js';
import { MAX_CAPTURE_BATCH, parsePayload } from '../src/distributed/job-catalog.js';
import { QueueTopology } from '../src/distributed/queue-topology.js';
import { startRedisServer } from '../src/testing/index.js';
import { useRedisServer } from './helpers.js';

const NOW = Date.parse('2024-01-01T00:00:00Z');

const good = (id: string) => ({ id, namespace: 'team/alpha', text: `memory ${id}` });

describe('CaptureProducer against a real Redis', () => {
  const redis = useRedisServer();
  const cleanups: Array<() => Promise<void> | void> = [];

  /** A producer (wait: queued) on a redis-server of its own, which the test may kill. */
  async function producerOnOwnRedis() {
    const server = await startRedisServer();
    cleanups.push(() => server.close());
    const topology = await QueueTopology.connect({
      redisUrl: server.url,
      prefix: `cp-${randomUUID()}`,
      shards: 1,
    });
    const p = new CaptureProducer(topology, { wait: 'queued' });
    cleanups.push(async () => {
      await p.close();
      await topology.close();
    });
    return { server, p, topology };
  }

  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  async function producer(batchSize = 500) {
    const topology = await QueueTopology.connect({
      redisUrl: redis.url,
      prefix: `cp-${randomUUID()}`,
      shards: 1,
    });
    const p = new CaptureProducer(topology, { wait: 'queued', batchSize });
    cleanups.push(async () => {
      await p.close();
      await topology.close();
    });
    return { topology, producer: p };
  }

  it('rejects a bad batch size before anything is sent', async () => {
    const { topology } = await producer();
    for (const batchSize of [0, MAX_CAPTURE_BATCH + 1]) {
      let err: unknown;
      try {
        new CaptureProducer(topology, { batchSize });
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(CairnError);
      expect((err as CairnError).code).toBe('INVALID_INPUT');
      expect((err as CairnError).data.field).toBe('batchSize');
    }
  });

  it('reports each bad memory by its index with the field at fault, and queues only the good ones', async () => {
    const { topology, producer: p } = await producer();
    const inputs = [
      good('m1'),
      { namespace: 'team/alpha', text: '   ' },
      'not an object',
      good('m2'),
      { namespace: 'team/alpha', text: 'x', importance: 2 },
      { text: 'no namespace' },
    ];
    const r = await p.enqueue(inputs, NOW);
    expect(r.items.map((i) => i.index)).toEqual([0, 1, 2, 3, 4, 5]);
    expect(r.items.map((i) => i.status)).toEqual([
      'queued',
      'rejected',
      'rejected',
      'queued',
      'rejected',
      'rejected',
    ]);
    expect(r.counts).toEqual({ stored: 0, updated: 0, unchanged: 0, rejected: 4, queued: 2 });
    expect(r.items[0]).toEqual({ index: 0, status: 'queued', id: 'm1', namespace: 'team/alpha' });
    expect(r.items[1]!.error).toMatchObject({ code: 'INVALID_INPUT', field: 'text' });
    expect(r.items[2]!.error).toEqual({ code: 'INVALID_INPUT', message: 'a memory must be a JSON object' });
    expect(r.items[4]!.error).toMatchObject({ code: 'INVALID_INPUT', field: 'importance' });
    expect(r.items[5]!.error).toMatchObject({ code: 'INVALID_INPUT', field: 'namespace' });

    // One capture job carrying only the accepted memories, as the caller sent them.
    expect(r.jobs).toHaveLength(1);
    const job = await topology.queue('capture').getJob(r.jobs[0]!);
    expect(job?.data).toEqual({
      memories: [good('m1'), good('m2')],
      receivedAt: NOW,
      requestId: expect.stringMatching(/^[0-9a-f-]{36}$/),
    });
    expect(parsePayload('capture', job?.data).ok).toBe(true);
  });

  it('queues no job when every memory is rejected', async () => {
    const { topology, producer: p } = await producer();
    const r = await p.enqueue([{ namespace: '', text: 'x' }, 42], NOW);
    expect(r.counts.rejected).toBe(2);
    expect(r.counts.queued).toBe(0);
    expect(r.jobs).toEqual([]);
    expect(await topology.queue('capture').count()).toBe(0);
  });

  it('splits into batches and gives a re-sent batch the same job id, which Redis holds once', async () => {
    const { topology, producer: p } = await producer(2);
    const inputs = ['a', 'b', 'c', 'd', 'e'].map(good);
    const first = await p.enqueue(inputs, NOW);
    expect(first.jobs).toHaveLength(3);
    expect(new Set(first.jobs).size).toBe(3);
    for (const id of first.jobs) expect(id).toMatch(/^cap-[0-9a-f]{40}$/);
    const again = await p.enqueue(inputs, NOW + 1_000);
    expect(again.jobs).toEqual(first.jobs);
    expect(await topology.queue('capture').count()).toBe(3);
    // Another grouping of the same memories is another job id.
    const regrouped = await p.enqueue([...inputs].reverse(), NOW);
    expect(regrouped.jobs.some((id) => !first.jobs.includes(id))).toBe(true);
  });

  it('waiting for "stored" with no capture worker, says so every notice interval, then gives up by name', async () => {
    const { topology } = await producer();
    const notices: Array<[string, number]> = [];
    const p = new CaptureProducer(topology, {
      wait: 'stored',
      waitTimeoutMs: 1_200,
      waitingNoticeMs: 300,
      onWaiting: (job, ms) => notices.push([job, ms]),
    });
    cleanups.push(() => p.close());
    const err = await p.enqueue([good('w1')], NOW).catch((e: unknown) => e);
    expect((err as CairnError).code).toBe('BACKEND_UNAVAILABLE');
    expect(notices.length).toBeGreaterThanOrEqual(2);
    expect(notices[0]![0]).toMatch(/^cap-/);
    expect(notices.at(-1)![1]).toBeGreaterThan(notices[0]![1]);
    // The notices stop with the wait.
    const seen = notices.length;
    await new Promise((r) => setTimeout(r, 700));
    expect(notices.length).toBe(seen);
  });

  it('answers bad memories locally and fails fast with BACKEND_UNAVAILABLE once Redis is down', async () => {
    const { server, p } = await producerOnOwnRedis();
    await server.stop('SIGKILL');
    const onlyBad = await p.enqueue([{ namespace: 'team/alpha', text: '' }, null], NOW);
    expect(onlyBad.counts).toMatchObject({ rejected: 2, queued: 0 });
    expect(onlyBad.jobs).toEqual([]);
    await expect(p.enqueue([good('m1')], NOW)).rejects.toMatchObject({ code: 'BACKEND_UNAVAILABLE' });
  });

  it('a wait for "stored" whose Redis dies after the add rejects, rather than ending the process', async () => {
    // BullMQ's own Job.waitUntilFinished checked the job inside an async Promise executor: with Redis gone
    // between the add and that check its rejection was unhandled, and a distributed `cairn serve` exited 1
    // under writes while Redis restarted (3 of 6 kills in a walkthrough).
    const { server, topology } = await producerOnOwnRedis();
    const queue = topology.queue('capture');
    const events = new QueueEvents(queue.name, {
      connection: topology.connection.duplicate({ maxRetriesPerRequest: null }),
      prefix: topology.opts.prefix,
    });
    await events.waitUntilReady();
    const job = await queue.add('capture', { memories: [] });
    const unhandled: unknown[] = [];
    const onUnhandled = (err: unknown) => unhandled.push(err);
    process.on('unhandledRejection', onUnhandled);
    try {
      await server.stop('SIGKILL');
      await expect(waitUntilFinished(queue, job, events, 5_000)).rejects.toBeInstanceOf(Error);
      await new Promise((r) => setTimeout(r, 300));
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
      events.disconnect();
    }
  });

  it('names Redis lost after its check (mid-enqueue) as BACKEND_UNAVAILABLE, not an internal error', async () => {
    const { server, p, topology } = await producerOnOwnRedis();
    // Redis dies between the producer's reachability check and its first command on the queue.
    const queue = topology.queue('capture');
    const getJob = queue.getJob.bind(queue);
    let killed = false;
    queue.getJob = async (id: string) => {
      if (!killed) {
        killed = true;
        await server.stop('SIGKILL');
      }
      return getJob(id);
    };
    const err = await p.enqueue([good('m1'), good('m2')], NOW).catch((e: unknown) => e);
    expect(killed).toBe(true);
    expect(err).toMatchObject({ code: 'BACKEND_UNAVAILABLE', data: { backend: 'redis' } });
    expect((err as Error).message).toMatch(/^Redis at redis:\/\/127\.0\.0\.1:\d+ is unreachable/);
  });
});
