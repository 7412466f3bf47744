// LoCoMo retrieval through the CLI as a user runs it: a fresh `cairn ingest` process, then a fresh
// `cairn search --queries … --json` process per row. The first row is the defaults (no options in the
// query): that is the headline. Every other row is an ablation. The reference BM25 of shared/eval/README.md
// is computed in the same run. Usage: pnpm bench:locomo [path/to/locomo-dev.json] [--rows '<json>']
//   --rows replaces the ablation rows: a JSON array of { "label": …, "options": { …search options… } }.
//   --fields facts,next gives every turn those named fields (multi-route recall; see LocomoField).
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { cliIngest, cliSearch } from './cli-runner.js';
import { type LocomoField, type LocomoQuestion, type LocomoSet, loadLocomo } from './locomo-data.js';
import { ReferenceBm25 } from './reference-bm25.js';
import { meanScores, type QueryScores, scoreRanking } from './retrieval-metrics.js';

const DEFAULT_PATH = resolve(import.meta.dirname, '../../../shared/eval/locomo-dev.json');
const CATEGORY = { 1: 'multi-hop', 2: 'temporal', 3: 'open-domain', 4: 'single-hop' } as Record<
  number,
  string
>;

export interface LocomoRow {
  label: string;
  options: Record<string, unknown>;
}

/**
 * The ablation: the default, then each capability taken out on its own, the legs alone, age, and the seeds'
 * recipes as configurations of Cairn. Contextual indexing (the turns before and after a turn) is in the
 * index, not the query: `contextWeight: 0` ranks by a memory's own words only.
 */
export const DEFAULT_ROWS: LocomoRow[] = [
  { label: 'cairn, defaults (no options)', options: {} },
  { label: 'without the named-agent boost', options: { agentBoost: 0 } },
  { label: 'without session match', options: { sessionMatch: 0 } },
  { label: 'without either (context only)', options: { agentBoost: 0, sessionMatch: 0 } },
  { label: 'without context (own words only)', options: { contextWeight: 0 } },
  {
    label: 'without context, agent or session match',
    options: { contextWeight: 0, agentBoost: 0, sessionMatch: 0 },
  },
  { label: '+ session support 0.3 (option)', options: { sessionSupport: 0.3 } },
  { label: 'lexical leg only', options: { weights: { vector: 0 } } },
  { label: 'vector leg only', options: { weights: { lexical: 0 } } },
  { label: 'hashing vector leg at weight 1', options: { weights: { vector: 1 } } },
  { label: 'defaults, decay off', options: { decay: 'off' } },
  { label: 'defaults, decay 30d (the old default)', options: { decay: '30d' } },
  {
    label: 'seed recipe: FTS5 + vector RRF k=60, 7-day decay',
    options: {
      contextWeight: 0,
      agentBoost: 0,
      sessionMatch: 0,
      weights: { vector: 1 },
      rrfK: 60,
      decay: '7d',
    },
  },
  {
    label: 'seed recipe: vector only, 90-day cutoff',
    options: { weights: { lexical: 0, vector: 1 }, agentBoost: 0, decay: 'off', cutoffDays: 90 },
  },
  {
    label: 'seed recipe: RRF k=15 + MMR 0.7',
    options: {
      contextWeight: 0,
      agentBoost: 0,
      sessionMatch: 0,
      weights: { vector: 1 },
      rrfK: 15,
      mmrLambda: 0.7,
      decay: 'off',
    },
  },
];

export interface LocomoRun {
  label: string;
  /** Per question, in data order. */
  scores: Array<{ q: LocomoQuestion; s: QueryScores }>;
}

/**
 * Ingests every LoCoMo turn through a fresh `cairn ingest` process into a temporary data folder, runs `fn`
 * on it, then removes the folder.
 */
