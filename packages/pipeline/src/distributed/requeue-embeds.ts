import type { PendingMemory } from '../stage-ports.js';
import type { QueueTopology } from './queue-topology.js';
import { embedJobsFor, type SpaceRef } from './stage-processors.js';

/**
 * Enqueues embedding again for memories that still lack a vector in `space` (the reconcile sweep, a
 * resumed reindex). The jobs reuse the ids of the batches they repeat, and BullMQ ignores an add whose id
 * it still holds: a completed job whose memories still lack vectors lost its downstream work, so it is
 * removed to let the add through. A dead-lettered one stays where the operator sees it
 * (`cairn dead-letters`), and a pending one will run anyway. Returns the memories enqueued.
 */
export async function requeueEmbeds(
  topology: QueueTopology,
  space: SpaceRef,
  pending: readonly PendingMemory[],
): Promise<number> {
  const queue = topology.queue('embed');
  let enqueued = 0;
  for (const job of embedJobsFor(space, pending)) {
    const existing = await queue.getJob(job.id);
    if (existing) {
      if (!(await existing.isCompleted())) continue;
      await existing.remove();
    }
    await queue.add('embed', job.data, { jobId: job.id });
    enqueued += job.data.items.length;
  }
  return enqueued;
}
