import { settleWithin } from '@cairn/core';
import { type Job, Queue, Worker } from 'bullmq';
import type { QueueTopology } from './queue-topology.js';
import { redisConnection } from './queue-topology.js';

/** How long a close waits for a Redis that is down (ms): a forced close's own steps, no more. */
const REDIS_DOWN_CLOSE_MS = 1_000;

/** The scheduled hygiene jobs of a distributed deployment (the embedded writer runs the same on timers). */
export type MaintenanceJobName = 'consolidate' | 'prune';

/** The queue the schedulers put their jobs on; one deployment (prefix) has one. */
export const MAINTENANCE_QUEUE = 'maintenance';

export interface MaintenanceSchedule {
  name: MaintenanceJobName;
  /** How often (ms); 0 removes the schedule; null leaves whatever another process of the deployment set. */
  everyMs: number | null;
  /** The job's payload (the pruning policies), so whichever worker runs a tick runs the same job. */
  data?: Record<string, unknown>;
}

/**
 * BullMQ job schedulers for the hygiene jobs, and the worker that runs them. Every worker process that can
 * run them upserts the same schedulers (idempotent by name), so the schedule survives any one of them, and
 * BullMQ hands each tick's job to one worker. (A run asked for by hand, `cairn consolidate`, may overlap a
 * tick: every merge is checked again inside its own transaction, so that is safe.) A job that fails is not
 * retried: the next tick runs it again from where the last one got (its cursor).
 */
export class MaintenanceJobs {
  private constructor(
    private readonly queue: Queue,
    private readonly worker: Worker,
    private readonly connection: ReturnType<typeof redisConnection>,
  ) {}

  static async start(
    topology: QueueTopology,
    schedules: readonly MaintenanceSchedule[],
    run: (name: MaintenanceJobName, data: Record<string, unknown>) => Promise<unknown>,
    log: (level: 'info' | 'warn', msg: string, data?: Record<string, unknown>) => void,
  ): Promise<MaintenanceJobs> {
    const { prefix, redisUrl } = topology.opts;
    const queue = new Queue(MAINTENANCE_QUEUE, {
      connection: topology.connection,
      prefix,
      defaultJobOptions: { attempts: 1, removeOnComplete: { count: 50 }, removeOnFail: { count: 50 } },
    });
    try {
      for (const s of schedules) {
        if (s.everyMs === null) continue;
        if (s.everyMs > 0)
          await queue.upsertJobScheduler(s.name, { every: s.everyMs }, { name: s.name, data: s.data ?? {} });
        else await queue.removeJobScheduler(s.name);
      }
    } catch (err) {
      await queue.close();
      throw err;
    }
    // Its own blocking connection, disconnected on close: BullMQ never closes a connection it was handed.
    const connection = redisConnection(redisUrl, 'worker');
    const worker = new Worker(
      MAINTENANCE_QUEUE,
      async (job: Job) => run(job.name as MaintenanceJobName, (job.data ?? {}) as Record<string, unknown>),
      { connection, prefix, concurrency: 1 },
    );
    worker.on('failed', (job: Job | undefined, err: Error) =>
      log('warn', 'maintenance job failed; the next tick runs it again', {
        job: job?.name,
        error: err.message,
      }),
    );
    return new MaintenanceJobs(queue, worker, connection);
  }

  async close(deadlineMs = 5_000): Promise<void> {
    // With Redis down no job can report done: waiting buys nothing (its lock lapses and the next tick runs
    // it again), and a worker's SIGTERM took 10–13 s where it said a few.
    const redisUp = this.connection.status === 'ready';
    await settleWithin(
      Promise.all([this.worker.close(!redisUp), this.queue.close()]),
      redisUp ? deadlineMs : REDIS_DOWN_CLOSE_MS,
    );
    this.connection.disconnect();
  }
}
