// What polling the monitoring routes costs the searches beside it: `cairn serve` over a copy of a data folder,
// `--clients` closed-loop searches for a warm-up, then a quiet phase, then a phase with GET /v1/spaces and
// GET /v1/stats polled once a second (as a dashboard, `cairn spaces` or the live-reindex benchmark does).
// Prints search throughput and p50/p99 for both phases, and the routes' own latencies. With `--cli` given
// twice (another build's apps/cli/dist/main.js), both builds run one after the other on copies of the folder.
// Usage: node bench/dist/monitoring-routes.js --data-dir D [--cli PATH ...] [--clients 4] [--warmup 10]
//          [--phase 20]
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { ClosedLoopSearches, quantile, untilReady } from './closed-loop-searches.js';
import { gitRevision } from './git-revision.js';
import { CLI_SCRIPT, leftovers, ServeProcess } from './serve-process.js';
import { generateCorpus } from './synthetic-corpus.js';
import { makeQueries, toRequest } from './synthetic-queries.js';

const { values } = parseArgs({
  options: {
    'data-dir': { type: 'string' },
    cli: { type: 'string', multiple: true },
    clients: { type: 'string', default: '4' },
    warmup: { type: 'string', default: '10' },
    phase: { type: 'string', default: '20' },
  },
});
if (!values['data-dir']) {
  console.error(
    'usage: node bench/dist/monitoring-routes.js --data-dir D [--clients 4] [--warmup 10] [--phase 20]\n' +
      'D: a data folder made by `cairn ingest` of the synthetic corpus; build one with `node bench/dist/api.js --data-dir D` (the synthetic corpus: 100,000 memories stored, embedded and indexed in about 1.5 min, then its API benchmark runs; later runs reuse the folder)',
  );
  process.exit(2);
}
const CLIENTS = Number(values.clients);
const WARMUP_MS = Number(values.warmup) * 1000;
const PHASE_MS = Number(values.phase) * 1000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const corpus = generateCorpus({ mainDocs: 100_000, seed: 42 });
const bodies = makeQueries(
  corpus,
  2000,
  43,
  corpus.namespaces.map((n) => n.namespace),
).map((q) => JSON.stringify(toRequest(q, { k: 10 })));

async function measure(cli: string): Promise<string[]> {
  const work = mkdtempSync(join(tmpdir(), 'cairn-routes-'));
  leftovers.dirs.add(work);
  cpSync(values['data-dir']!, work, { recursive: true });
  const server = new ServeProcess({ dataDir: work, cli, progress: (msg) => console.error(msg) });
  try {
    const base = await server.url;
    await untilReady(base, server, `${cli} serve`);
    const searches = new ClosedLoopSearches(base, bodies, CLIENTS);
    await sleep(WARMUP_MS);
    searches.phase = 'quiet';
    await sleep(PHASE_MS);
    searches.phase = 'polled';
    const routes: Record<string, number[]> = { '/v1/spaces': [], '/v1/stats': [] };
    const t0 = performance.now();
    while (performance.now() - t0 < PHASE_MS) {
      for (const [path, xs] of Object.entries(routes)) {
        const t = performance.now();
        await (await fetch(base + path)).text();
        xs.push(performance.now() - t);
      }
      await sleep(1000);
    }
    await searches.stop();
    const rows = (['quiet', 'polled'] as const).map((p) => {
      const s = searches.summary(p, PHASE_MS / 1000);
      return `| ${cli} | searches, ${p === 'quiet' ? 'nothing polled' : 'routes polled 1/s'} | ${s.rate.toFixed(0)}/s | ${s.p50.toFixed(1)} | ${s.p99.toFixed(1)} |`;
    });
    for (const [path, xs] of Object.entries(routes))
      rows.push(
        `| ${cli} | GET ${path} | ${xs.length} calls | ${quantile(xs, 0.5).toFixed(1)} | max ${Math.max(...xs).toFixed(1)} |`,
      );
    return rows;
  } finally {
    await server.stop();
    rmSync(work, { recursive: true, force: true });
    leftovers.dirs.delete(work);
  }
}

const clis = values.cli?.length ? values.cli : [CLI_SCRIPT];
console.log(
  `# cairn serve over a copy of ${values['data-dir']}: ${CLIENTS} closed-loop search clients, ${values.warmup} s warm-up, ${values.phase} s per phase; revision ${gitRevision()}; Node ${process.version}`,
);
console.log('| build | what | rate / calls | p50 ms | p99 ms |');
console.log('|---|---|---:|---:|---:|');
for (const cli of clis) for (const row of await measure(cli)) console.log(row);
