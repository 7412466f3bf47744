import { type Sample, select } from './prometheus.js';

/** A Prometheus histogram at one scrape: cumulative counts per upper bound, and the sum and count. */
export interface Histogram {
  buckets: Array<{ le: number; count: number }>;
  sum: number;
  count: number;
}

/** The search route's latency histogram (cairn_http_request_duration_seconds), or null when absent. */
export function searchHistogram(samples: Sample[], route = '/v1/search'): Histogram | null {
  const name = 'cairn_http_request_duration_seconds';
  const labels = { method: 'POST', route };
  const buckets = select(samples, `${name}_bucket`, labels)
    .map((s) => ({ le: s.labels.le === '+Inf' ? Infinity : Number(s.labels.le), count: s.value }))
    .sort((a, b) => a.le - b.le);
  const sum = select(samples, `${name}_sum`, labels)[0]?.value;
  const count = select(samples, `${name}_count`, labels)[0]?.value;
  if (buckets.length === 0 || sum === undefined || count === undefined) return null;
  return { buckets, sum, count };
}

/**
 * The histogram of the requests between two scrapes (cur − prev), or null when there were none or a
 * counter went back (the server restarted, or `--processes N` answered from another process).
 */
export function histogramDelta(prev: Histogram | null, cur: Histogram): Histogram | null {
  if (!prev) return cur.count > 0 ? cur : null;
  const count = cur.count - prev.count;
  if (count <= 0) return null;
  const buckets = cur.buckets.map((b) => ({
    le: b.le,
    count: b.count - (prev.buckets.find((p) => p.le === b.le)?.count ?? 0),
  }));
  if (buckets.some((b) => b.count < 0)) return null;
  return { buckets, sum: cur.sum - prev.sum, count };
}

/**
 * The q-quantile of a histogram by linear interpolation inside its bucket, as Prometheus's
 * histogram_quantile does (the +Inf bucket answers its lower bound). Null for an empty histogram.
 */
export function quantile(h: Histogram, q: number): number | null {
  if (h.count <= 0) return null;
  const rank = q * h.count;
  let lower = 0;
  let below = 0;
  for (const b of h.buckets) {
    if (b.count >= rank) {
      if (b.le === Infinity) return lower;
      const inBucket = b.count - below;
      return inBucket <= 0 ? b.le : lower + ((b.le - lower) * (rank - below)) / inBucket;
    }
    lower = b.le;
    below = b.count;
  }
  return lower;
}

/** One point of the latency chart: the searches answered between two scrapes. */
export interface LatencyPoint {
  at: number;
  requests: number;
  mean: number;
  p50: number | null;
  p95: number | null;
}

export function latencyPoint(at: number, h: Histogram): LatencyPoint {
  return { at, requests: h.count, mean: h.sum / h.count, p50: quantile(h, 0.5), p95: quantile(h, 0.95) };
}
