// The serving thread while a large vector index is rebuilt: `cairn serve` over a data folder whose main
// namespace lost its saved HNSW graph, under an open-loop search load, until the rebuilt graph serves and for
// a cool-down after. Per 10-second window: searches answered, how many went without the vector leg, latency
// (from when each search was due), and the server's own event-loop delay and RSS from its /metrics.
// Issue 12's target: event-loop lag p99 ≤ 10 ms while a 1M index build and a query load run together.
// Usage: node bench/dist/rebuild-lag.js --data-dir D [--n 1000000] [--rate 50] [--cooldown 20] [--cli main.js]
//          [--node-arg=--cpu-prof …] [--keep-graph --max-seconds S] [--write-rate W [--write-batch B] [--backfill]]
// With --write-rate, W new memories a second (texts of the corpus's own, each made unique, into the sessions
// they came from) are written beside the searches, one per request (B per request with --write-batch: an
// orchestrator flushing its agents' turns), open loop: agents write while others search. With --backfill each
// keeps its corpus memory's own time, so it lands among its session's existing turns (an import of older
// transcripts, an agent's clock behind) and rewrites its neighbours' context; otherwise it is the newest.
// With --keep-graph nothing is deleted: the same load for S seconds over a server whose graph is saved (the
// steady state, with its periodic upkeep: index audits and merges every 30 s).
// D is a folder from `cairn ingest` of the synthetic corpus (`generateCorpus({ mainDocs: n })`); its main
// namespace's graph files are deleted (the next load rebuilds them, so the folder stays usable).
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { EVENT_LOOP_SAMPLING_MS } from '@cairn/http-server';
import { deleteIndexFiles } from './index-files.js';
import { summarize } from './percentiles.js';
import { CLI_SCRIPT, ServeProcess } from './serve-process.js';
import { generateCorpus } from './synthetic-corpus.js';
import { makeQueries, toRequest } from './synthetic-queries.js';

const { values } = parseArgs({
  options: {
    'data-dir': { type: 'string' },
    n: { type: 'string', default: '1000000' },
    rate: { type: 'string', default: '50' },
    cooldown: { type: 'string', default: '20' },
    'max-seconds': { type: 'string', default: '900' },
    namespace: { type: 'string', default: 'acme/platform' },
    cli: { type: 'string', default: CLI_SCRIPT },
    /** Options for the server's node (`--cpu-prof`), repeatable. */
    'node-arg': { type: 'string', multiple: true, default: [] },
    'keep-graph': { type: 'boolean', default: false },
    'write-rate': { type: 'string', default: '0' },
    'write-batch': { type: 'string', default: '1' },
    backfill: { type: 'boolean', default: false },
  },
});
if (!values['data-dir'])
  throw new Error('--data-dir is required (a folder from `cairn ingest` of the corpus)');
const dataDir = values['data-dir'];
const rate = Number(values.rate);
const writeRate = Number(values['write-rate']);
const writeBatch = Math.max(1, Math.floor(Number(values['write-batch'])));
const WINDOW_MS = 10_000;
const SCRAPE_MS = 2_000;
const t0 = performance.now();
const progress = (msg: string) =>
  process.stderr.write(`[rebuild-lag ${((performance.now() - t0) / 1000).toFixed(1)}s] ${msg}\n`);

interface Sample {
  /** When it was due, ms since the load started (open loop). */
  due: number;
  ms: number;
  ok: boolean;
  /** Answered without the vector leg. */
  degraded: boolean;
}
interface Scrape {
  at: number;
  lagP99: number;
  lagMax: number;
  rss: number;
}

/** One value of a Prometheus text exposition (a metric without labels). */
function metric(text: string, name: string): number {
  const m = text.match(new RegExp(`^${name} ([0-9.eE+-]+)$`, 'm'));
  return m ? Number(m[1]) : Number.NaN;
}

