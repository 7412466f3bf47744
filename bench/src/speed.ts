// Speed benchmark: capture and indexing rates, hybrid search latency over a realistic query mix, the naive
// "scan every embedding" design Cairn replaces, and event-loop delay while a vector index rebuilds off the
// serving thread. All in one run on one synthetic corpus; prints Markdown and writes bench/out/speed-latest.md.
// Usage: pnpm build && node --expose-gc bench/dist/speed.js [--n 100000] [--queries 2000] [--seed 42]
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join, resolve } from 'node:path';
import { type IntervalHistogram, monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import type { SearchFilters, SearchRequest, SearchResponse } from '@cairn/core';
import { CairnEngine, type EngineLog } from '@cairn/engine';
import { gitRevision } from './git-revision.js';
import { deleteIndexFiles } from './index-files.js';
import { NaiveVectorScan } from './naive-vector-scan.js';
import { type LatencySummary, summarize } from './percentiles.js';
import {
  generateCorpus,
  MAIN_NAMESPACE,
  SMALL_NAMESPACES,
  type SyntheticCorpus,
} from './synthetic-corpus.js';
import {
  type BenchQuery,
  makeQueries,
  QUERY_CLASS_LABEL,
  QUERY_CLASSES,
  QUERY_MIX,
  type QueryClass,
  toRequest,
} from './synthetic-queries.js';

/** Goals stated beside the figures; the benchmark reports them and never fails on them. */
const TARGETS = Object.freeze({ capturePerSec: 10_000, hybridP50Ms: 5, hybridP99Ms: 25 });

interface SpeedOptions {
  /** Memories in the main namespace. @defaultValue 100_000 */
  n: number;
  /** Timed queries per mode. @defaultValue 2_000 */
  queries: number;
  /** Untimed queries run first. @defaultValue 200 */
  warmup: number;
  /** Queries for the naive baseline, which takes a large fraction of a second each at 100k. @defaultValue 30 */
  baseline: number;
  /** Memories per engine.ingest call. @defaultValue 1_000 */
  batch: number;
  seed: number;
}

const DEFAULT_SPEED_OPTIONS: Readonly<SpeedOptions> = Object.freeze({
  n: 100_000,
  queries: 2_000,
  warmup: 200,
  baseline: 30,
  batch: 1_000,
  seed: 42,
});

/** Queries sent to the small tenants, reported on their own row (not part of the main mix). */
const TENANT_QUERIES = 300;
/** Hybrid queries timed once the rebuilt index serves, to show it is as fast as before. */
const AFTER_REBUILD_QUERIES = 200;
/** The rebuild phase gives up after this long (ms) rather than hang the benchmark. */
const REBUILD_DEADLINE_MS = 15 * 60_000;
/** monitorEventLoopDelay sampling resolution (ms). */
const ELD_RESOLUTION_MS = 10;

const SENTINEL_ID = 'late-sentinel';
const SENTINEL_TOKEN = 'zqvx9latemarker';

const OUT_PATH = resolve(import.meta.dirname, '../out/speed-latest.md');

function parseOptions(argv: string[]): SpeedOptions {
  const { values } = parseArgs({
    args: argv,
    options: {
      n: { type: 'string' },
      queries: { type: 'string' },
      warmup: { type: 'string' },
      baseline: { type: 'string' },
      batch: { type: 'string' },
      seed: { type: 'string' },
    },
  });
  const opts: SpeedOptions = { ...DEFAULT_SPEED_OPTIONS };
  const numeric = ['n', 'queries', 'warmup', 'baseline', 'batch', 'seed'] as const;
  for (const key of numeric) {
    const raw = values[key];
    if (raw === undefined) continue;
    const v = Number(raw.replaceAll('_', ''));
    if (!Number.isInteger(v) || v < (key === 'seed' || key === 'warmup' ? 0 : 1)) {
      throw new Error(
        `--${key} must be a ${key === 'seed' || key === 'warmup' ? 'non-negative' : 'positive'} integer, got "${raw}"`,
      );
    }
    opts[key] = v;
  }
  return opts;
}

const isConnectionBusy = (err: unknown) =>
  err instanceof Error && err.message.includes('database connection is busy');

const now = () => performance.now();
const tick = () => new Promise<void>((r) => setImmediate(r));
/** Collects garbage before a timed phase when run with --expose-gc, so one phase's garbage is not billed to the next. */
const collectGarbage = () => (globalThis as { gc?: () => void }).gc?.();

interface LoopDelay {
  p50: number;
  p99: number;
  max: number;
}

/** Starts an event-loop delay histogram; `stop` returns its figures in ms. */
function watchEventLoop(): { stop: () => LoopDelay } {
  const h: IntervalHistogram = monitorEventLoopDelay({ resolution: ELD_RESOLUTION_MS });
  h.enable();
  return {
    stop: () => {
      h.disable();
      // The histogram holds ns; it is empty when the phase was too short to sample.
      if (h.count === 0) return { p50: 0, p99: 0, max: 0 };
      // Each sample is the time between two ticks of a `resolution`-ms timer (an idle loop records about
      // 10.1 ms), so the delay is what exceeds the interval.
      const delay = (ns: number) => Math.max(0, ns / 1e6 - ELD_RESOLUTION_MS);
      return { p50: delay(h.percentile(50)), p99: delay(h.percentile(99)), max: delay(h.max) };
    },
  };
}

interface LogLine {
  level: string;
  msg: string;
  data?: Record<string, unknown>;
  atMs: number;
}

// ── Phase 1: ingest ─────────────────────────────────────────────────────────────────────────────────────

interface IngestReport {
  memories: number;
  batches: number;
  captureMs: number;
  ingestWallMs: number;
  lagMs: number;
  /** Capture end → everything embedded and applied to loaded indexes (before waiting for builds and saving). */
  embedLagMs: number;
  /** `engine.ingest` calls refused with "database connection is busy" and retried. */
  busyRetries: number;
  /** Distinct embed-loop errors seen (the pipeline retries them with backoff), with how often each appeared. */
  embedErrors: Map<string, number>;
  drainWallMs: number;
  embedded: number;
  embeddedAtCaptureEnd: number;
  lateFound: boolean;
  lateLatencyMs: number;
  duringIngest: LatencySummary;
  loop: LoopDelay;
  embedderAlonePerSec: number;
  indexState: string;
  indexed: number | null;
  builds: LogLine[];
  warnings: LogLine[];
}

async function embedderAlone(engine: CairnEngine, corpus: SyntheticCorpus): Promise<number> {
  const texts = corpus.memories.slice(0, 5_000).map((m) => (m.title ? `${m.title}\n${m.text}` : m.text));
  const t0 = now();
  for (let i = 0; i < texts.length; i += 256) await engine.embedder!.embed(texts.slice(i, i + 256));
  return texts.length / ((now() - t0) / 1000);
}

async function ingestPhase(
  engine: CairnEngine,
  corpus: SyntheticCorpus,
  probes: readonly BenchQuery[],
  opts: SpeedOptions,
  logs: LogLine[],
): Promise<IngestReport> {
  const embedderAlonePerSec = await embedderAlone(engine, corpus);
  // A serving engine has its namespaces loaded, so vectors are indexed as they are embedded. Without this,
  // the first search after the ingest would pay for the whole HNSW build (phase 4 measures exactly that).
  for (const { namespace } of corpus.namespaces) await engine.vectors?.warm(namespace);

  const last = corpus.memories.at(-1)!;
  const all = [
    ...corpus.memories,
    {
      id: SENTINEL_ID,
      namespace: MAIN_NAMESPACE,
      kind: 'observation',
      session: last.session,
      ts: last.ts + 1_000,
      text: `Edited src/late/sentinel.ts: the ${SENTINEL_TOKEN} test passes for the user now`,
    },
  ];
  const batches: Array<typeof all> = [];
  for (let i = 0; i < all.length; i += opts.batch) batches.push(all.slice(i, i + opts.batch));

  collectGarbage();
  const logsBefore = logs.length;
  const loop = watchEventLoop();
  const during: number[] = [];
  let captureMs = 0;
  const t0 = now();
  let busyRetries = 0;
  const embedErrors = new Map<string, number>();
  let lastEmbedError: string | null = null;
  const noteEmbedError = () => {
    const e = engine.pipeline.status.lastError;
    if (e !== null && e !== lastEmbedError) embedErrors.set(e, (embedErrors.get(e) ?? 0) + 1);
    lastEmbedError = e;
  };
  for (const [i, batch] of batches.entries()) {
    let r: ReturnType<CairnEngine['ingest']> | undefined;
    while (!r) {
      const tc = now();
      try {
        r = engine.ingest(batch);
      } catch (err) {
        // A write refused because an index build holds a read cursor open on the same connection (see the
        // report): nothing was written, so a client retries on its next turn. Counted, never hidden.
        if (!isConnectionBusy(err)) throw err;
        busyRetries++;
      }
      captureMs += now() - tc;
      if (!r) await tick();
    }
    noteEmbedError();
    if (r.counts.rejected > 0) {
      const bad = r.items.find((it) => it.status === 'rejected');
      throw new Error(
        `ingest rejected ${r.counts.rejected} memories, e.g. #${bad?.index}: ${bad?.error?.message}`,
      );
    }
    // A live engine also answers searches while it ingests: one per batch, timed apart from capture.
    const probe = probes[i % probes.length]!;
    const ts = now();
    await engine.search(toRequest(probe));
    during.push(now() - ts);
    // Let the embed/index loop take its turn, as it would between requests in a server.
    await tick();
  }
  const captureEnd = now();
  const embeddedAtCaptureEnd = engine.pipeline.status.embedded;

  const tl = now();
  const check = await engine.search({
    namespace: MAIN_NAMESPACE,
    query: SENTINEL_TOKEN,
    k: 5,
    weights: { vector: 0 },
  });
  const lateLatencyMs = now() - tl;
  const lateFound = check.hits[0]?.id === SENTINEL_ID;

  // pipeline.drain resolves once everything is embedded and applied to the loaded indexes; engine.drain
  // also waits for index builds under way and saves them. Timing both tells embedding lag from index lag.
  const watchErrors = setInterval(noteEmbedError, 50);
  await engine.pipeline.drain();
  const embeddedEnd = now();
  clearInterval(watchErrors);
  await engine.drain();
  const drainEnd = now();
  const loopDelay = loop.stop();

  const stats = engine.stats();
  const main = stats.namespaces[MAIN_NAMESPACE];
  const embedded = Object.values(stats.namespaces).reduce((a, s) => a + s.embedded, 0);
  const phaseLogs = logs.slice(logsBefore);
  return {
    memories: all.length,
    batches: batches.length,
    captureMs,
    ingestWallMs: captureEnd - t0,
    lagMs: drainEnd - captureEnd,
    embedLagMs: embeddedEnd - captureEnd,
    busyRetries,
    embedErrors,
    drainWallMs: drainEnd - t0,
    embedded,
    embeddedAtCaptureEnd,
    lateFound,
    lateLatencyMs,
    duringIngest: summarize(during),
    loop: loopDelay,
    embedderAlonePerSec,
    indexState: main?.index ?? 'none',
    indexed: main?.indexed ?? null,
    builds: phaseLogs.filter((l) => l.msg === 'vector index built'),
    warnings: phaseLogs.filter((l) => l.level === 'error' || l.level === 'warn'),
  };
}

// ── Phase 2: search ─────────────────────────────────────────────────────────────────────────────────────

interface RunReport {
  all: LatencySummary;
  byClass: Map<QueryClass, LatencySummary>;
  /** The filtered class split by which filters it used. */
  byFilter: Map<string, LatencySummary>;
  /** Σ latency (ms); QPS is n / Σ latency, one client issuing queries back to back. */
  busyMs: number;
  wallMs: number;
  empty: Map<QueryClass, number>;
  degraded: number;
  /** Hits from another namespace, or failing the query's filters. Must be 0. */
  violations: number;
  split: { lexical: LatencySummary; vector: LatencySummary; fusion: LatencySummary };
}

function filterKind(f: SearchFilters): string {
  const parts: string[] = [];
  if (f.kinds) parts.push('kind');
  if (f.sessions) parts.push('session');
  if (f.since !== undefined || f.until !== undefined)
    parts.push(f.until !== undefined ? 'time window' : 'since');
  return parts.join(' + ');
}

function violates(q: BenchQuery, r: SearchResponse): number {
  let bad = 0;
  for (const h of r.hits) {
    const f = q.filters;
    if (h.namespace !== q.namespace) bad++;
    else if (f?.kinds && !f.kinds.includes(h.kind)) bad++;
    else if (f?.sessions && (h.session === null || !f.sessions.includes(h.session))) bad++;
    else if (f?.since !== undefined && h.ts < f.since) bad++;
    else if (f?.until !== undefined && h.ts >= f.until) bad++;
  }
  return bad;
}

async function runQueries(
  engine: CairnEngine,
  queries: readonly BenchQuery[],
  extra: Partial<SearchRequest> = {},
): Promise<RunReport> {
  const lat: number[] = [];
  const byClass = new Map<QueryClass, number[]>();
  const empty = new Map<QueryClass, number>();
  const byFilter = new Map<string, number[]>();
  const split = { lexical: [] as number[], vector: [] as number[], fusion: [] as number[] };
  let degraded = 0;
  let violations = 0;
  const t0 = now();
  for (const q of queries) {
    const ts = now();
    const r = await engine.search(toRequest(q, extra));
    const took = now() - ts;
    lat.push(took);
    const cls = byClass.get(q.cls);
    if (cls) cls.push(took);
    else byClass.set(q.cls, [took]);
    if (r.hits.length === 0) empty.set(q.cls, (empty.get(q.cls) ?? 0) + 1);
    if (r.degraded.length > 0) degraded++;
    violations += violates(q, r);
    split.lexical.push(r.tookMs.lexical);
    split.vector.push(r.tookMs.vector);
    split.fusion.push(r.tookMs.fusion);
    if (q.filters) {
      const kind = filterKind(q.filters);
      const list = byFilter.get(kind);
      if (list) list.push(took);
      else byFilter.set(kind, [took]);
    }
    // A server returns to the event loop between requests. Without this the whole loop would be one
    // macrotask (every await here settles as a microtask) and timers, I/O and the embed loop would starve.
    await tick();
  }
  const wallMs = now() - t0;
  return {
    all: summarize(lat),
    byClass: new Map([...byClass].map(([c, l]) => [c, summarize(l)])),
    byFilter: new Map([...byFilter].sort().map(([c, l]) => [c, summarize(l)])),
    busyMs: lat.reduce((a, b) => a + b, 0),
    wallMs,
    empty,
    degraded,
    violations,
    split: {
      lexical: summarize(split.lexical),
      vector: summarize(split.vector),
      fusion: summarize(split.fusion),
    },
  };
}

interface SearchReport {
  hybrid: RunReport;
  recencyCost: { auto: LatencySummary; off: LatencySummary };
  lexical: RunReport;
  vector: RunReport;
  tenants: RunReport;
  loop: LoopDelay;
}

/**
 * What the default 'auto' decay costs (temporal intent, the close calls' word coverage): each query run with
 * the defaults and with decay off, back to back, the order alternating so neither warms the other's caches.
 */
async function measureRecencyCost(engine: CairnEngine, queries: readonly BenchQuery[]) {
  const auto: number[] = [];
  const off: number[] = [];
  for (const [i, q] of queries.entries()) {
    const runs: Array<[number[], Partial<SearchRequest>]> = [
      [auto, {}],
      [off, { decay: 'off' }],
    ];
    if (i % 2) runs.reverse();
    for (const [into, extra] of runs) {
      const t = now();
      await engine.search(toRequest(q, extra));
      into.push(now() - t);
    }
  }
  return { auto: summarize(auto), off: summarize(off) };
}

async function searchPhase(
  engine: CairnEngine,
  corpus: SyntheticCorpus,
  queries: BenchQuery[],
  opts: SpeedOptions,
): Promise<SearchReport> {
  await runQueries(engine, makeQueries(corpus, opts.warmup, opts.seed + 2));
  collectGarbage();
  const loop = watchEventLoop();
  const hybrid = await runQueries(engine, queries);
  const loopDelay = loop.stop();
  collectGarbage();
  const recencyCost = await measureRecencyCost(engine, queries);
  collectGarbage();
  const lexical = await runQueries(engine, queries, { weights: { vector: 0 } });
  collectGarbage();
  const vector = await runQueries(engine, queries, { weights: { lexical: 0 } });
  collectGarbage();
  const tenants = await runQueries(
    engine,
    makeQueries(corpus, TENANT_QUERIES, opts.seed + 3, SMALL_NAMESPACES),
  );
  return { hybrid, recencyCost, lexical, vector, tenants, loop: loopDelay };
}

// ── Phase 3: naive baseline ─────────────────────────────────────────────────────────────────────────────

interface BaselineReport {
  naive: LatencySummary;
  /** Share of the exact top 10 that Cairn's vector leg returns for the same query vector. */
  recallAt10: number;
  rows: number;
}

async function baselinePhase(
  engine: CairnEngine,
  queries: readonly BenchQuery[],
  opts: SpeedOptions,
): Promise<BaselineReport> {
  const scan = new NaiveVectorScan(engine.store.db, engine.space!.id);
  const embedder = engine.embedder!;
  const picked = queries.filter((q) => !q.filters).slice(0, opts.baseline);
  const lat: number[] = [];
  let recalled = 0;
  let possible = 0;
  collectGarbage();
  for (const q of picked) {
    const t0 = now();
    const [qv] = await embedder.embed([q.query]);
    const top = scan.search(q.namespace, qv!, 50);
    lat.push(now() - t0);
    const ann = await engine.vectors!.searchVector({
      namespace: q.namespace,
      vector: qv!,
      filters: {},
      limit: 10,
    });
    if (ann.status !== 'ok') throw new Error(`vector leg unavailable during the baseline: ${ann.reason}`);
    const got = new Set(ann.candidates.map((c) => c.key));
    const exact = top.slice(0, 10);
    recalled += exact.filter((e) => got.has(e.key)).length;
    possible += exact.length;
  }
  return {
    naive: summarize(lat),
    recallAt10: possible === 0 ? Number.NaN : recalled / possible,
    rows: engine.store.embeddings.count(engine.space!.id, MAIN_NAMESPACE),
  };
}

// ── Phase 4: forced vector index rebuild ────────────────────────────────────────────────────────────────

interface RebuildReport {
  removedFiles: string[];
  searches: number;
  degradedVector: number;
  untilServedMs: number;
  builtMs: number | null;
  during: LatencySummary;
  loop: LoopDelay;
  after: RunReport;
  logs: string;
}

async function rebuildPhase(
  engine: CairnEngine,
  queries: readonly BenchQuery[],
  logs: LogLine[],
  removedFiles: string[],
): Promise<RebuildReport> {
  const lat: number[] = [];
  let degradedVector = 0;
  let searches = 0;
  collectGarbage();
  const logsBefore = logs.length;
  const loop = watchEventLoop();
  const t0 = now();
  for (let i = 0; ; i++) {
    const q = queries[i % queries.length]!;
    const ts = now();
    const r = await engine.search(toRequest(q));
    lat.push(now() - ts);
    searches++;
    if (!r.degraded.includes('vector')) break;
    degradedVector++;
    if (now() - t0 > REBUILD_DEADLINE_MS)
      throw new Error(`the vector index was not rebuilt within ${REBUILD_DEADLINE_MS} ms`);
    await tick();
  }
  const untilServedMs = now() - t0;
  const loopDelay = loop.stop();
  const phaseLogs = logs.slice(logsBefore);
  const built = phaseLogs.find((l) => l.msg === 'vector index built');
  collectGarbage();
  const after = await runQueries(engine, queries.slice(0, AFTER_REBUILD_QUERIES));
  return {
    removedFiles,
    searches,
    degradedVector,
    untilServedMs,
    builtMs: typeof built?.data?.ms === 'number' ? built.data.ms : null,
    // The last search was the first one served by the new index; only the degraded ones ran during the build.
    during: summarize(lat.slice(0, -1)),
    loop: loopDelay,
    after,
    logs: summarizeLogs(phaseLogs),
  };
}

/** "3 × warn: msg (error)" per distinct message, so a retry loop shows as one line with a count. */
function summarizeLogs(lines: readonly LogLine[]): string {
  if (lines.length === 0) return 'none';
  const counts = new Map<string, number>();
  for (const l of lines) {
    const detail = typeof l.data?.error === 'string' ? ` (${l.data.error})` : '';
    const key = `${l.level}: ${l.msg}${detail}`;
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return [...counts].map(([k, n]) => `${n} × ${k}`).join('; ');
}

// ── Report ──────────────────────────────────────────────────────────────────────────────────────────────

const int = (x: number) => Math.round(x).toLocaleString('en-US');
const ms = (x: number) =>
  Number.isNaN(x) ? '–' : x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2);
const sec = (x: number) => `${(x / 1000).toFixed(2)} s`;
const ratio = (x: number) => `${x >= 100 ? x.toFixed(0) : x.toFixed(1)}×`;
const meets = (ok: boolean) => (ok ? 'met' : '**not met**');

function table(header: string[], rows: string[][], align: string[]): string[] {
  return [`| ${header.join(' | ')} |`, `|${align.join('|')}|`, ...rows.map((r) => `| ${r.join(' | ')} |`)];
}

const qps = (r: { n: number; mean: number }) => (r.n === 0 ? '–' : int(1000 / r.mean));

function report(
  opts: SpeedOptions,
  corpus: SyntheticCorpus,
  ingest: IngestReport,
  search: SearchReport,
  baseline: BaselineReport,
  rebuild: RebuildReport,
  generateMs: number,
  env: { model: string; dimensions: number; space: string; workerThreads: number },
): string {
  const cpu = os.cpus()[0]?.model.trim() ?? 'unknown CPU';
  const gb = (b: number) => `${(b / 2 ** 30).toFixed(1)} GiB`;
  const command = ['node', ...process.execArgv, 'bench/dist/speed.js', ...process.argv.slice(2)].join(' ');
  const capturePerSec = ingest.memories / (ingest.captureMs / 1000);
  const h = search.hybrid;
  const out: string[] = [];
  out.push(`## Speed: ${int(opts.n)} memories, ${int(opts.queries)} queries`, '');
  out.push(`- **Date:** ${new Date().toISOString()}`);
  out.push(
    `- **Machine:** ${cpu}, ${os.availableParallelism()} cores, ${gb(os.totalmem())} RAM, ${os.type()} ${os.release()} ${os.arch()}`,
  );
  out.push(
    `- **Node:** ${process.version}${(globalThis as { gc?: unknown }).gc ? '' : ' (gc not exposed: figures are noisier; run with --expose-gc)'}`,
  );
  out.push(`- **Command:** \`${command}\``);
  out.push(`- **Revision:** ${gitRevision()}`);
  out.push(
    `- **Corpus** (seed ${opts.seed}, generated in ${sec(generateMs)}): ${corpus.namespaces.map((n) => `\`${n.namespace}\` ${int(n.memories)}`).join(', ')} ` +
      `memories, plus 1 sentinel; ${int(corpus.sessions.length)} sessions over ${corpus.options.spanDays} days; ` +
      `${corpus.meanWords.toFixed(1)} words per memory on average; vocabulary ${int(corpus.words.length)} words (Zipf s = ${corpus.options.zipfS}) ` +
      `and ${int(corpus.identifiers.length)} identifiers/paths. Memories containing the most common words: ` +
      `${corpus.commonWordShare.map((c) => `"${c.word}" ${(c.share * 100).toFixed(0)}%`).join(', ')}.`,
  );
  out.push(
    `- **Engine:** \`CairnEngine\` with default options, \`waitForIndex: true\`; embedder \`${env.model}\` (${env.dimensions}-d), ` +
      `embedding space \`${env.space}\`, ${env.workerThreads} compute worker thread(s) for index builds.`,
  );
  out.push('');

  out.push('### Ingest', '');
  out.push(
    ...table(
      ['metric', 'value', 'target'],
      [
        [
          'memories ingested',
          `${int(ingest.memories)} in ${int(ingest.batches)} \`engine.ingest\` calls of ${int(opts.batch)}`,
          '',
        ],
        ['capture time (Σ `engine.ingest` calls only)', sec(ingest.captureMs), ''],
        [
          '**capture rate** (stored and lexically searchable)',
          `**${int(capturePerSec)} /s**`,
          `≥ ${int(TARGETS.capturePerSec)} /s: ${meets(capturePerSec >= TARGETS.capturePerSec)}`,
        ],
        [
          'last memory found by a lexical-only search right after capture, before any drain',
          `${ingest.lateFound ? 'yes' : '**NO**'} (${ms(ingest.lateLatencyMs)} ms)`,
          '',
        ],
        [
          'ingest phase wall time (capture + interleaved embed/index + 1 search per batch)',
          sec(ingest.ingestWallMs),
          '',
        ],
        [
          'embedded when the last capture returned',
          `${int(ingest.embeddedAtCaptureEnd)} of ${int(ingest.memories)}`,
          '',
        ],
        ['**vector lag** (`engine.drain()` end − capture end)', `**${sec(ingest.lagMs)}**`, ''],
        [
          'of which: until `pipeline.drain()` (all embedded, applied to loaded indexes)',
          sec(ingest.embedLagMs),
          '',
        ],
        [
          'of which: waiting for index builds under way, and saving (`flush`)',
          sec(ingest.lagMs - ingest.embedLagMs),
          '',
        ],
        ['ingest start → drain end', sec(ingest.drainWallMs), ''],
        [
          '**embed + index rate** (embedded ÷ (drain end − ingest start))',
          `**${int(ingest.embedded / (ingest.drainWallMs / 1000))} /s**`,
          '',
        ],
        ['HashingEmbedder alone (5,000 texts, batches of 256)', `${int(ingest.embedderAlonePerSec)} /s`, ''],
        [
          'main namespace index after drain',
          `${ingest.indexState}, ${ingest.indexed === null ? '?' : int(ingest.indexed)} vectors`,
          '',
        ],
        [
          'index builds during ingest (off-thread)',
          ingest.builds
            .map((b) => `${int(Number(b.data?.vectors ?? 0))} vectors in ${int(Number(b.data?.ms ?? 0))} ms`)
            .join('; ') || 'none',
          '',
        ],
        [
          '`engine.ingest` calls refused with "database connection is busy" (retried)',
          ingest.busyRetries === 0 ? '0' : `**${int(ingest.busyRetries)}**`,
          'should be 0',
        ],
        [
          'embed-loop errors (retried by the pipeline with backoff)',
          ingest.embedErrors.size === 0
            ? 'none'
            : [...ingest.embedErrors].map(([e, n]) => `${n} × ${e}`).join('; '),
          'should be none',
        ],
        ['engine warnings/errors logged during ingest', summarizeLogs(ingest.warnings), ''],
        [
          'hybrid search during ingest (1 per batch) p50 / p99 / max',
          `${ms(ingest.duringIngest.p50)} / ${ms(ingest.duringIngest.p99)} / ${ms(ingest.duringIngest.max)} ms`,
          '',
        ],
      ],
      ['---', '---:', '---'],
    ),
    '',
  );

  out.push('### Search (k = 5, default options, one client, sequential)', '');
  out.push(
    `${int(opts.warmup)} warm-up queries first (not counted). QPS = n ÷ Σ latency. Latencies in ms.`,
    '',
  );
  const classRows = (r: RunReport, mode: string) =>
    QUERY_CLASSES.map((c) => {
      const s = r.byClass.get(c);
      if (!s) return [mode, c, '0', '–', '–', '–', '–', '–', '–'];
      return [
        mode,
        `${c} (${QUERY_CLASS_LABEL[c]}, ${(QUERY_MIX[c] * 100).toFixed(0)}%)`,
        int(s.n),
        ms(s.p50),
        ms(s.p90),
        ms(s.p99),
        ms(s.max),
        qps(s),
        int(r.empty.get(c) ?? 0),
      ];
    });
  const allRow = (r: RunReport, mode: string, label = '**all**') => [
    `**${mode}**`,
    label,
    int(r.all.n),
    `**${ms(r.all.p50)}**`,
    ms(r.all.p90),
    `**${ms(r.all.p99)}**`,
    ms(r.all.max),
    int(r.all.n / (r.busyMs / 1000)),
    int([...r.empty.values()].reduce((a, b) => a + b, 0)),
  ];
  out.push(
    ...table(
      ['mode', 'class', 'n', 'p50', 'p90', 'p99', 'max', 'QPS', 'empty'],
      [
        allRow(h, 'hybrid'),
        ...classRows(h, 'hybrid'),
        allRow(search.lexical, 'lexical only', '**all** (weights {vector: 0})'),
        ...classRows(search.lexical, 'lexical'),
        allRow(search.vector, 'vector only', '**all** (weights {lexical: 0})'),
        ...classRows(search.vector, 'vector'),
        allRow(
          search.tenants,
          'hybrid, small tenants',
          `**all** (${SMALL_NAMESPACES.length} namespaces × ${int(corpus.namespaces[1]?.memories ?? 0)})`,
        ),
      ],
      ['---', '---', '---:', '---:', '---:', '---:', '---:', '---:', '---:'],
    ),
    '',
  );
  const filterTypes = [...h.byFilter.keys()];
  const rc = search.recencyCost;
  out.push(
    "What the default 'auto' decay costs: each hybrid query with the defaults and with decay off, back to back, in alternating order (ms):",
    '',
    ...table(
      ['run', 'n', 'mean', 'p50', 'p99'],
      [
        ['defaults (decay auto)', int(rc.auto.n), ms(rc.auto.mean), ms(rc.auto.p50), ms(rc.auto.p99)],
        ['decay off', int(rc.off.n), ms(rc.off.mean), ms(rc.off.p50), ms(rc.off.p99)],
        ['auto ÷ off (mean)', '', (rc.auto.mean / rc.off.mean).toFixed(2), '', ''],
      ],
      ['---', '---:', '---:', '---:', '---:'],
    ),
    '',
  );
  out.push('Filtered queries by filter type (p50 / p99 ms):', '');
  out.push(
    ...table(
      ['filters', 'n', 'hybrid', 'lexical only', 'vector only'],
      filterTypes.map((f) => {
        const cell = (r: RunReport) => {
          const s = r.byFilter.get(f);
          return s ? `${ms(s.p50)} / ${ms(s.p99)}` : '–';
        };
        return [f, int(h.byFilter.get(f)?.n ?? 0), cell(h), cell(search.lexical), cell(search.vector)];
      }),
      ['---', '---:', '---:', '---:', '---:'],
    ),
    '',
  );
  const violations =
    h.violations + search.lexical.violations + search.vector.violations + search.tenants.violations;
  const degraded = h.degraded + search.lexical.degraded + search.vector.degraded + search.tenants.degraded;
  out.push(
    ...table(
      ['figure', 'value', 'target'],
      [
        [
          'hybrid p50',
          `${ms(h.all.p50)} ms`,
          `≤ ${TARGETS.hybridP50Ms} ms: ${meets(h.all.p50 <= TARGETS.hybridP50Ms)}`,
        ],
        [
          'hybrid p99',
          `${ms(h.all.p99)} ms`,
          `≤ ${TARGETS.hybridP99Ms} ms: ${meets(h.all.p99 <= TARGETS.hybridP99Ms)}`,
        ],
        ['hybrid QPS (wall clock, incl. loop overhead)', int(h.all.n / (h.wallMs / 1000)), ''],
        [
          'hybrid time split p50 / p99 (router `tookMs`)',
          `lexical ${ms(h.split.lexical.p50)} / ${ms(h.split.lexical.p99)}, vector ${ms(h.split.vector.p50)} / ${ms(h.split.vector.p99)}, fusion ${ms(h.split.fusion.p50)} / ${ms(h.split.fusion.p99)} ms`,
          '',
        ],
        ['hits outside the namespace or failing the filters (all modes)', int(violations), 'must be 0'],
        ['responses flagged degraded (all modes)', int(degraded), 'must be 0'],
      ],
      ['---', '---:', '---'],
    ),
    '',
  );

  out.push('### Baseline: the naive design (no index)', '');
  out.push(
    'Per query: embed it, `SELECT key, vector FROM embeddings WHERE space = ? AND namespace = ?`, copy each BLOB into a Float32Array, ' +
      `cosine in a plain JS loop, sort all, keep the top 50. ${int(baseline.rows)} vectors per scan.`,
    '',
  );
  out.push(
    ...table(
      ['design', 'n', 'p50 (ms)', 'p99 (ms)'],
      [
        ['naive scan (vectors only)', int(baseline.naive.n), ms(baseline.naive.p50), ms(baseline.naive.p99)],
        ['Cairn vector only', int(search.vector.all.n), ms(search.vector.all.p50), ms(search.vector.all.p99)],
        ['Cairn hybrid (lexical + vector + fusion)', int(h.all.n), ms(h.all.p50), ms(h.all.p99)],
      ],
      ['---', '---:', '---:', '---:'],
    ),
    '',
  );
  out.push(
    ...table(
      ['ratio', 'value'],
      [
        ['**naive p50 ÷ Cairn hybrid p50**', `**${ratio(baseline.naive.p50 / h.all.p50)}**`],
        ['naive p99 ÷ Cairn hybrid p99', ratio(baseline.naive.p99 / h.all.p99)],
        ['naive p50 ÷ Cairn vector-only p50', ratio(baseline.naive.p50 / search.vector.all.p50)],
        [
          `Cairn vector leg recall@10 against the exact scan (${int(baseline.naive.n)} queries)`,
          baseline.recallAt10.toFixed(3),
        ],
      ],
      ['---', '---:'],
    ),
    '',
  );

  out.push('### Forced vector index rebuild', '');
  out.push(
    `Closed the engine, deleted ${rebuild.removedFiles.map((f) => `\`${f}\``).join(' and ') || '(no files: nothing was saved!)'}, ` +
      'reopened with `waitForIndex: false` and sent hybrid searches back to back (yielding with setImmediate between them) until one was served by the vector leg. ' +
      'The graph is built on the piscina worker; reading the vectors and loading the finished file run on the serving thread.',
    '',
  );
  out.push(
    ...table(
      ['metric', 'value'],
      [
        ['first search → first search served by the rebuilt index', sec(rebuild.untilServedMs)],
        [
          'build time logged by the engine (collect + worker build + load)',
          rebuild.builtMs === null ? '–' : sec(rebuild.builtMs),
        ],
        ['engine log lines', rebuild.logs],
        ['searches answered while rebuilding', int(rebuild.searches - 1)],
        [
          "of those flagged `degraded: ['vector']` (served lexical-only)",
          `${int(rebuild.degradedVector)} of ${int(rebuild.searches - 1)}`,
        ],
        [
          'search latency while rebuilding p50 / p99 / max',
          `${ms(rebuild.during.p50)} / ${ms(rebuild.during.p99)} / ${ms(rebuild.during.max)} ms`,
        ],
        [
          `hybrid after the rebuild (${int(rebuild.after.all.n)} queries) p50 / p99`,
          `${ms(rebuild.after.all.p50)} / ${ms(rebuild.after.all.p99)} ms (degraded: ${int(rebuild.after.degraded)})`,
        ],
      ],
      ['---', '---:'],
    ),
    '',
  );

  out.push(
    `### Event-loop delay (monitorEventLoopDelay, resolution ${ELD_RESOLUTION_MS} ms; delay beyond the sampling interval)`,
    '',
  );
  const loopRow = (phase: string, l: LoopDelay) => [phase, ms(l.p50), `**${ms(l.p99)}**`, `**${ms(l.max)}**`];
  out.push(
    ...table(
      ['phase', 'p50 (ms)', 'p99 (ms)', 'max (ms)'],
      [
        loopRow(`ingest + drain (${int(opts.batch)}-memory batches, 1 search per batch)`, ingest.loop),
        loopRow('hybrid search loop (no writes)', search.loop),
        loopRow('forced index rebuild with searches', rebuild.loop),
      ],
      ['---', '---:', '---:', '---:'],
    ),
    '',
  );
  out.push(
    "The delay figures include the benchmark's own synchronous work: a timer cannot fire while an `engine.ingest` " +
      "call or a search runs, so a phase's max is at least its longest single call. Searches run back to back, " +
      'so p50 in the search phases is roughly one search.',
    '',
  );
  return out.join('\n');
}