export function withLocomoFolder<T>(data: LocomoSet, fn: (dataDir: string) => T): T {
  const dir = mkdtempSync(join(tmpdir(), 'cairn-locomo-'));
  const dataDir = join(dir, 'data');
  mkdirSync(dataDir);
  try {
    cliIngest(
      data.turns.map((t) => ({ ...t, ts: new Date(t.ts).toISOString() })),
      dataDir,
    );
    return fn(dataDir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Ingests every conversation through `cairn ingest`, then runs each row through `cairn search --queries`. */
export function runLocomo(
  path: string,
  rows: readonly LocomoRow[],
  fields: readonly LocomoField[] = [],
): { runs: LocomoRun[]; turns: number } {
  const data = loadLocomo(path, fields);
  return withLocomoFolder(data, (dataDir) => {
    const runs: LocomoRun[] = [];
    const reference = new Map<string, ReferenceBm25>();
    for (const ns of data.lastSessionTs.keys()) {
      const docs = data.turns.filter((t) => t.namespace === ns).map((t) => ({ id: t.id, text: t.text }));
      reference.set(ns, new ReferenceBm25(docs));
    }
    runs.push({
      label: 'reference BM25',
      scores: data.questions.map((q) => ({
        q,
        s: scoreRanking(reference.get(q.namespace)!.search(q.question, 10), q.evidence),
      })),
    });
    for (const row of rows) {
      const hits = cliSearch(
        data.questions.map((q, i) => {
          const { cutoffDays, ...options } = row.options as { cutoffDays?: number };
          const now = data.lastSessionTs.get(q.namespace)!;
          return {
            id: String(i),
            namespace: q.namespace,
            query: q.question,
            k: 10,
            ...options,
            // A cutoff counts back from when the question is asked (the last session), not from today.
            ...(cutoffDays === undefined ? {} : { filters: { since: now - cutoffDays * 86_400_000 }, now }),
          };
        }),
        dataDir,
      );
      runs.push({
        label: row.label,
        scores: data.questions.map((q, i) => ({ q, s: scoreRanking(hits.get(String(i)) ?? [], q.evidence) })),
      });
    }
    return { runs, turns: data.turns.length };
  });
}

function printTables(runs: LocomoRun[], turns: number): void {
  const f = (x: number) => x.toFixed(3);
  const questions = runs[0]!.scores.length;
  const lines = [
    `LoCoMo retrieval through the CLI (${turns} turns, ${questions} questions of categories 1–4 with evidence; k = 10; every question asked after the last session)`,
    '',
    '| run | n | hit@1 | hit@5 | hit@10 | recall@5 | recall@10 | MRR |',
    '|---|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const run of runs) {
    const m = meanScores(run.scores.map((x) => x.s));
    lines.push(
      `| ${run.label} | ${m.n} | ${f(m.hit1)} | ${f(m.hit5)} | ${f(m.hit10)} | ${f(m.recall5)} | ${f(m.recall10)} | ${f(m.rr)} |`,
    );
  }
  const conversations = [...new Set(runs[0]!.scores.map((x) => x.q.namespace))];
  const cats = [...new Set(runs[0]!.scores.map((x) => x.q.category))].sort();
  lines.push('', `recall@10 per conversation and per category`, '');
  lines.push(`| run | ${[...conversations, ...cats.map((c) => `${c} ${CATEGORY[c]}`)].join(' | ')} |`);
  lines.push(`|---|${[...conversations, ...cats].map(() => '---:').join('|')}|`);
  for (const run of runs) {
    const by = (keep: (q: LocomoQuestion) => boolean) =>
      f(meanScores(run.scores.filter((x) => keep(x.q)).map((x) => x.s)).recall10);
    lines.push(
      `| ${run.label} | ${[
        ...conversations.map((ns) => by((q) => q.namespace === ns)),
        ...cats.map((c) => by((q) => q.category === c)),
      ].join(' | ')} |`,
    );
  }
  lines.push('', 'hit@10 / recall@10 / MRR per category', '');
  lines.push(`| run | ${cats.map((c) => `${c} ${CATEGORY[c]}`).join(' | ')} |`);
  lines.push(`|---|${cats.map(() => '---:').join('|')}|`);
  for (const run of runs) {
    const cell = (c: number) => {
      const m = meanScores(run.scores.filter((x) => x.q.category === c).map((x) => x.s));
      return `${f(m.hit10)} / ${f(m.recall10)} / ${f(m.rr)}`;
    };
    lines.push(`| ${run.label} | ${cats.map(cell).join(' | ')} |`);
  }
  process.stdout.write(`${lines.join('\n')}\n`);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const args = process.argv.slice(2);
  const rowsAt = args.indexOf('--rows');
  const rows =
    rowsAt >= 0 ? [DEFAULT_ROWS[0]!, ...(JSON.parse(args[rowsAt + 1]!) as LocomoRow[])] : DEFAULT_ROWS;
  const fieldsAt = args.indexOf('--fields');
  const fields = fieldsAt >= 0 ? (args[fieldsAt + 1]!.split(',') as LocomoField[]) : [];
  const path =
    args.find((a, i) => !a.startsWith('--') && args[i - 1] !== '--rows' && args[i - 1] !== '--fields') ??
    process.env.LOCOMO_PATH ??
    DEFAULT_PATH;
  if (!existsSync(path)) {
    console.error(
      `LoCoMo data not found at ${path}. It is expected at ../shared/eval/locomo-dev.json beside the repo`,
    );
    console.error(
      '(CC BY-NC 4.0, evaluation only: it is never copied into this repository). Pass another path as the argument.',
    );
    process.exit(2);
  }
  const { runs, turns } = runLocomo(path, rows, fields);
  printTables(runs, turns);
}
