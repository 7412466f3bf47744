import { describe, expect, it } from 'vitest';
import { histogramDelta, latencyPoint, quantile, searchHistogram } from '../src/latency.js';
import { parsePrometheus, select } from '../src/prometheus.js';

// What prom-client answers on /metrics, trimmed to the lines the explorer reads.
const SCRAPE = `# HELP cairn_http_request_duration_seconds HTTP request latency
# TYPE cairn_http_request_duration_seconds histogram
cairn_http_request_duration_seconds_bucket{le="0.001",method="POST",route="/v1/search"} 0
cairn_http_request_duration_seconds_bucket{le="0.005",method="POST",route="/v1/search"} 6
cairn_http_request_duration_seconds_bucket{le="0.01",method="POST",route="/v1/search"} 9
cairn_http_request_duration_seconds_bucket{le="+Inf",method="POST",route="/v1/search"} 10
cairn_http_request_duration_seconds_sum{method="POST",route="/v1/search"} 0.05
cairn_http_request_duration_seconds_count{method="POST",route="/v1/search"} 10
cairn_http_request_duration_seconds_bucket{le="+Inf",method="GET",route="/v1/stats"} 99
cairn_queue_jobs{queue="cairn-capture",state="failed"} 2
cairn_label_escapes{detail="a \\"quoted\\" \\\\ value"} 1
not a metric line
`;

describe('parsePrometheus', () => {
  it('reads samples with labels, skips comments and lines it cannot read', () => {
    const s = parsePrometheus(SCRAPE);
    expect(select(s, 'cairn_queue_jobs')).toEqual([
      { name: 'cairn_queue_jobs', labels: { queue: 'cairn-capture', state: 'failed' }, value: 2 },
    ]);
    expect(select(s, 'cairn_label_escapes')[0]?.labels.detail).toBe('a "quoted" \\ value');
    expect(s.some((x) => x.name === 'not')).toBe(false);
  });
});

describe('search latency', () => {
  const h = searchHistogram(parsePrometheus(SCRAPE))!;

  it('takes the POST /v1/search histogram only, buckets in order', () => {
    expect(h.count).toBe(10);
    expect(h.buckets.map((b) => b.le)).toEqual([0.001, 0.005, 0.01, Infinity]);
  });

  it('interpolates quantiles inside a bucket as histogram_quantile does', () => {
    // rank 5 of 10 falls in (0.001, 0.005] holding 6: 0.001 + 0.004 × 5/6.
    expect(quantile(h, 0.5)).toBeCloseTo(0.001 + (0.004 * 5) / 6, 9);
    // rank 9.5 falls in +Inf: its lower bound.
    expect(quantile(h, 0.95)).toBe(0.01);
  });

  it('charts the requests between two scrapes, and nothing across a counter reset', () => {
    const later = {
      ...h,
      buckets: h.buckets.map((b) => ({ ...b, count: b.count + 2 })),
      sum: h.sum + 0.004,
      count: 12,
    };
    const d = histogramDelta(h, later)!;
    expect(d.count).toBe(2);
    expect(latencyPoint(1, d).mean).toBeCloseTo(0.002, 9);
    expect(histogramDelta(later, h)).toBeNull();
    expect(histogramDelta(h, h)).toBeNull();
  });
});
