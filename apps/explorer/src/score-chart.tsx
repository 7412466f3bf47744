import { fmtFactor, fmtScore } from './format.js';
import { addedParts, factorOffset, factorParts, type HitParts } from './score-parts.js';

const W = 320;
const LABEL_W = 84;
/** Room right of the bars for the value ("0.0002985", "×1.000"). */
const VALUE_W = 68;
const BAR_W = W - LABEL_W - VALUE_W;
const ROW = 14;

/**
 * A hit's score parts as a small SVG: the additive parts (lexical, vector, routes RRF and session support)
 * stacked on one bar scaled to the page's largest sum, then each factor (recency, importance, confidence,
 * agent, boost) as a bar left (lowers the score) or right (raises it) of ×1. Drawn with SVG, not a chart library:
 * a few rectangles, no dependency, nothing fetched.
 */
export function ScoreChart({ parts, scale, score }: { parts: HitParts; scale: number; score: number }) {
  const added = addedParts(parts);
  const factors = factorParts(parts);
  const height = ROW * (1 + factors.length) + 4;
  let x = LABEL_W;
  const summary = [
    ...added.filter((a) => a.value > 0).map((a) => `${a.label} ${fmtScore(a.value)}`),
    ...factors.map((f) => `${f.label} ${fmtFactor(f.value)}`),
    `score ${fmtScore(score)}`,
  ].join(', ');
  const mid = LABEL_W + BAR_W / 2;
  return (
    <svg
      class="score-chart"
      data-testid="score-chart"
      viewBox={`0 0 ${W} ${height}`}
      width={W}
      height={height}
      role="img"
      aria-label={`score parts: ${summary}`}
    >
      <text x={0} y={ROW - 3} class="chart-label">
        RRF parts
      </text>
      {added.map((a) => {
        const w = (Math.max(0, a.value) / scale) * BAR_W;
        const rect = (
          <rect key={a.key} class={`part part-${a.key}`} x={x} y={2} width={w} height={ROW - 4}>
            <title>{`${a.label}: ${fmtScore(a.value)}`}</title>
          </rect>
        );
        x += w;
        return rect;
      })}
      <text x={LABEL_W + BAR_W + 4} y={ROW - 3} class="chart-value">
        {fmtScore(added.reduce((s, a) => s + a.value, 0))}
      </text>
      {factors.map((f, i) => {
        const y = ROW * (i + 1) + 2;
        const off = factorOffset(f.value) * (BAR_W / 2);
        return (
          <g key={f.key}>
            <text x={0} y={y + ROW - 5} class="chart-label">
              {f.label}
            </text>
            <rect class="factor-track" x={LABEL_W} y={y + 1} width={BAR_W} height={ROW - 6} />
            <rect
              class={`factor ${off < 0 ? 'factor-down' : 'factor-up'}`}
              x={off < 0 ? mid + off : mid}
              y={y + 1}
              width={Math.max(Math.abs(off), 1)}
              height={ROW - 6}
            >
              <title>{`${f.label}: ${fmtFactor(f.value)}`}</title>
            </rect>
            <text x={LABEL_W + BAR_W + 4} y={y + ROW - 5} class="chart-value">
              {fmtFactor(f.value)}
            </text>
          </g>
        );
      })}
      <line class="factor-one" x1={mid} x2={mid} y1={ROW} y2={height} />
    </svg>
  );
}

/** The colours of the stacked bar, once above the hits rather than in every chart. */
export function ScoreLegend() {
  return (
    <div class="legend" aria-hidden="true">
      {(['lexical', 'vector', 'routes', 'session'] as const).map((k) => (
        <span key={k}>
          <i class={`swatch part-${k}`} />
          {k === 'session' ? 'session support' : `${k} RRF`}
        </span>
      ))}
      <span>
        <i class="swatch factor-down" />
        factor below ×1
      </span>
      <span>
        <i class="swatch factor-up" />
        above ×1
      </span>
    </div>
  );
}
