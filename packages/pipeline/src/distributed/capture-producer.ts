import { createHash, randomUUID } from 'node:crypto';
import { CairnError, normalizeMemory, withDefaults } from '@cairn/core';
import { type Job, type Queue, QueueEvents } from 'bullmq';
import type { CaptureItemResult, CaptureResult, CaptureStatus } from '../capture-stage.js';
import { MAX_CAPTURE_BATCH } from './job-catalog.js';
import {
  assertRedisReachable,
  type QueueTopology,
  type redisConnection,
  whileRedisAnswers,
} from './queue-topology.js';

export interface CaptureProducerOptions {
  /** Memories per capture job. @defaultValue 500 */
  batchSize: number;
  /**
   * `'stored'` waits until each job's SQLite commit (durable against kill -9 of any process and a Redis
   * restart); `'queued'` returns once Redis accepted the jobs (durable only as far as Redis persists:
   * with `appendonly yes` and the default `appendfsync everysec`, up to the last second can be lost if
   * Redis itself crashes). @defaultValue 'stored'
   */
  wait: 'stored' | 'queued';
  /** How long to wait for `'stored'` before giving up (ms); the jobs stay queued. @defaultValue 300_000 */
  waitTimeoutMs: number;
  /**
   * While waiting for `'stored'`, how often each job's presence in Redis is checked (ms): a job that
   * vanished (FLUSHALL, a failover to an empty replica) would otherwise be waited for until the timeout.
   * @defaultValue 1_000
   */
  jobCheckIntervalMs: number;
  /** How many times a vanished job is enqueued again (capture is idempotent) before the call fails. @defaultValue 3 */
  maxRequeues: number;
  /**
   * Told every `waitingNoticeMs` while a job is still not stored, so a command waiting on a dead Redis or
   * on no capture worker says so instead of looking hung. @defaultValue none
   */
  onWaiting?: (job: string, waitedMs: number) => void;
  /** How often `onWaiting` is told (ms). @defaultValue 10_000 */
  waitingNoticeMs: number;
}

export const DEFAULT_CAPTURE_PRODUCER_OPTIONS: Readonly<CaptureProducerOptions> = Object.freeze({
  batchSize: 500,
  wait: 'stored',
  waitTimeoutMs: 300_000,
  jobCheckIntervalMs: 1_000,
  maxRequeues: 3,
  waitingNoticeMs: 10_000,
});

export type QueuedStatus = CaptureStatus | 'queued';

export interface EnqueueResult {
  items: Array<Omit<CaptureItemResult, 'status'> & { status: QueuedStatus }>;
  counts: Record<QueuedStatus, number>;
  /** The capture job ids, one per batch. */
  jobs: string[];
}

/**
 * The producer side of the capture stage. Items are validated here too, so a caller hears about a bad
 * memory at once; the capture worker validates again because a queue accepts anything. Each batch's job
 * id is a hash of its idempotency keys (namespace + caller's id, or the content hash when no id was
 * given), so re-sending a batch while its job is still known to Redis is a no-op, and re-sending it later
 * is an idempotent upsert.
 */
export class CaptureProducer {
  private readonly opts: CaptureProducerOptions;
  private events: QueueEvents | null = null;
  private eventsConnection: ReturnType<typeof redisConnection> | null = null;

  constructor(
    private readonly topology: QueueTopology,
    opts: Partial<CaptureProducerOptions> = {},
  ) {
    this.opts = withDefaults(DEFAULT_CAPTURE_PRODUCER_OPTIONS, opts);
    if (this.opts.batchSize < 1 || this.opts.batchSize > MAX_CAPTURE_BATCH)
      throw new CairnError('INVALID_INPUT', `batchSize must be 1..${MAX_CAPTURE_BATCH}`, {
        field: 'batchSize',
      });
  }

  /** `wait` overrides the producer's default for this call (an API request chooses per request). */
  async enqueue(
    inputs: readonly unknown[],
    now = Date.now(),
    wait: 'stored' | 'queued' = this.opts.wait,
  ): Promise<EnqueueResult> {
    const items: EnqueueResult['items'] = [];
    const accepted: Array<{ index: number; input: unknown; key: string; id: string; namespace: string }> = [];
    inputs.forEach((input, index) => {
      try {
        const m = normalizeMemory(input, now);
        accepted.push({ index, input, key: `${m.namespace}\u0000${m.id}`, id: m.id, namespace: m.namespace });
      } catch (err) {
        const e = err instanceof CairnError ? err : new CairnError('INVALID_INPUT', String(err));
        items.push({ index, status: 'rejected', error: e.toJSON() });
      }
    });
    // Nothing valid: answer with the rejections without touching Redis (which may be down).
    if (accepted.length === 0) return summarize(items, []);
    // A dead Redis must fail this call, not park it in a queue's offline buffer until Redis returns.
    await assertRedisReachable(this.topology.connection, this.topology.opts.redisUrl);
    // Redis lost after that check is named too (BACKEND_UNAVAILABLE), not ioredis's retry-limit error, which
    // surfaced as INTERNAL (a bug, by the contract) in a `cairn ingest` whose Redis died mid-file.
    return whileRedisAnswers(this.topology, () => this.enqueueAccepted(accepted, items, now, wait));
  }

