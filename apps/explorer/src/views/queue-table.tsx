import { fmtInt } from '../format.js';
import type { Sample } from '../prometheus.js';

const STATES = ['waiting', 'active', 'delayed', 'failed', 'completed'];

/**
 * Queue depths from /metrics' cairn_queue_jobs (distributed mode): one row per BullMQ queue. A failed
 * job has used its attempts and stays in the queue: that column is the dead letters. Workers come from
 * cairn_queue_workers: a queue with none is marked, since its jobs wait whatever its depth.
 */
export function QueueTable({ samples, workers = [] }: { samples: Sample[]; workers?: Sample[] }) {
  const byQueue = new Map<string, Record<string, number>>();
  for (const s of samples) {
    const q = s.labels.queue ?? '?';
    const row = byQueue.get(q) ?? {};
    row[s.labels.state ?? '?'] = s.value;
    byQueue.set(q, row);
  }
  const workersOf = new Map(workers.map((w) => [w.labels.queue ?? '?', w.value]));
  return (
    <div class="table-wrap">
      <table class="data" data-testid="queue-table">
        <thead>
          <tr>
            <th scope="col">queue</th>
            {STATES.map((s) => (
              <th key={s} scope="col" class="num">
                {s === 'failed' ? 'failed (dead letters)' : s}
              </th>
            ))}
            <th scope="col" class="num">
              workers
            </th>
          </tr>
        </thead>
        <tbody>
          {[...byQueue].map(([q, row]) => (
            <tr key={q}>
              <th scope="row">
                <code>{q}</code>
              </th>
              {STATES.map((s) => (
                <td key={s} class={`num${s === 'failed' && (row[s] ?? 0) > 0 ? ' bad' : ''}`}>
                  {fmtInt(row[s] ?? 0)}
                </td>
              ))}
              {/* No worker: the queue's jobs wait, however small its depth. */}
              <td class={`num${workersOf.get(q) === 0 ? ' bad' : ''}`} data-testid={`workers-${q}`}>
                {workersOf.has(q) ? fmtInt(workersOf.get(q) ?? 0) : '—'}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
