import { useEffect, useRef, useState } from 'preact/hooks';
import { api } from '../api.js';
import { ErrorBox } from '../error-box.js';
import { fmtInt } from '../format.js';
import {
  type Histogram,
  histogramDelta,
  type LatencyPoint,
  latencyPoint,
  searchHistogram,
} from '../latency.js';
import { LatencyChart } from '../latency-chart.js';
import { parsePrometheus, type Sample, select } from '../prometheus.js';
import { usePoll } from '../use-poll.js';
import { QueueTable } from './queue-table.js';
import { SpacesTable } from './spaces-table.js';

const POLL_MS = 3_000;
/** Ten minutes of points at one per scrape. */
const MAX_POINTS = 200;

/**
 * The operator's view: embedding spaces and reindex progress (GET /v1/spaces, a * key's route: another
 * key's 403 is shown as such), readiness (/readyz), queue depths in distributed mode and search latency
 * (both from /metrics), charted from the moment the page opened.
 */
export function OperationsView({ keyEpoch }: { keyEpoch: number }) {
  const spaces = usePoll(api.spaces, POLL_MS, [keyEpoch]);
  const dead = usePoll(api.deadLetters, POLL_MS, [keyEpoch]);
  const ready = usePoll(api.readiness, POLL_MS, []);
  const metrics = usePoll(async () => parsePrometheus(await api.metrics()), POLL_MS, []);
  const [points, setPoints] = useState<LatencyPoint[]>([]);
  const prev = useRef<Histogram | null>(null);
  const [total, setTotal] = useState<Histogram | null>(null);

  // Each scrape adds the searches answered since the previous one; the first only sets the baseline.
  useEffect(() => {
    if (!metrics.data || metrics.at === null) return;
    const h = searchHistogram(metrics.data);
    if (!h) return;
    setTotal(h);
    const first = prev.current === null;
    const delta = first ? null : histogramDelta(prev.current, h);
    prev.current = h;
    if (delta) {
      const at = metrics.at;
      setPoints((p) => [...p.slice(-(MAX_POINTS - 1)), latencyPoint(at, delta)]);
    }
  }, [metrics.at]);

  const samples: Sample[] = metrics.data ?? [];
  const memories = select(samples, 'cairn_memories');
  const queues = select(samples, 'cairn_queue_jobs');
  const workers = select(samples, 'cairn_queue_workers');
  return (
    <section aria-labelledby="ops-title" class="ops">
      <div class="section-head">
        <h1 id="ops-title">Operations</h1>
        <p class="muted">refreshed every {POLL_MS / 1000} s while this page is open</p>
      </div>

      <div class="panel" data-testid="readiness">
        <h2>Readiness</h2>
        {ready.error ? <ErrorBox error={ready.error} context="GET /readyz" /> : null}
        {ready.data ? (
          <>
            <p>
              <span class={ready.data.status === 'ok' ? 'ok' : 'bad'}>
                {ready.data.status} (HTTP {ready.data.httpStatus})
              </span>
            </p>
            <ul class="checks">
              {Object.entries(ready.data.checks).map(([name, c]) => (
                <li key={name}>
                  <span class={c.ok ? 'ok' : 'bad'}>{c.ok ? '✓' : '✗'}</span> <b>{name}</b>{' '}
                  <span class="muted">{c.detail ?? ''}</span>
                </li>
              ))}
            </ul>
          </>
        ) : null}
        {memories.length > 0 ? (
          <p class="muted small" data-testid="memory-totals">
            all namespaces: {memories.map((s) => `${s.labels.state} ${fmtInt(s.value)}`).join(' · ')}
          </p>
        ) : null}
      </div>

      <div class="panel" data-testid="spaces">
        <h2>Embedding spaces</h2>
        {spaces.error ? <ErrorBox error={spaces.error} context="GET /v1/spaces" /> : null}
        {spaces.data ? <SpacesTable spaces={spaces.data.spaces} /> : null}
      </div>

      <div class="panel" data-testid="latency">
        <h2>Search latency</h2>
        {metrics.error ? <ErrorBox error={metrics.error} context="GET /metrics" /> : null}
        <LatencyChart points={points} total={total} />
      </div>

      <div class="panel" data-testid="queues">
        <h2>Pipeline queues</h2>
        {ready.data?.checks?.redis?.ok === false ? (
          // A distributed server whose Redis does not answer: the last depths read are stale, and none is
          // not "embedded".
          <p class="bad" data-testid="queues-unknown">
            Queue depths unknown: this server is distributed and Redis does not answer (
            {ready.data.checks.redis.detail ?? 'see /readyz'}).
          </p>
        ) : queues.length > 0 ? (
          <QueueTable samples={queues} workers={workers} />
        ) : ready.data?.checks?.redis ? (
          <p class="muted">Waiting for the queue depths…</p>
        ) : (
          <p class="muted">
            No queues: this server runs embedded (capture, embed and index in one process, no Redis). With
            REDIS_URL set, each BullMQ queue's depths and failed jobs (its dead letters, listed by{' '}
            <code>cairn dead-letters</code>) show here.
          </p>
        )}
        {dead.error ? <ErrorBox error={dead.error} context="GET /v1/dead-letters" /> : null}
        {dead.data && dead.data.dead_letters.length > 0 ? (
          <table class="table" data-testid="dead-letters">
            <caption>Dead letters: jobs that failed for good, newest first</caption>
            <thead>
              <tr>
                <th scope="col">queue</th>
                <th scope="col">job</th>
                <th scope="col">why</th>
                <th scope="col">attempts</th>
                <th scope="col">memories</th>
                <th scope="col">failed</th>
              </tr>
            </thead>
            <tbody>
              {dead.data.dead_letters.map((d) => (
                <tr key={`${d.queue}/${d.id}`}>
                  <td>{d.queue}</td>
                  <td>{d.job}</td>
                  <td class="wrap">{d.reason}</td>
                  <td class="num">{d.attempts}</td>
                  <td class="num">{d.size}</td>
                  <td>{d.failed_at === null ? '—' : new Date(d.failed_at).toISOString().slice(0, 19)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        ) : dead.data?.mode === 'distributed' && !dead.error ? (
          <p class="muted" data-testid="dead-letters-none">
            No dead letters.
          </p>
        ) : null}
      </div>
    </section>
  );
}
