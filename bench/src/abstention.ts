// Calibrated abstention on LoCoMo, through the CLI as a user runs it: can the relevance signal of a search
// response tell answerable questions from (a) category 5, questions about things never said, built from real
// facts with the person swapped, and (b) questions of another conversation, asked of this one?
// Reports AUROC of relevance.score, and what the default levels do at their thresholds.
// Usage: node bench/dist/abstention.js [path/to/locomo-dev.json]
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { cliSearchResponses } from './cli-runner.js';
import { withLocomoFolder } from './locomo.js';
import { loadLocomo } from './locomo-data.js';

const DEFAULT_PATH = resolve(import.meta.dirname, '../../../shared/eval/locomo-dev.json');

interface Asked {
  namespace: string;
  question: string;
  /** 1–4 answerable, 5 never said (adversarial), 0 from another conversation. */
  set: 'answerable' | 'category 5' | 'other conversation';
}

interface Scored extends Asked {
  score: number;
  level: string;
}

/** Area under the ROC curve: the chance an answerable question scores above an unanswerable one. */
export function auroc(positives: readonly number[], negatives: readonly number[]): number {
  const neg = [...negatives].sort((a, b) => a - b);
  let sum = 0;
  for (const p of positives) {
    let below = 0;
    let ties = 0;
    for (const n of neg) {
      if (n < p) below++;
      else if (n === p) ties++;
      else break;
    }
    sum += below + ties / 2;
  }
  return sum / (positives.length * neg.length);
}

function questions(path: string): Asked[] {
  if (!existsSync(path)) {
    console.error(
      `LoCoMo data not found at ${path}. It is expected at ../shared/eval/locomo-dev.json beside the repo (CC BY-NC 4.0, evaluation only: never copied into this repository). Pass another path as the argument.`,
    );
    process.exit(2);
  }
  const raw = JSON.parse(readFileSync(path, 'utf8')) as Array<{
    sample_id: string;
    qa: Array<{ question: string; category: number }>;
  }>;
  const out: Asked[] = [];
  raw.forEach((s, i) => {
    const namespace = `locomo/${s.sample_id}`;
    for (const q of s.qa) {
      if (q.category >= 1 && q.category <= 4)
        out.push({ namespace, question: q.question, set: 'answerable' });
      if (q.category === 5) out.push({ namespace, question: q.question, set: 'category 5' });
    }
    const other = raw[(i + 1) % raw.length]!;
    for (const q of other.qa) {
      if (q.category >= 1 && q.category <= 4)
        out.push({ namespace, question: q.question, set: 'other conversation' });
    }
  });
  return out;
}

export function runAbstention(path: string): Scored[] {
  const asked = questions(path);
  return withLocomoFolder(loadLocomo(path), (dataDir) => {
    const res = cliSearchResponses(
      asked.map((q, i) => ({ id: String(i), namespace: q.namespace, query: q.question, k: 10 })),
      dataDir,
    );
    return asked.map((q, i) => {
      const r = res.get(String(i)) as { relevance?: { score: number; level: string } } | undefined;
      return { ...q, score: r?.relevance?.score ?? 0, level: r?.relevance?.level ?? 'none' };
    });
  });
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const scored = runAbstention(process.argv[2] ?? process.env.LOCOMO_PATH ?? DEFAULT_PATH);
  const f = (x: number) => x.toFixed(3);
  const of = (set: Asked['set']) => scored.filter((s) => s.set === set);
  const share = (xs: Scored[], keep: (s: Scored) => boolean) =>
    xs.filter(keep).length / Math.max(1, xs.length);
  const answerable = of('answerable');
  const lines = [
    `Abstention through the CLI: relevance.score of each response (${answerable.length} answerable questions)`,
    '',
    '| unanswerable set | n | AUROC | answerable kept (level ≠ none) | unanswerable refused (level none) | balanced accuracy (none) | answerable relevant | unanswerable not relevant | balanced accuracy (relevant) |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const set of ['category 5', 'other conversation'] as const) {
    const neg = of(set);
    const kept = share(answerable, (s) => s.level !== 'none');
    const refused = share(neg, (s) => s.level === 'none');
    const rel = share(answerable, (s) => s.level === 'relevant');
    const notRel = share(neg, (s) => s.level !== 'relevant');
    lines.push(
      `| ${set} | ${neg.length} | ${f(
        auroc(
          answerable.map((s) => s.score),
          neg.map((s) => s.score),
        ),
      )} | ${f(kept)} | ${f(refused)} | ${f((kept + refused) / 2)} | ${f(rel)} | ${f(notRel)} | ${f((rel + notRel) / 2)} |`,
    );
  }
  const conversations = [...new Set(scored.map((s) => s.namespace))];
  lines.push('', '| AUROC per conversation | category 5 | other conversation |', '|---|---:|---:|');
  for (const ns of conversations) {
    const pos = answerable.filter((s) => s.namespace === ns).map((s) => s.score);
    const neg = (set: Asked['set']) =>
      of(set)
        .filter((s) => s.namespace === ns)
        .map((s) => s.score);
    lines.push(
      `| ${ns} | ${f(auroc(pos, neg('category 5')))} | ${f(auroc(pos, neg('other conversation')))} |`,
    );
  }
  process.stdout.write(`${lines.join('\n')}\n`);
}
