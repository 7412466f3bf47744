// The recency benchmark: hit@1 on "current state" and "old event" questions of the generated recency set
// (recency-set.ts), through the CLI as a user runs it. The defaults are the headline; every other row is an
// ablation. Usage: pnpm bench:recency [--json]
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cliIngest, cliSearch } from './cli-runner.js';
import { recencySet } from './recency-set.js';

/** Each row: a label and the options added to every query (none for the defaults). */
export const RECENCY_ROWS: ReadonlyArray<{ label: string; options: Record<string, unknown> }> = [
  { label: 'defaults (no options)', options: {} },
  { label: 'decay off', options: { decay: 'off' } },
  { label: 'decay 30d (the old default: exp(-age/tau) from now, no floor)', options: { decay: '30d' } },
  ...JSON.parse(process.env.RECENCY_ROWS ?? '[]'),
];

export function runRecency(rows = RECENCY_ROWS) {
  const { memories, questions } = recencySet();
  const dir = mkdtempSync(join(tmpdir(), 'cairn-recency-'));
  const dataDir = join(dir, 'data');
  mkdirSync(dataDir);
  try {
    cliIngest(memories, dataDir);
    const results = [];
    for (const row of rows) {
      const hits = cliSearch(
        questions.map((q) => ({ id: q.id, namespace: q.namespace, query: q.query, k: 10, ...row.options })),
        dataDir,
      );
      const halves = { current: { n: 0, hit1: 0, mrr: 0 }, old: { n: 0, hit1: 0, mrr: 0 } };
      // By the form of the question (cued / plain current-state, event / wrong old-event), to see where misses fall.
      const forms = new Map<string, { n: number; hit1: number; mrr: number }>();
      const misses: string[] = [];
      for (const q of questions) {
        const got = hits.get(q.id) ?? [];
        const form = q.id.split('#')[1]!;
        if (!forms.has(form)) forms.set(form, { n: 0, hit1: 0, mrr: 0 });
        const r = got.indexOf(q.answer);
        for (const h of [halves[q.half], forms.get(form)!]) {
          h.n++;
          if (r === 0) h.hit1++;
          h.mrr += r >= 0 ? 1 / (r + 1) : 0;
        }
        if (r !== 0)
          misses.push(
            `${q.half} ${q.id} "${q.query}" → ${got[0] ?? 'nothing'} (answer at ${r < 0 ? '>10' : r + 1})`,
          );
      }
      const f = (h: { n: number; hit1: number; mrr: number }) => ({
        n: h.n,
        hit1: +(h.hit1 / h.n).toFixed(3),
        mrr: +(h.mrr / h.n).toFixed(3),
      });
      results.push({
        label: row.label,
        current: f(halves.current),
        old: f(halves.old),
        forms: Object.fromEntries([...forms].map(([k, v]) => [k, f(v)])),
        misses,
      });
    }
    return { memories: memories.length, questions: questions.length, results };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const r = runRecency();
  if (process.argv.includes('--json')) {
    process.stdout.write(`${JSON.stringify(r, null, 2)}\n`);
  } else {
    const lines = [
      `Recency set (${r.memories} memories, ${r.questions} questions; through the CLI; hit@1 must be ≥ 0.95 on both halves)`,
      '',
      '| run | current hit@1 | current MRR | old hit@1 | old MRR | hit@1: cued / plain / event / wrong |',
      '|---|---:|---:|---:|---:|---|',
      ...r.results.map(
        (x) =>
          `| ${x.label} | ${x.current.hit1} | ${x.current.mrr} | ${x.old.hit1} | ${x.old.mrr} | ` +
          `${['cued', 'plain', 'event', 'wrong'].map((k) => x.forms[k]?.hit1 ?? '-').join(' / ')} |`,
      ),
    ];
    if (process.argv.includes('--misses')) for (const x of r.results) lines.push('', x.label, ...x.misses);
    process.stdout.write(`${lines.join('\n')}\n`);
  }
}
