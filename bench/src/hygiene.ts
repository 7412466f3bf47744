// Memory hygiene on LoCoMo, through the CLI as a user runs it (fresh `cairn ingest`, `cairn consolidate`
// and `cairn search --queries` processes):
//   1. what consolidation does to LoCoMo itself (how many turns it merges, and recall@10 before and after);
//   2. a dup storm: in every conversation, one observation (what the evidence of its first question says)
//      written 1,000 times among the turns. It must not flood the top 10, and `cairn consolidate` must merge it into one memory;
//   3. the other hygiene options as search rows (MMR over tags, per-kind half-lives, confidence weight).
// Usage: pnpm bench:hygiene [path/to/locomo-dev.json]
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { CLI_PATH, cliIngest, cliSearch } from './cli-runner.js';
import { type LocomoSet, loadLocomo } from './locomo-data.js';
import { meanScores, scoreRanking } from './retrieval-metrics.js';

const DEFAULT_PATH = resolve(import.meta.dirname, '../../../shared/eval/locomo-dev.json');
const STORM_COPIES = 1_000;

interface Row {
  label: string;
  options: Record<string, unknown>;
}

const ROWS: Row[] = [
  { label: 'defaults (no options)', options: {} },
  { label: 'MMR 0.7 with tag overlap (mmrTagWeight 0.35)', options: { mmrLambda: 0.7 } },
  { label: 'kindHalfLives turn 30d (auto decay)', options: { kindHalfLives: { turn: '30d' } } },
  { label: 'confidenceWeight 1 (no confidences stated: neutral)', options: { confidenceWeight: 1 } },
  { label: 'rerank deterministic (query coverage), depth 20', options: { rerank: 'deterministic' } },
  { label: 'rerank deterministic, depth 10', options: { rerank: 'deterministic', rerankDepth: 10 } },
];

/**
 * The storm's text: what the evidence turn of the conversation's first question says, as an agent's
 * observation, so that the copies compete for the top 10 of the questions about it.
 */
function stormText(data: LocomoSet, ns: string): string {
  const q = data.questions.find((x) => x.namespace === ns)!;
  const turn = data.turns.find((t) => t.namespace === ns && q.evidence.includes(t.id))!;
  return `Observation: ${turn.agent} said: ${turn.text}`;
}

function consolidate(dataDir: string): { merged: number; exact: number; near: number; seconds: number } {
  const t0 = performance.now();
  const out = execFileSync(process.execPath, [CLI_PATH, 'consolidate', '--json', '--data-dir', dataDir], {
    encoding: 'utf8',
    maxBuffer: 1 << 28,
  });
  const r = JSON.parse(out) as { merged: number; exact: number; near: number };
  return { merged: r.merged, exact: r.exact, near: r.near, seconds: (performance.now() - t0) / 1000 };
}

interface Measured {
  recall10: number;
  hit1: number;
  mrr: number;
  /** Questions whose top 10 holds a storm copy, and the most copies any top 10 holds. */
  stormIn: number;
  stormMax: number;
}

function measure(data: LocomoSet, dataDir: string, options: Record<string, unknown>): Measured {
  const hits = cliSearch(
    data.questions.map((q, i) => ({
      id: String(i),
      namespace: q.namespace,
      query: q.question,
      k: 10,
      ...options,
    })),
    dataDir,
  );
  const scores = data.questions.map((q, i) => scoreRanking(hits.get(String(i)) ?? [], q.evidence));
  const m = meanScores(scores);
  let stormIn = 0;
  let stormMax = 0;
  for (const [, ids] of hits) {
    const n = ids.filter((id) => id.startsWith('storm-')).length;
    if (n > 0) stormIn++;
    stormMax = Math.max(stormMax, n);
  }
  return { recall10: m.recall10, hit1: m.hit1, mrr: m.rr, stormIn, stormMax };
}

function main(): void {
  const path =
    process.argv.slice(2).find((a) => !a.startsWith('--')) ?? process.env.LOCOMO_PATH ?? DEFAULT_PATH;
  if (!existsSync(path)) {
    console.error(
      `LoCoMo data not found at ${path} (expected at ../shared/eval/locomo-dev.json beside the repo)`,
    );
    process.exit(2);
  }
  const data = loadLocomo(path);
  const f = (x: number) => x.toFixed(3);
  const lines: string[] = [
    `Memory hygiene on LoCoMo through the CLI (${data.turns.length} turns, ${data.questions.length} questions, k = 10)`,
    '',
  ];
  const root = mkdtempSync(join(tmpdir(), 'cairn-hygiene-'));
  try {
    // 1. LoCoMo alone, then consolidated.
    const plain = join(root, 'plain');
    mkdirSync(plain);
    cliIngest(
      data.turns.map((t) => ({ ...t, ts: new Date(t.ts).toISOString() })),
      plain,
    );
    lines.push('| run | recall@10 | hit@1 | MRR |', '|---|---:|---:|---:|');
    for (const row of ROWS) {
      const m = measure(data, plain, row.options);
      lines.push(`| ${row.label} | ${f(m.recall10)} | ${f(m.hit1)} | ${f(m.mrr)} |`);
    }
    const c = consolidate(plain);
    const after = measure(data, plain, {});
    lines.push(
      `| defaults, after \`cairn consolidate\` (${c.merged} turns merged: ${c.exact} same text, ${c.near} by cosine; ${c.seconds.toFixed(1)} s) | ${f(after.recall10)} | ${f(after.hit1)} | ${f(after.mrr)} |`,
    );

    // 2. The dup storm.
    const storm = join(root, 'storm');
    mkdirSync(storm);
    const namespaces = [...data.lastSessionTs.keys()];
    const copies = namespaces.flatMap((ns) => {
      const turns = data.turns.filter((t) => t.namespace === ns);
      const first = Math.min(...turns.map((t) => t.ts));
      const last = Math.max(...turns.map((t) => t.ts));
      const text = stormText(data, ns);
      return Array.from({ length: STORM_COPIES }, (_, i) => ({
        namespace: ns,
        id: `storm-${i}`,
        kind: 'observation',
        text,
        ts: new Date(first + ((last - first) * i) / STORM_COPIES).toISOString(),
      }));
    });
    const t0 = performance.now();
    cliIngest([...data.turns.map((t) => ({ ...t, ts: new Date(t.ts).toISOString() })), ...copies], storm);
    const ingestS = (performance.now() - t0) / 1000;
    const before = measure(data, storm, {});
    const merged = consolidate(storm);
    const cleaned = measure(data, storm, {});
    lines.push(
      '',
      `Dup storm: ${STORM_COPIES} copies of one observation (the evidence of the conversation's first question), in each of ${namespaces.length} conversations (${copies.length} memories among ${data.turns.length} turns; ingest ${ingestS.toFixed(1)} s)`,
      '',
      '| run | recall@10 | hit@1 | questions with a copy in the top 10 | most copies in one top 10 |',
      '|---|---:|---:|---:|---:|',
      `| before consolidation | ${f(before.recall10)} | ${f(before.hit1)} | ${before.stormIn} | ${before.stormMax} |`,
      `| after \`cairn consolidate\` (${merged.merged} merged, ${merged.seconds.toFixed(1)} s) | ${f(cleaned.recall10)} | ${f(cleaned.hit1)} | ${cleaned.stormIn} | ${cleaned.stormMax} |`,
    );
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
  process.stdout.write(`${lines.join('\n')}\n`);
}

if (import.meta.url === `file://${process.argv[1]}`) main();
