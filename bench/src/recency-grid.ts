// How the defaults of the 'auto' decay were chosen: a grid of its settings, each run through the CLI on the
// LoCoMo dev conversations and on the recency set, then leave-one-conversation-out. For each held-out
// conversation the setting is picked on the other four and the recency set alone, by one rule:
//   the best worse half of the recency set (min of current and old hit@1), then the best MRR on the four,
//   MRR differences under 0.005 counted as noise, and among equals the smaller reaches (age counts least);
// and the held-out conversation's figures are reported beside decay off.
// Usage: pnpm build && node bench/dist/recency-grid.js [path/to/locomo-dev.json]
import { resolve } from 'node:path';
import { type LocomoRow, runLocomo } from './locomo.js';
import { runRecency } from './recency.js';
import { meanScores } from './retrieval-metrics.js';

const DEFAULT_PATH = resolve(import.meta.dirname, '../../../shared/eval/locomo-dev.json');

const grid: LocomoRow[] = [];
for (const peerMargin of [0, 0.15, 0.35])
  for (const tieBreak of [4, 8, 16])
    for (const intent of [10, 20, 40])
      grid.push({
        label: `peerMargin ${peerMargin}, tieBreak ${tieBreak}, intent ${intent}`,
        options: { recency: { peerMargin, tieBreak, intent, peerDepth: 5 } },
      });

const path = process.argv[2] ?? process.env.LOCOMO_PATH ?? DEFAULT_PATH;
const off: LocomoRow = { label: 'decay off', options: { decay: 'off' } };
const { runs } = runLocomo(path, [off, ...grid]);
const recency = runRecency(grid);
const recencyOf = new Map(recency.results.map((r) => [r.label, r]));
const offRun = runs.find((r) => r.label === 'decay off')!;
const conversations = [...new Set(offRun.scores.map((x) => x.q.namespace))];
const f = (x: number) => x.toFixed(3);
const score = (label: string, keep: (ns: string) => boolean) =>
  meanScores(
    runs
      .find((r) => r.label === label)!
      .scores.filter((x) => keep(x.q.namespace))
      .map((x) => x.s),
  );

const lines = [
  `Leave-one-conversation-out choice of the 'auto' decay's settings (${grid.length} settings; through the CLI)`,
  '',
  '| held out | chosen on the other four + the recency set | recency current / old hit@1 | held-out recall@10 (decay off) | held-out MRR (decay off) |',
  '|---|---|---|---|---|',
];
for (const held of conversations) {
  const ranked = grid
    .map((g) => {
      const r = recencyOf.get(g.label)!;
      return {
        label: g.label,
        worseHalf: Math.round(Math.min(r.current.hit1, r.old.hit1) * 100) / 100,
        // 0.005 of MRR is a handful of questions' first hit moving a rank: noise, not a preference.
        trainMrr: Math.round(score(g.label, (ns) => ns !== held).rr * 200) / 200,
        r,
      };
    })
    // The grid lists smaller reaches first and the sort is stable: among equals, the least age wins.
    .sort((a, b) => b.worseHalf - a.worseHalf || b.trainMrr - a.trainMrr);
  const pick = ranked[0]!;
  const h = score(pick.label, (ns) => ns === held);
  const o = score('decay off', (ns) => ns === held);
  lines.push(
    `| ${held} | ${pick.label} | ${pick.r.current.hit1} / ${pick.r.old.hit1} | ${f(h.recall10)} (${f(o.recall10)}, ratio ${f(h.recall10 / o.recall10)}) | ${f(h.rr)} (${f(o.rr)}) |`,
  );
}
lines.push('', 'Every setting of the grid, on all five conversations and the recency set:', '');
lines.push(
  '| setting | LoCoMo recall@10 | LoCoMo hit@1 | LoCoMo MRR | recency current hit@1 | recency old hit@1 |',
);
lines.push('|---|---:|---:|---:|---:|---:|');
for (const g of [off, ...grid]) {
  const m = score(g.label, () => true);
  const r = recencyOf.get(g.label);
  lines.push(
    `| ${g.label} | ${f(m.recall10)} | ${f(m.hit1)} | ${f(m.rr)} | ${r?.current.hit1 ?? '—'} | ${r?.old.hit1 ?? '—'} |`,
  );
}
process.stdout.write(`${lines.join('\n')}\n`);
