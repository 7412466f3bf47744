// What a consolidation catch-up costs the searches beside it: `cairn serve` over a copy of a data folder
// whose memories were never consolidated (a fresh `cairn ingest`), `--clients` closed-loop searches for a
// warm-up and a quiet phase, then `POST /v1/hygiene/consolidate` with the searches still running until it
// answers. Prints search throughput and p50/p99 for both phases and how long the pass took. With `--cli`
// given twice (another build's apps/cli/dist/main.js), the builds run one after the other on fresh copies.
// Usage: node bench/dist/consolidation-beside-search.js --data-dir D [--cli PATH ...] [--clients 8]
//          [--warmup 15] [--quiet 15]
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { ClosedLoopSearches, untilReady } from './closed-loop-searches.js';
import { gitRevision } from './git-revision.js';
import { CLI_SCRIPT, leftovers, ServeProcess } from './serve-process.js';
import { generateCorpus } from './synthetic-corpus.js';
import { makeQueries, toRequest } from './synthetic-queries.js';

const { values } = parseArgs({
  options: {
    'data-dir': { type: 'string' },
    cli: { type: 'string', multiple: true },
    clients: { type: 'string', default: '8' },
    warmup: { type: 'string', default: '15' },
    quiet: { type: 'string', default: '15' },
  },
});
if (!values['data-dir']) {
  console.error(
    'usage: node bench/dist/consolidation-beside-search.js --data-dir D [--cli PATH ...] [--clients 8] [--warmup 15] [--quiet 15]\n' +
      'D: a data folder made by `cairn ingest` of the synthetic corpus and never served (its consolidation cursor at the start); build one with `node bench/dist/api.js --data-dir D`',
  );
  process.exit(2);
}
const CLIENTS = Number(values.clients);
const WARMUP_MS = Number(values.warmup) * 1000;
const QUIET_MS = Number(values.quiet) * 1000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const corpus = generateCorpus({ mainDocs: 100_000, seed: 42 });
const bodies = makeQueries(
  corpus,
  2000,
  43,
  corpus.namespaces.map((n) => n.namespace),
).map((q) => JSON.stringify(toRequest(q, { k: 10 })));

async function measure(cli: string): Promise<string> {
  const work = mkdtempSync(join(tmpdir(), 'cairn-consolidation-'));
  leftovers.dirs.add(work);
  cpSync(values['data-dir']!, work, { recursive: true });
  const server = new ServeProcess({ dataDir: work, cli, progress: (msg) => console.error(msg) });
  try {
    const base = await server.url;
    await untilReady(base, server, `${cli} serve`);
    const searches = new ClosedLoopSearches(base, bodies, CLIENTS);
    await sleep(WARMUP_MS);
    searches.phase = 'quiet';
    await sleep(QUIET_MS);
    searches.phase = 'during';
    const t0 = performance.now();
    const res = await fetch(`${base}/v1/hygiene/consolidate`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    const report = (await res.json()) as { scanned?: number; merged?: number };
    const passSeconds = (performance.now() - t0) / 1000;
    await searches.stop();
    if (res.status !== 200) throw new Error(`consolidate answered ${res.status}: ${JSON.stringify(report)}`);
    const quiet = searches.summary('quiet', QUIET_MS / 1000);
    const during = searches.summary('during', passSeconds);
    const f = (s: typeof quiet) => `${s.rate.toFixed(0)}/s, ${s.p50.toFixed(1)} / ${s.p99.toFixed(1)}`;
    return `| ${cli} | ${f(quiet)} | ${f(during)} | ${(during.rate / quiet.rate).toFixed(2)} | ${passSeconds.toFixed(1)} s (${report.scanned} scanned, ${report.merged} merged) |`;
  } finally {
    await server.stop();
    rmSync(work, { recursive: true, force: true });
    leftovers.dirs.delete(work);
  }
}

const clis = values.cli?.length ? values.cli : [CLI_SCRIPT];
console.log(
  `# cairn serve over a copy of ${values['data-dir']}: ${CLIENTS} closed-loop search clients, ${values.warmup} s warm-up, ${values.quiet} s quiet, then a consolidation pass; revision ${gitRevision()}; Node ${process.version}`,
);
console.log('| build | quiet: searches/s, p50 / p99 ms | during the pass | during ÷ quiet | the pass |');
console.log('|---|---|---|---:|---|');
for (const cli of clis) console.log(await measure(cli));
