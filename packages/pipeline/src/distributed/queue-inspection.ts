import type { JobName } from './job-catalog.js';
import { type QueueTopology, whileRedisAnswers } from './queue-topology.js';

export interface QueueCounts {
  waiting: number;
  active: number;
  delayed: number;
  failed: number;
  completed: number;
  /**
   * Worker connections taking the queue's jobs now (BullMQ names each worker's connection after its
   * queue): 0 means its jobs wait until a `cairn worker` of that stage starts. Null when Redis refuses
   * `CLIENT LIST` (a managed Redis's ACL may): unknown, which the job counts do not depend on.
   */
  workers: number | null;
}

/** Job counts and workers per queue, for `cairn stats`, `/metrics` and `/readyz`. */
export function queueCounts(topology: QueueTopology): Promise<Record<string, QueueCounts>> {
  return whileRedisAnswers(topology, () => countJobs(topology));
}

async function countJobs(topology: QueueTopology): Promise<Record<string, QueueCounts>> {
  const out: Record<string, QueueCounts> = {};
  for (const { queue } of topology.all()) {
    const c = await queue.getJobCounts(
      'waiting',
      'active',
      'delayed',
      'failed',
      'completed',
      'prioritized',
      'paused',
    );
    out[queue.name] = {
      waiting: (c.waiting ?? 0) + (c.prioritized ?? 0) + (c.paused ?? 0),
      active: c.active ?? 0,
      delayed: c.delayed ?? 0,
      failed: c.failed ?? 0,
      completed: c.completed ?? 0,
      workers: await queue.getWorkersCount().catch(() => null),
    };
  }
  return out;
}

export interface DeadLetter {
  queue: string;
  job: JobName;
  id: string;
  /** Why it failed: the last error, e.g. `INVALID_PAYLOAD: capture job: memories: ...`. */
  reason: string;
  attempts: number;
  failedAt: number | null;
  /** How many memories the job carried. */
  size: number;
}

/**
 * The dead-letter view: jobs that failed for good, because their payload could never succeed or their
 * attempts ran out. They stay in Redis until retried or purged; nothing else waits on them.
 */
export function deadLetters(topology: QueueTopology, limit = 100): Promise<DeadLetter[]> {
  return whileRedisAnswers(topology, () => readDeadLetters(topology, limit));
}

async function readDeadLetters(topology: QueueTopology, limit: number): Promise<DeadLetter[]> {
  const out: DeadLetter[] = [];
  for (const { name, queue } of topology.all()) {
    for (const j of await queue.getFailed(0, limit - 1)) {
      const d = j.data as { memories?: unknown[]; items?: unknown[] } | undefined;
      out.push({
        queue: queue.name,
        job: name,
        id: j.id ?? '',
        reason: j.failedReason ?? '',
        attempts: j.attemptsMade,
        failedAt: j.finishedOn ?? null,
        size: Array.isArray(d?.memories) ? d.memories.length : Array.isArray(d?.items) ? d.items.length : 0,
      });
    }
  }
  return out.sort((a, b) => (b.failedAt ?? 0) - (a.failedAt ?? 0)).slice(0, limit);
}

/** Puts every dead-lettered job back in its queue; returns how many. */
export function retryDeadLetters(topology: QueueTopology): Promise<number> {
  return whileRedisAnswers(topology, () => retryAll(topology));
}

async function retryAll(topology: QueueTopology): Promise<number> {
  let n = 0;
  for (const { queue } of topology.all()) {
    const failed = await queue.getJobCountByTypes('failed');
    if (failed > 0) {
      await queue.retryJobs({ state: 'failed', count: 1000 });
      n += failed;
    }
  }
  return n;
}