  private async enqueueAccepted(
    accepted: Array<{ index: number; input: unknown; key: string; id: string; namespace: string }>,
    items: EnqueueResult['items'],
    now: number,
    wait: 'stored' | 'queued',
  ): Promise<EnqueueResult> {
    const batches: Array<typeof accepted> = [];
    for (let i = 0; i < accepted.length; i += this.opts.batchSize)
      batches.push(accepted.slice(i, i + this.opts.batchSize));
    const queue = this.topology.queue('capture');
    if (wait === 'stored' && !this.events) {
      this.eventsConnection = this.topology.connection.duplicate({
        maxRetriesPerRequest: null,
        enableOfflineQueue: true,
      });
      this.events = new QueueEvents('capture', {
        connection: this.eventsConnection,
        prefix: this.topology.opts.prefix,
      });
      await this.events.waitUntilReady();
    }
    const ids = batches.map(
      (b) =>
        `cap-${createHash('sha256')
          .update(b.map((a) => a.key).join('\u0001'))
          .digest('hex')
          .slice(0, 40)}`,
    );
    // The id dedupes a batch only while it is in flight (a retried request joins the running job). A
    // finished job with the same id is removed first: BullMQ would otherwise ignore the add and answer
    // with the old result, dropping a changed value of the same ids (a fact's new value, a re-write
    // after a delete). Capture itself is idempotent, so re-running an identical batch stores nothing new.
    for (const id of ids) {
      const existing = await queue.getJob(id);
      const state = existing ? await existing.getState() : null;
      if (state === 'completed' || state === 'failed') await existing!.remove();
    }
    const jobs = await queue.addBulk(
      batches.map((b, i) => ({
        name: 'capture',
        data: { memories: b.map((a) => a.input), receivedAt: now, requestId: randomUUID() },
        opts: { jobId: ids[i]! },
      })),
    );
    if (wait === 'queued') {
      for (const a of accepted)
        items.push({ index: a.index, status: 'queued', id: a.id, namespace: a.namespace });
    } else {
      const results = await Promise.all(jobs.map((j) => this.waitStored(j)));
      results.forEach((r, bi) => {
        const batch = batches[bi]!;
        for (const it of r.items) items.push({ ...it, index: batch[it.index]!.index });
      });
    }
    return summarize(
      items,
      jobs.map((j) => j.id!),
    );
  }

  /**
   * Waits for one capture job to be stored. A job that vanished from Redis is enqueued again under its id
   * (capture is idempotent), up to `maxRequeues` times. Giving up says that the outcome is unknown, not that
   * nothing was stored: a worker may still be storing the batch, and a retry with the same ids is safe.
   */
  private async waitStored(first: Job): Promise<CaptureResult> {
    const started = Date.now();
    const notice = this.opts.onWaiting
      ? setInterval(() => this.opts.onWaiting!(first.id!, Date.now() - started), this.opts.waitingNoticeMs)
      : null;
    try {
      return await this.waitStoredOrFail(first, started + this.opts.waitTimeoutMs);
    } finally {
      if (notice) clearInterval(notice);
    }
  }

