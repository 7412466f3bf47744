import { fmtInt, fmtMs } from './format.js';
import { type Histogram, type LatencyPoint, quantile } from './latency.js';

const W = 640;
const H = 180;
const PAD = { left: 56, right: 12, top: 10, bottom: 24 };

/**
 * POST /v1/search latency over time: per scrape interval, the mean and the p95 (from the histogram's
 * bucket counts, interpolated as Prometheus does), as two SVG lines; and the totals since the server
 * started. A interval without searches has no point: the line breaks rather than drawing a made-up 0.
 */
export function LatencyChart({ points, total }: { points: LatencyPoint[]; total: Histogram | null }) {
  const p50 = total ? quantile(total, 0.5) : null;
  const p95 = total ? quantile(total, 0.95) : null;
  const summary = total ? (
    <p data-testid="latency-total">
      {fmtInt(total.count)} searches since the server started
      {total.count > 0
        ? ` · mean ${fmtMs(total.sum / total.count)} · p50 ≈ ${fmtMs(p50 ?? 0)} · p95 ≈ ${fmtMs(p95 ?? 0)}`
        : ''}
    </p>
  ) : (
    <p class="muted">No search latency reported yet (cairn_http_request_duration_seconds).</p>
  );
  if (points.length === 0)
    return (
      <>
        {summary}
        <p class="muted">The chart starts with the next searches made while this page is open.</p>
      </>
    );
  const t0 = points[0]!.at;
  const t1 = Math.max(points[points.length - 1]!.at, t0 + 1);
  const yMax = Math.max(0.001, ...points.map((p) => Math.max(p.p95 ?? 0, p.mean))) * 1.1;
  const x = (t: number) => PAD.left + ((t - t0) / (t1 - t0)) * (W - PAD.left - PAD.right);
  const y = (v: number) => H - PAD.bottom - (v / yMax) * (H - PAD.top - PAD.bottom);
  const line = (get: (p: LatencyPoint) => number | null) =>
    points
      .filter((p) => get(p) !== null)
      .map((p, i) => `${i === 0 ? 'M' : 'L'}${x(p.at).toFixed(1)},${y(get(p)!).toFixed(1)}`)
      .join(' ');
  const ticks = [0, 0.5, 1].map((f) => f * yMax);
  return (
    <>
      {summary}
      <svg
        class="latency-chart"
        data-testid="latency-chart"
        viewBox={`0 0 ${W} ${H}`}
        role="img"
        aria-label={`search latency over the last ${points.length} intervals`}
      >
        {ticks.map((v) => (
          <g key={v}>
            <line class="grid" x1={PAD.left} x2={W - PAD.right} y1={y(v)} y2={y(v)} />
            <text class="axis" x={PAD.left - 4} y={y(v) + 4} text-anchor="end">
              {fmtMs(v)}
            </text>
          </g>
        ))}
        <text class="axis" x={PAD.left} y={H - 6}>
          {new Date(t0).toLocaleTimeString()}
        </text>
        <text class="axis" x={W - PAD.right} y={H - 6} text-anchor="end">
          {new Date(t1).toLocaleTimeString()}
        </text>
        <path class="line-p95" d={line((p) => p.p95)} />
        <path class="line-mean" d={line((p) => p.mean)} />
        {points.map((p) => (
          <circle key={p.at} class="dot" cx={x(p.at)} cy={y(p.mean)} r={2.5}>
            <title>{`${new Date(p.at).toLocaleTimeString()}: ${p.requests} searches, mean ${fmtMs(p.mean)}, p95 ${fmtMs(p.p95 ?? 0)}`}</title>
          </circle>
        ))}
      </svg>
      <div class="legend">
        <span>
          <i class="swatch line-mean-swatch" />
          mean
        </span>
        <span>
          <i class="swatch line-p95-swatch" />
          p95
        </span>
      </div>
    </>
  );
}
