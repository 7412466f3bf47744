import { type Job, Queue, Worker } from 'bullmq';
import type { QueueTopology } from './queue-topology.js';
import { redisConnection } from './queue-topology.js';
import { settleWithin } from './settle-within.js';

/** The scheduled hygiene jobs of a distributed deployment (the embedded writer runs the same on timers). */
export type MaintenanceJobName = 'consolidate' | 'prune';

/** The queue the schedulers put their jobs on; one deployment (prefix) has one. */
export const MAINTENANCE_QUEUE = 'maintenance';

export interface MaintenanceSchedule {
  name: MaintenanceJobName;
  /** How often (ms); 0 removes the schedule. */
  everyMs: number;
}

/**
 * BullMQ job schedulers for the hygiene jobs, and the worker that runs them. Every worker process that can
 * run them upserts the same schedulers (idempotent by name), so the schedule survives any one of them;
 * BullMQ hands each tick's job to one worker, so two processes never consolidate at once. A job that
 * fails is not retried: the next tick runs the job again from where the last one got (its cursor).
 */
export class MaintenanceJobs {
  private constructor(
    private readonly queue: Queue,
    private readonly worker: Worker,
  ) {}

  static async start(
    topology: QueueTopology,
    schedules: readonly MaintenanceSchedule[],
    run: (name: MaintenanceJobName) => Promise<unknown>,
    log: (level: 'info' | 'warn', msg: string, data?: Record<string, unknown>) => void,
  ): Promise<MaintenanceJobs> {
    const { prefix, redisUrl } = topology.opts;
    const queue = new Queue(MAINTENANCE_QUEUE, {
      connection: topology.connection,
      prefix,
      defaultJobOptions: { attempts: 1, removeOnComplete: { count: 50 }, removeOnFail: { count: 50 } },
    });
    for (const s of schedules) {
      if (s.everyMs > 0) await queue.upsertJobScheduler(s.name, { every: s.everyMs }, { name: s.name });
      else await queue.removeJobScheduler(s.name);
    }
    const worker = new Worker(MAINTENANCE_QUEUE, async (job: Job) => run(job.name as MaintenanceJobName), {
      connection: redisConnection(redisUrl, 'worker'),
      prefix,
      concurrency: 1,
    });
    worker.on('failed', (job: Job | undefined, err: Error) =>
      log('warn', 'maintenance job failed; the next tick runs it again', {
        job: job?.name,
        error: err.message,
      }),
    );
    return new MaintenanceJobs(queue, worker);
  }

  async close(deadlineMs = 5_000): Promise<void> {
    await settleWithin(Promise.all([this.worker.close(), this.queue.close()]), deadlineMs);
  }
}