async function main(): Promise<void> {
  const corpus = generateCorpus({ mainDocs: Number(values.n), seed: 42 });
  const queries = makeQueries(corpus, 2_000, 43).filter((q) => q.namespace === values.namespace);
  const writeTexts = corpus.memories.filter((m) => m.namespace === values.namespace).slice(-20_000);
  const keep = values['keep-graph'];
  const removed = keep ? [] : deleteIndexFiles(dataDir, values.namespace);
  progress(`removed ${removed.join(', ') || 'nothing'}; starting cairn serve`);
  const server = new ServeProcess({ dataDir, cli: values.cli, nodeArgs: values['node-arg'], progress });
  const base = await server.url;
  const samples: Sample[] = [];
  const writes: Array<{ due: number; ms: number; ok: boolean }> = [];
  const scrapes: Scrape[] = [];
  const start = performance.now();
  let rebuiltAt: number | null = null;
  let sent = 0;
  // Open loop: the i-th search is due at i / rate seconds, whether or not earlier ones were answered.
  const searchOnce = async (i: number, due: number) => {
    const q = queries[i % queries.length]!;
    try {
      const res = await fetch(`${base}/v1/search`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(toRequest(q, { k: 10 })),
        signal: AbortSignal.timeout(30_000),
      });
      const body = (await res.json()) as { degraded?: string[] };
      const degraded = body.degraded?.includes('vector') ?? false;
      samples.push({ due, ms: performance.now() - start - due, ok: res.ok, degraded });
      if (res.ok && !degraded && rebuiltAt === null) {
        rebuiltAt = performance.now() - start;
        progress(`the rebuilt index serves (${(rebuiltAt / 1000).toFixed(1)} s)`);
      }
    } catch {
      samples.push({ due, ms: performance.now() - start - due, ok: false, degraded: false });
    }
  };
  const writeOnce = async (i: number, due: number) => {
    const memory = (j: number) => {
      const m = writeTexts[j % writeTexts.length]!;
      const text = `${m.text} (write ${j})`;
      return {
        namespace: m.namespace,
        session: m.session,
        kind: m.kind,
        text,
        ...(values.backfill && { ts: m.ts }),
      };
    };
    const body =
      writeBatch === 1
        ? memory(i)
        : { memories: Array.from({ length: writeBatch }, (_, k) => memory(i * writeBatch + k)) };
    try {
      const res = await fetch(`${base}/v1/memories`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(30_000),
      });
      await res.arrayBuffer();
      writes.push({ due, ms: performance.now() - start - due, ok: res.ok });
    } catch {
      writes.push({ due, ms: performance.now() - start - due, ok: false });
    }
  };
  let written = 0;
  const tick = setInterval(() => {
    const elapsed = performance.now() - start;
    while (sent < (elapsed / 1000) * rate) {
      void searchOnce(sent, (sent / rate) * 1000);
      sent++;
    }
    while (writeRate > 0 && written < ((elapsed / 1000) * writeRate) / writeBatch) {
      void writeOnce(written, ((written * writeBatch) / writeRate) * 1000);
      written++;
    }
  }, 5);
  const scrape = setInterval(async () => {
    try {
      const text = await (await fetch(`${base}/metrics`, { signal: AbortSignal.timeout(30_000) })).text();
      scrapes.push({
        at: performance.now() - start,
        // The exported values are the histogram timer's intervals: the delay is what exceeds it.
        lagP99: Math.max(0, metric(text, 'nodejs_eventloop_lag_p99_seconds') * 1000 - EVENT_LOOP_SAMPLING_MS),
        lagMax: Math.max(0, metric(text, 'nodejs_eventloop_lag_max_seconds') * 1000 - EVENT_LOOP_SAMPLING_MS),
        rss: metric(text, 'process_resident_memory_bytes'),
      });
    } catch {
      // A missed scrape shows as a gap in the table.
    }
  }, SCRAPE_MS);
  const deadline = Number(values['max-seconds']) * 1000;
  const cooldown = Number(values.cooldown) * 1000;
  while (performance.now() - start < deadline) {
    if (!keep && rebuiltAt !== null && performance.now() - start > rebuiltAt + cooldown) break;
    await new Promise((r) => setTimeout(r, 250));
  }
  clearInterval(tick);
  clearInterval(scrape);
  await new Promise((r) => setTimeout(r, 2_000));
  await server.stop();

  const rows: string[] = [];
  const end = Math.max(...samples.map((s) => s.due));
  for (let w = 0; w <= end; w += WINDOW_MS) {
    const inWindow = samples.filter((s) => s.due >= w && s.due < w + WINDOW_MS);
    const ok = inWindow.filter((s) => s.ok);
    const lat = summarize(ok.map((s) => s.ms));
    const sc = scrapes.filter((s) => s.at > w && s.at <= w + WINDOW_MS);
    const lagP99 = sc.length ? Math.max(...sc.map((s) => s.lagP99)) : Number.NaN;
    const lagMax = sc.length ? Math.max(...sc.map((s) => s.lagMax)) : Number.NaN;
    const rss = sc.length ? Math.max(...sc.map((s) => s.rss)) / 2 ** 20 : Number.NaN;
    const phase = keep
      ? 'steady'
      : rebuiltAt === null || w + WINDOW_MS <= rebuiltAt
        ? 'rebuilding'
        : w >= rebuiltAt
          ? 'after'
          : 'switch';
    const wrote = writes.filter((s) => s.due >= w && s.due < w + WINDOW_MS);
    const wlat = summarize(wrote.filter((s) => s.ok).map((s) => s.ms));
    rows.push(
      `| ${w / 1000}–${(w + WINDOW_MS) / 1000} s | ${phase} | ${ok.length} | ${inWindow.length - ok.length} | ` +
        `${ok.filter((s) => s.degraded).length} | ${lat.p50.toFixed(1)} / ${lat.p99.toFixed(1)} | ` +
        (writeRate > 0
          ? `${wrote.filter((s) => s.ok).length} / ${wrote.filter((s) => !s.ok).length} | ${wlat.p50.toFixed(1)} / ${wlat.p99.toFixed(1)} | `
          : '') +
        `${lagP99.toFixed(1)} / ${lagMax.toFixed(1)} | ${rss.toFixed(0)} |`,
    );
  }
  const during = samples.filter((s) => keep || rebuiltAt === null || s.due < rebuiltAt);
  const lagDuring = scrapes.filter((s) => keep || rebuiltAt === null || s.at <= rebuiltAt);
  const while_ = keep ? 'in all' : 'while rebuilding';
  const lagP99s = summarize(lagDuring.map((s) => s.lagP99));
  process.stdout.write(
    [
      `## ${keep ? 'Steady state' : 'Rebuild'} under load: ${values.namespace} of ${dataDir}, ${rate} searches/s open loop${writeRate > 0 ? ` and ${writeRate} writes/s${writeBatch > 1 ? ` in requests of ${writeBatch}` : ''}${values.backfill ? ', among existing turns' : ''}` : ''}`,
      '',
      `- **Date:** ${new Date().toISOString()} · **Command:** \`node bench/dist/rebuild-lag.js ${process.argv.slice(2).join(' ')}\``,
      keep
        ? `- The saved graph was kept; the first answer with the vector leg came at ${rebuiltAt === null ? '**never**' : `${(rebuiltAt / 1000).toFixed(1)} s`}.`
        : `- Removed: ${removed.join(', ') || 'nothing'}. The rebuilt graph served from ${rebuiltAt === null ? '**never** (deadline)' : `${(rebuiltAt / 1000).toFixed(1)} s`}.`,
      `- Searches due ${while_}: ${during.length}, answered ${during.filter((s) => s.ok).length}, ` +
        `without the vector leg ${during.filter((s) => s.degraded).length}; failed in all ${samples.filter((s) => !s.ok).length}.`,
      `- Server event-loop delay p99 (beyond the ${EVENT_LOOP_SAMPLING_MS}-ms sampling interval) per ${SCRAPE_MS / 1000}-s scrape ${while_}: median ${lagP99s.p50.toFixed(1)} ms, ` +
        `worst ${lagP99s.max.toFixed(1)} ms (target ≤ 10 ms); max single delay ${Math.max(...lagDuring.map((s) => s.lagMax)).toFixed(0)} ms.`,
      '',
      `| window (due) | phase | answered | failed | without vector leg | latency p50 / p99 ms | ${writeRate > 0 ? `${writeBatch > 1 ? 'write requests' : 'writes'} ok / failed | write latency p50 / p99 ms | ` : ''}event-loop delay p99 / max ms (beyond the ${EVENT_LOOP_SAMPLING_MS}-ms sampling interval) | RSS MiB |`,
      `|---|---|---:|---:|---:|---:|${writeRate > 0 ? '---:|---:|' : ''}---:|---:|`,
      ...rows,
      '',
    ].join('\n'),
  );
}

await main();