async function main(): Promise<void> {
  const opts = parseOptions(process.argv.slice(2));
  const tg = now();
  const corpus = generateCorpus({ mainDocs: opts.n, seed: opts.seed });
  const generateMs = now() - tg;
  const queries = makeQueries(corpus, opts.queries, opts.seed + 1);
  const logs: LogLine[] = [];
  const t0 = now();
  const log: EngineLog = (level, msg, data) => {
    if (level !== 'debug') logs.push({ level, msg, data, atMs: now() - t0 });
  };
  const dir = mkdtempSync(join(os.tmpdir(), 'cairn-speed-'));
  const progress = (msg: string) =>
    process.stderr.write(`[speed ${((now() - t0) / 1000).toFixed(1)}s] ${msg}\n`);
  let engine = await CairnEngine.open({ dataDir: dir, waitForIndex: true, log });
  try {
    const env = {
      model: engine.embedder?.modelId ?? 'none',
      dimensions: engine.embedder?.dimensions ?? 0,
      space: engine.space?.id ?? 'none',
      // ComputePool's default: one core stays with the event loop.
      workerThreads: Math.max(1, os.availableParallelism() - 1),
    };
    progress(`ingesting ${int(corpus.memories.length + 1)} memories into ${dir}`);
    const ingest = await ingestPhase(engine, corpus, queries, opts, logs);
    progress(`searching: ${int(opts.warmup)} warm-up + 3 × ${int(opts.queries)} queries`);
    const search = await searchPhase(engine, corpus, queries, opts);
    progress(`naive baseline: ${int(opts.baseline)} queries`);
    const baseline = await baselinePhase(engine, queries, opts);
    progress('forced index rebuild');
    await engine.close();
    const removed = deleteIndexFiles(dir, MAIN_NAMESPACE);
    engine = await CairnEngine.open({ dataDir: dir, waitForIndex: false, log });
    const rebuild = await rebuildPhase(engine, queries, logs, removed);
    const md = report(opts, corpus, ingest, search, baseline, rebuild, generateMs, env);
    process.stdout.write(`${md}\n`);
    mkdirSync(resolve(OUT_PATH, '..'), { recursive: true });
    writeFileSync(OUT_PATH, `${md}\n`);
    progress(`done; also written to ${OUT_PATH}`);
  } finally {
    await engine.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
