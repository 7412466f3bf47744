// Does a tenant's ranking depend on what other tenants write? The LoCoMo dev conversations are ingested
// twice through the CLI, as a user runs it: every conversation as a namespace of one shared data folder, and
// each conversation alone in a folder of its own. The same questions then run through `cairn search
// --queries` against both, and the pages are compared: with isolation they are the same pages, whatever
// the other conversations say. Printed: how many pages are identical, how many share their first hit, the
// relative difference of each shared hit's bm25, and recall@10 both ways.
// Usage: pnpm build && node bench/dist/tenant-isolation.js [path/to/locomo-dev.json]
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { cliIngest, cliSearchResponses } from './cli-runner.js';
import { gitRevision } from './git-revision.js';
import { type LocomoSet, loadLocomo } from './locomo-data.js';
import { meanScores, scoreRanking } from './retrieval-metrics.js';

const DEFAULT_PATH = resolve(import.meta.dirname, '../../../shared/eval/locomo-dev.json');

interface Hit {
  id: string;
  explain?: { bm25?: number };
}

/** Every question through one `cairn search --queries` process per folder; responses by question index. */
function pages(data: LocomoSet, folderOf: (namespace: string) => string): Map<string, Hit[]> {
  const out = new Map<string, Hit[]>();
  const byFolder = new Map<string, Array<{ id: string; namespace: string; query: string; k: number }>>();
  data.questions.forEach((q, i) => {
    const dir = folderOf(q.namespace);
    if (!byFolder.has(dir)) byFolder.set(dir, []);
    byFolder.get(dir)!.push({ id: String(i), namespace: q.namespace, query: q.question, k: 10 });
  });
  for (const [dir, queries] of byFolder)
    for (const [id, r] of cliSearchResponses(queries, dir)) out.set(id, (r.hits ?? []) as Hit[]);
  return out;
}

function ingest(data: LocomoSet, dataDir: string, keep: (namespace: string) => boolean): void {
  mkdirSync(dataDir);
  cliIngest(
    data.turns.filter((t) => keep(t.namespace)).map((t) => ({ ...t, ts: new Date(t.ts).toISOString() })),
    dataDir,
  );
}

function main(): void {
  const path = process.argv[2] ?? process.env.LOCOMO_PATH ?? DEFAULT_PATH;
  const data = loadLocomo(path);
  const namespaces = [...data.lastSessionTs.keys()];
  const root = mkdtempSync(join(tmpdir(), 'cairn-isolation-'));
  try {
    const shared = join(root, 'shared');
    ingest(data, shared, () => true);
    const alone = new Map(namespaces.map((ns, i) => [ns, join(root, `alone-${i}`)]));
    for (const [ns, dir] of alone) ingest(data, dir, (n) => n === ns);
    const together = pages(data, () => shared);
    const apart = pages(data, (ns) => alone.get(ns)!);
    let identical = 0;
    let sameFirst = 0;
    const rel: number[] = [];
    for (const [id, hits] of apart) {
      const other = together.get(id) ?? [];
      if (hits.map((h) => h.id).join() === other.map((h) => h.id).join()) identical++;
      if (hits[0] && hits[0].id === other[0]?.id) sameFirst++;
      for (const h of hits) {
        const a = h.explain?.bm25;
        const b = other.find((o) => o.id === h.id)?.explain?.bm25;
        if (a !== undefined && b !== undefined && a !== 0) rel.push(Math.abs(b - a) / Math.abs(a));
      }
    }
    rel.sort((a, b) => a - b);
    const at = (p: number) => (rel.length ? rel[Math.min(rel.length - 1, Math.floor(rel.length * p))]! : 0);
    const recall = (got: Map<string, Hit[]>) =>
      meanScores(
        data.questions.map((q, i) =>
          scoreRanking(
            (got.get(String(i)) ?? []).map((h) => h.id),
            q.evidence,
          ),
        ),
      ).recall10;
    const n = data.questions.length;
    console.log(
      `Tenant isolation on LoCoMo through the CLI (${namespaces.length} conversations, ${n} questions, k = 10; revision ${gitRevision()})\n`,
    );
    console.log('| measure | value |\n|---|---:|');
    console.log(`| pages identical, shared folder vs each conversation alone | ${identical} / ${n} |`);
    console.log(`| same first hit | ${sameFirst} / ${n} |`);
    console.log(
      `| a hit's bm25, relative difference: median / p90 / max | ${at(0.5).toFixed(4)} / ${at(0.9).toFixed(4)} / ${at(1).toFixed(4)} |`,
    );
    console.log(`| recall@10, shared folder | ${recall(together).toFixed(3)} |`);
    console.log(`| recall@10, each alone | ${recall(apart).toFixed(3)} |`);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

main();
