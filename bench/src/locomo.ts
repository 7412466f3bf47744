// LoCoMo retrieval benchmark: Cairn's lexical, vector and hybrid legs against the reference BM25 of
// shared/eval/README.md, computed in the same run. Usage: pnpm bench:locomo [path/to/locomo-dev.json]
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { SearchRequest } from '@cairn/core';
import { CairnEngine } from '@cairn/engine';
import { type LocomoQuestion, loadLocomo } from './locomo-data.js';
import { ReferenceBm25 } from './reference-bm25.js';
import { meanScores, type QueryScores, scoreRanking } from './retrieval-metrics.js';

const DEFAULT_PATH = resolve(import.meta.dirname, '../../../shared/eval/locomo-dev.json');
const CATEGORY = { 1: 'multi-hop', 2: 'temporal', 3: 'open-domain', 4: 'single-hop' } as Record<
  number,
  string
>;

type Mode = 'reference BM25' | 'cairn lexical' | 'cairn vector' | 'cairn hybrid';

async function main(): Promise<void> {
  const path = process.argv[2] ?? process.env.LOCOMO_PATH ?? DEFAULT_PATH;
  if (!existsSync(path)) {
    console.error(
      `LoCoMo data not found at ${path}. It is expected at ../shared/eval/locomo-dev.json beside the repo`,
    );
    console.error(
      '(CC BY-NC 4.0, evaluation only: it is never copied into this repository). Pass another path as the argument.',
    );
    process.exit(2);
  }
  const data = loadLocomo(path);
  const dir = mkdtempSync(join(tmpdir(), 'cairn-locomo-'));
  const engine = await CairnEngine.open({ dataDir: dir, waitForIndex: true });
  try {
    engine.ingest(data.turns);
    await engine.drain();
    const reference = new Map<string, ReferenceBm25>();
    for (const ns of data.lastSessionTs.keys()) {
      reference.set(
        ns,
        new ReferenceBm25(
          data.turns.filter((t) => t.namespace === ns).map((t) => ({ id: t.id, text: t.text })),
        ),
      );
    }
    const modes: Array<{ mode: Mode; run: (q: LocomoQuestion) => Promise<string[]> }> = [
      { mode: 'reference BM25', run: async (q) => reference.get(q.namespace)!.search(q.question, 10) },
      ...(
        [
          ['cairn lexical', { lexical: 1, vector: 0 }],
          ['cairn vector', { lexical: 0, vector: 1 }],
          ['cairn hybrid', { lexical: 1, vector: 1 }],
        ] as const
      ).map(([mode, weights]) => ({
        mode: mode as Mode,
        run: async (q: LocomoQuestion) => {
          const req: SearchRequest = {
            namespace: q.namespace,
            query: q.question,
            k: 10,
            weights,
            decay: 'off',
          };
          return (await engine.search(req)).hits.map((h) => h.id);
        },
      })),
    ];
    const results = new Map<Mode, Map<number, QueryScores[]>>();
    for (const { mode, run } of modes) {
      const byCat = new Map<number, QueryScores[]>();
      for (const q of data.questions) {
        const s = scoreRanking(await run(q), q.evidence);
        byCat.set(q.category, [...(byCat.get(q.category) ?? []), s]);
      }
      results.set(mode, byCat);
    }
    printTable(results, data.turns.length, data.questions.length);
  } finally {
    await engine.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

function printTable(results: Map<Mode, Map<number, QueryScores[]>>, turns: number, questions: number): void {
  const f = (x: number) => x.toFixed(3);
  const lines = [
    `LoCoMo retrieval (${turns} turns, ${questions} questions of categories 1–4 with evidence; decay off; k = 10)`,
    '',
    '| mode | category | n | hit@1 | hit@5 | hit@10 | recall@5 | recall@10 | MRR |',
    '|---|---|---:|---:|---:|---:|---:|---:|---:|',
  ];
  const overall = new Map<Mode, ReturnType<typeof meanScores>>();
  for (const [mode, byCat] of results) {
    const all = meanScores([...byCat.values()].flat());
    overall.set(mode, all);
    for (const cat of [...byCat.keys()].sort()) {
      const m = meanScores(byCat.get(cat)!);
      lines.push(
        `| ${mode} | ${cat} ${CATEGORY[cat]} | ${m.n} | ${f(m.hit1)} | ${f(m.hit5)} | ${f(m.hit10)} | ${f(m.recall5)} | ${f(m.recall10)} | ${f(m.rr)} |`,
      );
    }
    lines.push(
      `| **${mode}** | **all** | ${all.n} | ${f(all.hit1)} | ${f(all.hit5)} | ${f(all.hit10)} | ${f(all.recall5)} | ${f(all.recall10)} | ${f(all.rr)} |`,
    );
  }
  const ref = overall.get('reference BM25')!;
  const hyb = overall.get('cairn hybrid')!;
  lines.push('');
  lines.push(
    `hybrid vs reference BM25, recall@10: ${f(hyb.recall10)} vs ${f(ref.recall10)} ` +
      `(${hyb.recall10 >= ref.recall10 ? '+' : ''}${f(hyb.recall10 - ref.recall10)} absolute, ` +
      `${(((hyb.recall10 - ref.recall10) / ref.recall10) * 100).toFixed(1)}% relative); ` +
      `hit@10 ${f(hyb.hit10)} vs ${f(ref.hit10)}; MRR ${f(hyb.rr)} vs ${f(ref.rr)}`,
  );
  process.stdout.write(`${lines.join('\n')}\n`);
}

await main();