  private async waitStoredOrFail(first: Job, deadline: number): Promise<CaptureResult> {
    const queue = this.topology.queue('capture');
    let job = first;
    for (let requeues = 0; ; requeues++) {
      const control = { stopped: false };
      const finished = waitUntilFinished(
        queue,
        job,
        this.events!,
        Math.max(1, deadline - Date.now()),
      ) as Promise<CaptureResult>;
      const outcome = await Promise.race([
        finished.then(
          (result) => ({ result }),
          (error: Error) => ({ error }),
        ),
        this.vanished(queue, job.id!, control).then((gone) =>
          gone ? { vanished: true as const } : new Promise<never>(() => {}),
        ),
      ]).finally(() => {
        control.stopped = true;
      });
      if ('result' in outcome) return outcome.result;
      if ('error' in outcome) {
        const timedOut = Date.now() >= deadline;
        throw new CairnError(
          'BACKEND_UNAVAILABLE',
          timedOut
            ? `capture job ${job.id} was accepted but not confirmed stored within ${this.opts.waitTimeoutMs} ms (is a capture worker running?): the outcome is unknown; retrying with the same ids is safe`
            : `capture job ${job.id} failed: ${outcome.error.message}`,
          {
            backend: 'capture-worker',
            retryable: true,
            outcome: timedOut ? 'unknown' : 'failed',
            job: job.id,
          },
        );
      }
      // The abandoned wait rejects at its own timeout; nobody listens any more.
      finished.catch(() => {});
      if (requeues >= this.opts.maxRequeues) {
        throw new CairnError(
          'BACKEND_UNAVAILABLE',
          `capture job ${job.id} vanished from Redis ${requeues + 1} times (flushed, or failed over to an empty replica): nothing is known to be stored; retrying with the same ids is safe`,
          { backend: 'redis', retryable: true, outcome: 'unknown', job: job.id },
        );
      }
      const data = job.data;
      const existing = await queue.getJob(job.id!);
      job = existing ?? (await queue.add('capture', data, { jobId: job.id! }));
    }
  }

  /**
   * Resolves true once the job has been missing from Redis at two checks in a row (a job that just
   * completed and was trimmed is missing too, but its completion reaches the waiter first), false once
   * `control.stopped` is set.
   */
  private async vanished(queue: Queue, id: string, control: { stopped: boolean }): Promise<boolean> {
    let misses = 0;
    while (!control.stopped) {
      await new Promise((r) => setTimeout(r, this.opts.jobCheckIntervalMs).unref());
      if (control.stopped) return false;
      const present = await queue.getJob(id).then(
        (j) => j !== undefined && j !== null,
        // Redis unreachable: nothing can be said; the wait's own timeout still applies.
        () => true,
      );
      misses = present ? 0 : misses + 1;
      if (misses >= 2) return true;
    }
    return false;
  }

  async close(): Promise<void> {
    await this.events?.close();
    this.events = null;
    // BullMQ does not close a connection it was handed.
    this.eventsConnection?.disconnect();
    this.eventsConnection = null;
  }
}

/**
 * BullMQ's `Job.waitUntilFinished` without its flaw: it checks whether the job already finished inside an
 * async Promise executor, so when Redis drops between the add and that check (the producer connection fails
 * fast: `maxRetriesPerRequest: 1`) the check's rejection is unhandled and Node ends the whole process
 * (`cairn serve` in distributed mode exited 1 with MaxRetriesPerRequestError under writes while Redis
 * restarted). Here every failure rejects the returned promise, which the caller turns into
 * BACKEND_UNAVAILABLE.
 */
export function waitUntilFinished(
  queue: Queue,
  job: Job,
  events: QueueEvents,
  ttlMs: number,
): Promise<unknown> {
  const id = job.id!;
  // Per-job event names (`completed:<id>`) are outside QueueEvents' typed listener map.
  const emitter = events as unknown as NodeJS.EventEmitter;
  return new Promise((resolve, reject) => {
    let settled = false;
    const completedEvent = `completed:${id}`;
    const failedEvent = `failed:${id}`;
    const finish = (settle: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      emitter.removeListener(completedEvent, onCompleted);
      emitter.removeListener(failedEvent, onFailed);
      settle();
    };
    const onCompleted = (args: { returnvalue: unknown }) => finish(() => resolve(args.returnvalue));
    const onFailed = (args: { failedReason?: string }) =>
      finish(() => reject(new Error(args.failedReason ?? `job ${id} failed`)));
    const timer = setTimeout(
      () => finish(() => reject(new Error(`job ${id} not finished after ${ttlMs} ms`))),
      ttlMs,
    );
    emitter.on(completedEvent, onCompleted);
    emitter.on(failedEvent, onFailed);
    // It may have finished before the listeners were attached: look once, after QueueEvents listens.
    void (async () => {
      await events.waitUntilReady();
      const state = await job.getState();
      if (state !== 'completed' && state !== 'failed') return;
      const current = (await queue.getJob(id)) ?? job;
      if (state === 'completed') onCompleted({ returnvalue: current.returnvalue });
      else onFailed({ failedReason: current.failedReason });
    })().catch((err: unknown) => finish(() => reject(err)));
  });
}

function summarize(items: EnqueueResult['items'], jobs: string[]): EnqueueResult {
  items.sort((a, b) => a.index - b.index);
  const counts: Record<QueuedStatus, number> = {
    stored: 0,
    updated: 0,
    unchanged: 0,
    rejected: 0,
    queued: 0,
  };
  for (const it of items) counts[it.status]++;
  return { items, counts, jobs };
}
