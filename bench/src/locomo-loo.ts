// How the defaults were chosen without fitting the dev split: leave one conversation out. For each LoCoMo
// dev conversation, the configuration with the best recall@10 on the other conversations is picked and
// scored on the held-out one. Every configuration runs through the CLI as a user runs it (runLocomo).
// Usage: node bench/dist/locomo-loo.js [path/to/locomo-dev.json] [--grid context-agent-session|vector|context-vector|routes]
//   --grid routes gives every turn the named fields facts, next and previous (multi-route recall).
import { resolve } from 'node:path';
import { type LocomoRow, runLocomo } from './locomo.js';
import type { LocomoField } from './locomo-data.js';
import { meanScores } from './retrieval-metrics.js';

const DEFAULT_PATH = resolve(import.meta.dirname, '../../../shared/eval/locomo-dev.json');

/**
 * The grid: the session context's weight (the turns before and after) × the named-agent boost × session
 * match (the lexical leg) × session support (fusion). The hashing vector leg keeps its 0.05 backstop weight, which every fold picked in the previous
 * grid (context × vector weight, bench/RESULTS.md); `--grid context-vector` runs that grid again.
 */
export function looGrid(which = 'context-agent-session'): LocomoRow[] {
  const rows: LocomoRow[] = [];
  if (which === 'routes') {
    for (const routeFusion of ['best', 'sum']) {
      for (const routeWeight of [0, 0.25, 0.5, 1]) {
        if (routeWeight === 0 && routeFusion === 'sum') continue;
        rows.push({
          label: `routes ${routeFusion}, weight ${routeWeight}`,
          options: { routeFusion, routeWeight },
        });
      }
    }
    return rows;
  }
  if (which === 'vector') {
    for (const vector of [0, 0.005, 0.02, 0.05, 0.1, 0.25]) {
      rows.push({ label: `vector ${vector}`, options: { weights: { vector } } });
    }
    return rows;
  }
  if (which === 'context-vector') {
    for (const contextWeight of [0, 0.25, 0.5, 1]) {
      for (const vector of [0.05, 0.25, 1]) {
        rows.push({
          label: `context ${contextWeight}, vector ${vector}`,
          options: { contextWeight, weights: { vector } },
        });
      }
    }
    return rows;
  }
  for (const contextWeight of [0.5, 1]) {
    for (const agentBoost of [0, 0.25, 0.5]) {
      for (const sessionMatch of [0, 0.1, 0.25, 0.5]) {
        for (const vector of [0.02, 0.05]) {
          rows.push({
            label: `context ${contextWeight}, agent ${agentBoost}, session match ${sessionMatch}, vector ${vector}`,
            options: { contextWeight, agentBoost, sessionMatch, weights: { vector } },
          });
        }
      }
    }
  }
  // Session support (fusion), an option: never picked by any fold in a grid that had it (bench/RESULTS.md).
  rows.push({ label: 'defaults + session support 0.3', options: { sessionSupport: 0.3 } });
  return rows;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const args = process.argv.slice(2);
  const gridAt = args.indexOf('--grid');
  const which = gridAt >= 0 ? args.splice(gridAt, 2)[1] : undefined;
  const path = args[0] ?? process.env.LOCOMO_PATH ?? DEFAULT_PATH;
  const fields: LocomoField[] = which === 'routes' ? ['facts', 'next', 'previous'] : [];
  const { runs } = runLocomo(path, looGrid(which), fields);
  const grid = runs.slice(1); // runs[0] is the reference BM25
  const conversations = [...new Set(grid[0]!.scores.map((x) => x.q.namespace))];
  const recall = (run: (typeof grid)[number], keep: (ns: string) => boolean) =>
    meanScores(run.scores.filter((x) => keep(x.q.namespace)).map((x) => x.s));
  const f = (x: number) => x.toFixed(3);
  const lines = [
    'Leave one conversation out (recall@10 through the CLI; pick = best on the other conversations)',
    '',
    `| config | ${conversations.join(' | ')} | all |`,
    `|---|${conversations.map(() => '---:').join('|')}|---:|`,
  ];
  for (const run of grid) {
    lines.push(
      `| ${run.label} | ${conversations.map((ns) => f(recall(run, (n) => n === ns).recall10)).join(' | ')} | ${f(recall(run, () => true).recall10)} |`,
    );
  }
  lines.push('', '| held out | picked on the others | held-out recall@10 |', '|---|---|---:|');
  let hits = 0;
  let n = 0;
  for (const held of conversations) {
    const best = grid.reduce((a, b) =>
      recall(b, (ns) => ns !== held).recall10 > recall(a, (ns) => ns !== held).recall10 ? b : a,
    );
    const score = recall(best, (ns) => ns === held);
    hits += score.recall10 * score.n;
    n += score.n;
    lines.push(`| ${held} | ${best.label} | ${f(score.recall10)} |`);
  }
  lines.push('', `Held-out recall@10 over all questions: ${f(hits / n)}`);
  const reference = runs[0]!;
  lines.push(`Reference BM25 recall@10 in the same run: ${f(recall(reference, () => true).recall10)}`);
  process.stdout.write(`${lines.join('\n')}\n`);
}
