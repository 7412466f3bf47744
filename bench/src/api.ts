// API load benchmark: POST /v1/search against the real `cairn serve` process (embedded mode, 100k memories)
// under 1 to 64 concurrent connections, driven by autocannon, beside the in-process `engine.search` latency
// of the same queries. Prints Markdown, writes bench/out/api-latest.md and bench/results/api-<date>.json.
// Usage: pnpm build && node bench/dist/api.js [--n 100000] [--duration 10] [--warmup 2]
//          [--connections 1,4,16,64] [--queries 400] [--baseline 500] [--seed 42] [--profile]
//          [--processes N] [--rounds N]   (run the levels N times against the same server)
//          [--data-dir DIR]   (build the data folder there once and reuse it on later runs)
// autocannon runs in this process, on the same machine as the server: the two share its cores.
import { execFileSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { CairnEngine } from '@cairn/engine';
import autocannon from 'autocannon';
import { gitRevision } from './git-revision.js';
import { type LatencySummary, summarize } from './percentiles.js';
import {
  CLI_SCRIPT,
  expiry,
  leftovers,
  RATE_LIMIT_PER_MINUTE,
  ServeProcess,
  START_DEADLINE_MS,
  STOP_DEADLINE_MS,
} from './serve-process.js';
import { generateCorpus, type SyntheticCorpus } from './synthetic-corpus.js';
import {
  type BenchQuery,
  makeQueries,
  QUERY_CLASS_LABEL,
  QUERY_MIX,
  toRequest,
} from './synthetic-queries.js';

/** The issue's goal, stated beside the figures; the benchmark reports it and never fails on it. */
const TARGETS = Object.freeze({ searchesPerSec: 1_000, p99Ms: 25 });

interface ApiOptions {
  /** Memories in the main namespace. @defaultValue 100_000 */
  n: number;
  /** Seconds of measured load per connection level. @defaultValue 10 */
  duration: number;
  /** Seconds of unmeasured load before each level (connections opened, JIT and caches warm). @defaultValue 2 */
  warmup: number;
  /** Concurrent connections, one level each, in this order. @defaultValue [1, 4, 16, 64] */
  connections: number[];
  /** Distinct search bodies the connections cycle through. @defaultValue 400 */
  queries: number;
  /** Sequential in-process searches of the baseline. @defaultValue 500 */
  baseline: number;
  /** Memories per `engine.ingest` call when building the data folder. @defaultValue 1_000 */
  batch: number;
  seed: number;
  /** Run the server with --cpu-prof and keep its profile in bench/out/. @defaultValue false */
  profile: boolean;
  /** HTTP processes of the server (`cairn serve --processes`). @defaultValue 1 */
  processes: number;
  /**
   * Times the whole list of levels is run against the same server, one round after the other. Load on a
   * shared small machine varies from minute to minute; the target is judged per round and the report
   * says in how many rounds it was met. @defaultValue 1
   */
  rounds: number;
  /**
   * Keep the data folder here and reuse it when it already holds this corpus (same n and seed), which
   * saves the two-minute build between runs. Null: a temporary folder, removed at the end. @defaultValue null
   */
  dataDir: string | null;
}

const DEFAULT_API_OPTIONS: Readonly<ApiOptions> = Object.freeze({
  n: 100_000,
  duration: 10,
  warmup: 2,
  connections: [1, 4, 16, 64],
  queries: 400,
  baseline: 500,
  batch: 1_000,
  seed: 42,
  profile: false,
  processes: 1,
  rounds: 1,
  dataDir: null,
});

/** Untimed in-process searches before the baseline is timed. */
const BASELINE_WARMUP = 100;

const OUT_DIR = resolve(import.meta.dirname, '../out');
const OUT_PATH = join(OUT_DIR, 'api-latest.md');
const RESULTS_DIR = resolve(import.meta.dirname, '../results');

function parseOptions(argv: string[]): ApiOptions {
  const { values } = parseArgs({
    args: argv,
    options: {
      n: { type: 'string' },
      duration: { type: 'string' },
      warmup: { type: 'string' },
      connections: { type: 'string' },
      queries: { type: 'string' },
      baseline: { type: 'string' },
      batch: { type: 'string' },
      seed: { type: 'string' },
      profile: { type: 'boolean' },
      processes: { type: 'string' },
      rounds: { type: 'string' },
      'data-dir': { type: 'string' },
    },
  });
  const opts: ApiOptions = {
    ...DEFAULT_API_OPTIONS,
    profile: values.profile ?? false,
    dataDir: values['data-dir'] ? resolve(values['data-dir']) : null,
  };
  const integer = (key: string, raw: string, min: number) => {
    const v = Number(raw.replaceAll('_', ''));
    if (!Number.isInteger(v) || v < min)
      throw new Error(`--${key} must be an integer ≥ ${min}, got "${raw}"`);
    return v;
  };
  const numeric = [
    'n',
    'duration',
    'warmup',
    'queries',
    'baseline',
    'batch',
    'seed',
    'processes',
    'rounds',
  ] as const;
  for (const key of numeric) {
    const raw = values[key];
    if (raw !== undefined) opts[key] = integer(key, raw, key === 'seed' || key === 'warmup' ? 0 : 1);
  }
  if (values.connections !== undefined)
    opts.connections = values.connections.split(',').map((c) => integer('connections', c.trim(), 1));
  if (opts.batch > 1_000) throw new Error('--batch must be at most 1000 (MAX_CAPTURE_BATCH)');
  return opts;
}

const now = () => performance.now();
const tick = () => new Promise<void>((r) => setImmediate(r));

let t0Global = now();
const progress = (msg: string) =>
  process.stderr.write(`[api ${((now() - t0Global) / 1000).toFixed(1)}s] ${msg}\n`);

// ── Clean-up on any exit ────────────────────────────────────────────────────────────────────────────────

// ── Phase 1: the data folder ────────────────────────────────────────────────────────────────────────────

interface BuildReport {
  memories: number;
  ms: number;
  /** `engine.ingest` calls refused with "database connection is busy" and retried. */
  busyRetries: number;
}

const isConnectionBusy = (err: unknown) =>
  err instanceof Error && err.message.includes('database connection is busy');

/** Ingests the corpus, embeds and indexes it, and saves the vector indexes, so the server starts warm. */
async function buildDataFolder(dir: string, corpus: SyntheticCorpus, opts: ApiOptions): Promise<BuildReport> {
  const t0 = now();
  const engine = await CairnEngine.open({ dataDir: dir, waitForIndex: true });
  let busyRetries = 0;
  try {
    // Loaded namespaces index vectors as they are embedded; otherwise the first search of each would
    // build its whole HNSW graph. drain() then saves the graphs the server loads at its first search.
    for (const { namespace } of corpus.namespaces) await engine.vectors?.warm(namespace);
    for (let i = 0; i < corpus.memories.length; i += opts.batch) {
      const batch = corpus.memories.slice(i, i + opts.batch);
      for (;;) {
        try {
          const r = engine.ingest(batch);
          if (r.counts.rejected > 0) throw new Error(`ingest rejected ${r.counts.rejected} memories`);
          break;
        } catch (err) {
          // An index build can hold a read cursor on the connection; nothing was written, so retry.
          if (!isConnectionBusy(err)) throw err;
          busyRetries++;
          await tick();
        }
      }
      // Let the embed/index loop take its turn between batches, as it would in a server.
      await tick();
    }
    await engine.drain();
  } finally {
    await engine.close();
  }
  return { memories: corpus.memories.length, ms: now() - t0, busyRetries };
}

/** Written into a kept data folder once its build finished, so a later run knows what it holds. */
const BUILT_MARKER = 'bench-corpus.json';

/** A kept folder holding this corpus is reused as is (its build report is the one of the first run). */
async function reuseOrBuild(dir: string, corpus: SyntheticCorpus, opts: ApiOptions): Promise<BuildReport> {
  const marker = join(dir, BUILT_MARKER);
  const wanted = { n: opts.n, seed: opts.seed, memories: corpus.memories.length };
  if (existsSync(marker)) {
    const held = JSON.parse(readFileSync(marker, 'utf8')) as typeof wanted & { build: BuildReport };
    if (held.n === wanted.n && held.seed === wanted.seed && held.memories === wanted.memories) {
      progress(`reusing ${dir} (${int(held.memories)} memories, built earlier)`);
      return held.build;
    }
    throw new Error(
      `${dir} holds another corpus (n ${held.n}, seed ${held.seed}): remove it or pick another`,
    );
  }
  if (existsSync(dir) && readdirSync(dir).length > 0)
    throw new Error(`${dir} is not empty and holds no ${BUILT_MARKER}: pick an empty or new folder`);
  progress(`building ${dir}: ${int(corpus.memories.length)} memories`);
  const build = await buildDataFolder(dir, corpus, opts);
  writeFileSync(marker, `${JSON.stringify({ ...wanted, build })}\n`);
  return build;
}

// ── Phase 2: in-process baseline ────────────────────────────────────────────────────────────────────────

interface BaselineReport {
  latency: LatencySummary;
  degraded: number;
}

/**
 * `engine.search` for the queries the load sends, one after another, in this process: what the HTTP layer
 * (validation, Fastify, JSON, loopback) adds to is this. A fresh engine, as the server opens one.
 */
async function inProcessBaseline(
  dir: string,
  corpus: SyntheticCorpus,
  queries: readonly BenchQuery[],
  opts: ApiOptions,
): Promise<BaselineReport> {
  const engine = await CairnEngine.open({ dataDir: dir });
  try {
    for (const { namespace } of corpus.namespaces) await engine.vectors?.warm(namespace);
    const at = (i: number) => queries[i % queries.length]!;
    for (let i = 0; i < BASELINE_WARMUP; i++) await engine.search(toRequest(at(i)));
    const lat: number[] = [];
    let degraded = 0;
    for (let i = 0; i < opts.baseline; i++) {
      const t0 = now();
      const r = await engine.search(toRequest(at(i)));
      lat.push(now() - t0);
      if (r.degraded.length > 0) degraded++;
      // A server returns to the event loop between requests; so does this loop.
      await tick();
    }
    return { latency: summarize(lat), degraded };
  } finally {
    await engine.close();
  }
}

// ── The server child ────────────────────────────────────────────────────────────────────────────────────

async function startServer(
  dataDir: string,
  profileDir: string | null,
  processes: number,
): Promise<ServeProcess> {
  if (!existsSync(CLI_SCRIPT)) throw new Error(`${CLI_SCRIPT} is missing: run pnpm build first`);
  const server = new ServeProcess({
    dataDir,
    nodeArgs: profileDir ? ['--cpu-prof', '--cpu-prof-dir', profileDir] : [],
    serveArgs: ['--processes', String(processes)],
    progress,
  });
  const url = await Promise.race([server.url, expiry(START_DEADLINE_MS)]);
  if (url === null) {
    await server.stop();
    throw new Error(`the server did not listen within ${START_DEADLINE_MS} ms\n${server.tail()}`);
  }
  return server;
}

// ── CPU accounting ──────────────────────────────────────────────────────────────────────────────────────

/**
 * CPU time (s) of the server (all its threads), of this process (autocannon and the response handler) and
 * of the whole machine. On a 2-core machine the load generator competes with the server, and another job
 * may too; these say how much. Linux only (/proc); elsewhere the server and machine figures are null.
 */
interface CpuSample {
  atMs: number;
  server: number | null;
  bench: number;
  machine: number | null;
}

interface CpuShare {
  /** Cores busy on average over the interval (1.0 = one core fully busy). */
  server: number | null;
  bench: number;
  /** Everything else on the machine (another benchmark, tests, the OS). */
  other: number | null;
}

const CLOCK_TICKS = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

function readProcCpu(pid: number): number | null {
  try {
    // Fields after the parenthesised command name: state is field 3, utime 14, stime 15 (proc(5)).
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
  } catch {
    return null;
  }
}

/** CPU of a process and its children (the HTTP processes of `serve --processes N`). */
function readTreeCpu(pid: number): number | null {
  const own = readProcCpu(pid);
  if (own === null) return null;
  let children: number[] = [];
  try {
    children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8')
      .trim()
      .split(/\s+/)
      .filter(Boolean)
      .map(Number);
  } catch {
    // No children file (older kernels): the parent alone.
  }
  return children.reduce((sum, c) => sum + (readProcCpu(c) ?? 0), own);
}

function readMachineCpu(): number | null {
  try {
    // "cpu user nice system idle iowait irq softirq steal ...": busy is all but idle and iowait.
    const [user, nice, system, , , irq, softirq, steal] = readFileSync('/proc/stat', 'utf8')
      .split('\n')[0]!
      .trim()
      .split(/\s+/)
      .slice(1)
      .map(Number);
    return [user, nice, system, irq, softirq, steal].reduce((a: number, b) => a + (b ?? 0), 0) / CLOCK_TICKS;
  } catch {
    return null;
  }
}

function sampleCpu(serverPid: number): CpuSample {
  const self = process.cpuUsage();
  return {
    atMs: now(),
    server: readTreeCpu(serverPid),
    bench: (self.user + self.system) / 1e6,
    machine: readMachineCpu(),
  };
}

function cpuShare(a: CpuSample, b: CpuSample): CpuShare {
  const wall = (b.atMs - a.atMs) / 1000;
  const server = a.server === null || b.server === null ? null : (b.server - a.server) / wall;
  const bench = (b.bench - a.bench) / wall;
  const machine = a.machine === null || b.machine === null ? null : (b.machine - a.machine) / wall;
  const other = machine === null || server === null ? null : Math.max(0, machine - server - bench);
  return { server, bench, other };
}

// ── Phase 3: preflight ──────────────────────────────────────────────────────────────────────────────────

interface PreflightReport {
  sent: number;
  degraded: number;
  empty: number;
  meanHits: number;
  latency: LatencySummary;
}

/** The API's search body for a benchmark query: {namespace, query, k, filters?}, as SearchRequestSchema takes. */
const searchBody = (q: BenchQuery) => JSON.stringify(toRequest(q));

/**
 * Every body once, in order, with fetch: proof the server accepts all of them (a 4xx under load would only
 * be a count) and that it serves the vector leg (not degraded); also loads the namespaces' indexes.
 */
async function preflight(url: string, bodies: readonly string[]): Promise<PreflightReport> {
  let degraded = 0;
  let empty = 0;
  let hits = 0;
  const lat: number[] = [];
  for (const body of bodies) {
    const t0 = now();
    const res = await fetch(`${url}/v1/search`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    });
    const text = await res.text();
    lat.push(now() - t0);
    if (res.status !== 200) throw new Error(`POST /v1/search ${body} → ${res.status} ${text}`);
    const r = JSON.parse(text) as { hits: unknown[]; degraded: string[] };
    if (r.degraded.length > 0) degraded++;
    if (r.hits.length === 0) empty++;
    hits += r.hits.length;
  }
  return { sent: bodies.length, degraded, empty, meanHits: hits / bodies.length, latency: summarize(lat) };
}

// ── Phase 4: load ───────────────────────────────────────────────────────────────────────────────────────

interface LoadLevel {
  /** 1-based round (see `rounds`). */
  round: number;
  connections: number;
  seconds: number;
  /** autocannon's mean of its per-second samples of completed requests. */
  requestsPerSec: number;
  ok: number;
  /** 2xx latency (ms) from autocannon's 'response' events, which carry sub-millisecond timings. */
  latency: LatencySummary;
  /** autocannon's own latency summary (whole milliseconds), kept in the JSON as a cross-check. */
  autocannonLatency: { p50: number; p90: number; p99: number; max: number; mean: number };
  errors: number;
  timeouts: number;
  non2xx: number;
  statusCodes: Record<string, number>;
  cpu: CpuShare;
}

/** Same bodies for every connection, each starting at its own offset so they do not search in lockstep. */
function connectionRequests(bodies: readonly string[], connections: number): () => autocannon.Request[] {
  let next = 0;
  const stride = Math.max(1, Math.floor(bodies.length / connections));
  return () => {
    const offset = (next++ * stride) % bodies.length;
    return [...bodies.slice(offset), ...bodies.slice(0, offset)].map((body) => ({ body }));
  };
}

function cannon(
  url: string,
  bodies: readonly string[],
  connections: number,
  seconds: number,
): autocannon.Instance {
  const requestsFor = connectionRequests(bodies, connections);
  return autocannon({
    url: `${url}/v1/search`,
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    connections,
    duration: seconds,
    requests: requestsFor(),
    setupClient: (client) => client.setRequests(requestsFor()),
  });
}

async function loadLevel(
  server: ServeProcess,
  url: string,
  bodies: readonly string[],
  connections: number,
  opts: ApiOptions,
  round: number,
): Promise<LoadLevel> {
  if (opts.warmup > 0) await cannon(url, bodies, connections, opts.warmup);
  const lat: number[] = [];
  const run = cannon(url, bodies, connections, opts.duration);
  run.on('response', (_client: unknown, status: number, _bytes: number, ms: number) => {
    if (status >= 200 && status < 300) lat.push(ms);
  });
  const before = sampleCpu(server.pid);
  const r = await run;
  const cpu = cpuShare(before, sampleCpu(server.pid));
  return {
    round,
    connections,
    seconds: r.duration,
    requestsPerSec: r.requests.average,
    ok: r['2xx'],
    latency: summarize(lat),
    autocannonLatency: {
      p50: r.latency.p50,
      p90: r.latency.p90,
      p99: r.latency.p99,
      max: r.latency.max,
      mean: r.latency.average,
    },
    errors: r.errors,
    timeouts: r.timeouts,
    non2xx: r.non2xx,
    statusCodes: Object.fromEntries(Object.entries(r.statusCodeStats).map(([s, c]) => [s, c.count])),
    cpu,
  };
}

// ── Report ──────────────────────────────────────────────────────────────────────────────────────────────

const int = (x: number) => Math.round(x).toLocaleString('en-US');
const ms = (x: number) =>
  Number.isNaN(x) ? '–' : x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2);
const sec = (x: number) => `${(x / 1000).toFixed(1)} s`;
const ratio = (x: number) => `${x.toFixed(1)}×`;
const cores = (x: number | null) => (x === null ? '–' : x.toFixed(2));

function table(header: string[], rows: string[][], align: string[]): string[] {
  return [`| ${header.join(' | ')} |`, `|${align.join('|')}|`, ...rows.map((r) => `| ${r.join(' | ')} |`)];
}

interface Environment {
  date: string;
  command: string;
  revision: string;
  machine: { cpu: string; cores: number; memoryGiB: number; platform: string; node: string };
  /** 1-minute load average when the run started and when the load phase ended. */
  loadAverage: { start: number; end: number };
}

function environment(loadAtStart: number): Environment {
  return {
    date: new Date().toISOString(),
    command: ['node', ...process.execArgv, 'bench/dist/api.js', ...process.argv.slice(2)].join(' '),
    revision: gitRevision(),
    machine: {
      cpu: os.cpus()[0]?.model.trim() ?? 'unknown',
      cores: os.availableParallelism(),
      memoryGiB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
      platform: `${os.type()} ${os.release()} ${os.arch()}`,
      node: process.version,
    },
    loadAverage: { start: loadAtStart, end: os.loadavg()[0]! },
  };
}

interface Verdict {
  /** No connection errors and no non-2xx responses at any level. */
  valid: boolean;
  /** The level with the most requests/s among those whose p99 is within the target, if any. */
  best: LoadLevel | null;
  met: boolean;
}

/** The levels grouped by round, in order. */
function rounds(levels: readonly LoadLevel[]): LoadLevel[][] {
  const by = new Map<number, LoadLevel[]>();
  for (const l of levels) by.set(l.round, [...(by.get(l.round) ?? []), l]);
  return [...by.values()];
}

function verdict(levels: readonly LoadLevel[]): Verdict {
  const valid = levels.every((l) => l.non2xx === 0 && l.errors === 0);
  const within = levels.filter((l) => l.latency.p99 <= TARGETS.p99Ms);
  const best = within.reduce<LoadLevel | null>(
    (a, l) => (a === null || l.requestsPerSec > a.requestsPerSec ? l : a),
    null,
  );
  return { valid, best, met: valid && best !== null && best.requestsPerSec >= TARGETS.searchesPerSec };
}

interface RunFigures {
  env: Environment;
  opts: ApiOptions;
  corpus: SyntheticCorpus;
  build: BuildReport;
  baseline: BaselineReport;
  startMs: number;
  preflight: PreflightReport;
  levels: LoadLevel[];
  stop: { graceful: boolean; how: string };
  profile: string | null;
}

function report(f: RunFigures): string {
  const { env, opts, corpus, baseline, preflight: pre, levels } = f;
  const v = verdict(levels);
  const out: string[] = [];
  out.push(`## API load: ${int(opts.n)} memories, POST /v1/search`, '');
  out.push(
    `- **Date:** ${env.date} · **Revision:** ${env.revision} · **Command:** \`${env.command}\``,
    `- **Machine:** ${env.machine.cpu}, ${env.machine.cores} cores, ${env.machine.memoryGiB} GiB, ${env.machine.platform}, Node ${env.machine.node}; ` +
      `1-min load average ${env.loadAverage.start.toFixed(2)} at the start, ${env.loadAverage.end.toFixed(2)} after the load phase.`,
    `- **Data:** synthetic corpus (seed ${opts.seed}), ${corpus.namespaces.map((n) => `\`${n.namespace}\` ${int(n.memories)}`).join(', ')} memories; ` +
      `ingested in batches of ${int(opts.batch)}, embedded (built-in hashing embedder), indexed and saved in ${sec(f.build.ms)}` +
      `${f.build.busyRetries > 0 ? ` (${int(f.build.busyRetries)} busy retries)` : ''}.`,
    `- **Server:** \`cairn serve --no-auth --port 0 --rate-limit ${RATE_LIMIT_PER_MINUTE} --processes ${opts.processes}\`, embedded mode, \`CAIRN_LOG_LEVEL=warn\`, ` +
      `a child process (listening ${sec(f.startMs)} after spawn; stopped with SIGTERM: ${f.stop.graceful ? `exited, ${f.stop.how}` : `**killed** after ${STOP_DEADLINE_MS / 1000} s`}).`,
    `- **Load:** autocannon 9 in the benchmark process, on the same machine (it shares the cores with the server). ` +
      `${int(opts.queries)} search bodies \`{namespace, query, k: 5, filters?}\` from the speed benchmark's mix ` +
      `(${Object.entries(QUERY_MIX)
        .map(([c, s]) => `${(s * 100).toFixed(0)}% ${QUERY_CLASS_LABEL[c as keyof typeof QUERY_MIX]}`)
        .join(', ')}), all on \`${corpus.namespaces[0]!.namespace}\`; ` +
      `every connection cycles through them from its own offset. ${opts.warmup} s warm-up, then ${opts.duration} s measured, per level. ` +
      "Latency is request sent → response read, 2xx only, from autocannon's per-response timings.",
    '',
  );

  out.push(
    `Preflight: all ${int(pre.sent)} bodies sent once, sequentially: every one answered 200; ` +
      `${int(pre.degraded)} degraded, ${int(pre.empty)} with no hits, ${pre.meanHits.toFixed(1)} hits on average; ` +
      `p50 ${ms(pre.latency.p50)} ms (fetch, cold indexes at first).`,
    '',
  );

  const b = baseline.latency;
  const cpuNote = levels.some((l) => l.cpu.server === null) ? ' (– : not measurable on this OS)' : '';
  out.push(
    ...table(
      [
        'connections',
        'requests/s',
        'p50 (ms)',
        'p90 (ms)',
        'p99 (ms)',
        'max (ms)',
        '2xx',
        'non-2xx',
        'errors',
        'CPU cores: server / bench / other',
      ],
      [
        [
          `in-process \`engine.search\`, sequential (${int(b.n)})`,
          int(1000 / b.mean),
          ms(b.p50),
          ms(b.p90),
          ms(b.p99),
          ms(b.max),
          '',
          '',
          '',
          '',
        ],
        ...levels.map((l) => [
          `HTTP, ${l.connections}${opts.rounds > 1 ? ` (round ${l.round})` : ''}`,
          `**${int(l.requestsPerSec)}**`,
          ms(l.latency.p50),
          ms(l.latency.p90),
          l.latency.p99 <= TARGETS.p99Ms ? `**${ms(l.latency.p99)}**` : ms(l.latency.p99),
          ms(l.latency.max),
          int(l.ok),
          l.non2xx === 0 ? '0' : `**${int(l.non2xx)}**`,
          l.errors === 0 ? '0' : `**${int(l.errors)}** (${int(l.timeouts)} timeouts)`,
          `${cores(l.cpu.server)} / ${cores(l.cpu.bench)} / ${cores(l.cpu.other)}`,
        ]),
      ],
      ['---', '---:', '---:', '---:', '---:', '---:', '---:', '---:', '---:', '---:'],
    ),
    '',
    `In-process requests/s is 1000 ÷ mean latency (one caller, back to back); ${int(baseline.degraded)} of its searches were degraded. ` +
      `CPU cores: average busy cores over the measured seconds, from /proc: the server process (all threads), ` +
      `this process (autocannon), and everything else on the machine${cpuNote}.`,
    '',
  );

  const one = levels.find((l) => l.connections === 1);
  if (one)
    out.push(
      `HTTP at 1 connection vs in-process: p50 ${ratio(one.latency.p50 / b.p50)} (+${ms(one.latency.p50 - b.p50)} ms), ` +
        `p99 ${ratio(one.latency.p99 / b.p99)}, requests/s ${ratio(one.requestsPerSec / (1000 / b.mean))}.`,
      '',
    );

  const target = `Target: ≥ ${int(TARGETS.searchesPerSec)} searches/s with p99 ≤ ${TARGETS.p99Ms} ms`;
  const best = v.best
    ? `best level within the p99 bound: ${v.best.connections} connection(s), ${int(v.best.requestsPerSec)} requests/s at p99 ${ms(v.best.latency.p99)} ms`
    : `no level kept p99 ≤ ${TARGETS.p99Ms} ms`;
  const perRound = rounds(levels).map(verdict);
  const roundsMet = perRound.filter((r) => r.met).length;
  out.push(
    opts.rounds > 1
      ? `**${target}: met in ${roundsMet} of ${opts.rounds} rounds**; per round, the best level within the p99 bound: ` +
          perRound
            .map((r, i) =>
              r.best
                ? `${i + 1}: ${r.best.connections} connection(s), ${int(r.best.requestsPerSec)}/s at p99 ${ms(r.best.latency.p99)} ms`
                : `${i + 1}: none`,
            )
            .join('; ') +
          '.'
      : `**${target}: ${v.met ? 'met' : 'not met'}**; ${best}.`,
  );
  if (!v.valid)
    out.push(' **This run is invalid: some requests failed or answered non-2xx (see the table).**');
  out.push('');
  if (f.profile) out.push(`Server CPU profile: \`${f.profile}\`.`, '');
  return out.join('\n');
}

/** biome.json's formatter line width: the results file is written the way `biome format` would leave it. */
const JSON_LINE_WIDTH = 110;

/**
 * JSON as Biome formats it (objects one key per line, arrays on one line when they fit), so the written
 * results pass `biome check`; fractional figures are rounded to 3 decimals. (As in pipeline.ts.)
 */
function formatJson(value: unknown, indent = '', prefix = 0): string {
  const inner = `${indent}  `;
  if (Array.isArray(value)) {
    const items = value.map((v) => formatJson(v, inner, inner.length));
    const flat = `[${items.join(', ')}]`;
    // prefix: what precedes the value on its line; +1 for a trailing comma.
    if (!flat.includes('\n') && prefix + flat.length + 1 <= JSON_LINE_WIDTH) return flat;
    return `[\n${items.map((i) => inner + i).join(',\n')}\n${indent}]`;
  }
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value).filter(([, v]) => v !== undefined);
    if (entries.length === 0) return '{}';
    const lines = entries.map(([k, v]) => {
      const key = `${JSON.stringify(k)}: `;
      return `${inner}${key}${formatJson(v, inner, inner.length + key.length)}`;
    });
    return `{\n${lines.join(',\n')}\n${indent}}`;
  }
  if (typeof value === 'number' && !Number.isFinite(value)) return 'null';
  if (typeof value === 'number' && !Number.isInteger(value)) return String(Math.round(value * 1000) / 1000);
  return JSON.stringify(value) ?? 'null';
}

function writeResults(f: RunFigures, md: string): string {
  mkdirSync(OUT_DIR, { recursive: true });
  writeFileSync(OUT_PATH, `${md}\n`);
  mkdirSync(RESULTS_DIR, { recursive: true });
  const jsonPath = join(RESULTS_DIR, `api-${f.env.date.slice(0, 10)}.json`);
  const v = verdict(f.levels);
  const json = {
    ...f.env,
    options: f.opts,
    corpus: { namespaces: f.corpus.namespaces, memories: f.build.memories },
    targets: TARGETS,
    figures: {
      buildMs: f.build.ms,
      buildBusyRetries: f.build.busyRetries,
      serverStartMs: f.startMs,
      serverStop: f.stop,
      preflight: f.preflight,
      inProcess: f.baseline,
      levels: f.levels,
    },
    verdict: {
      valid: v.valid,
      met: v.met,
      roundsMet: rounds(f.levels).filter((r) => verdict(r).met).length,
      rounds: f.opts.rounds,
      bestConnections: v.best?.connections ?? null,
      bestRequestsPerSec: v.best?.requestsPerSec ?? null,
    },
    markdown: md,
  };
  writeFileSync(jsonPath, `${formatJson(json)}\n`);
  return jsonPath;
}

// ── Main ────────────────────────────────────────────────────────────────────────────────────────────────

async function main(): Promise<void> {
  const opts = parseOptions(process.argv.slice(2));
  const loadAtStart = os.loadavg()[0]!;
  t0Global = now();
  const corpus = generateCorpus({ mainDocs: opts.n, seed: opts.seed });
  const queries = makeQueries(corpus, opts.queries, opts.seed + 1);
  const bodies = queries.map(searchBody);
  const dir = opts.dataDir ?? mkdtempSync(join(os.tmpdir(), 'cairn-api-'));
  const temporary = opts.dataDir === null;
  if (temporary) leftovers.dirs.add(dir);
  let server: ServeProcess | null = null;
  try {
    const build = await reuseOrBuild(dir, corpus, opts);
    progress(`  built in ${sec(build.ms)}; in-process baseline: ${int(opts.baseline)} searches`);
    const baseline = await inProcessBaseline(dir, corpus, queries, opts);
    progress(`  p50 ${ms(baseline.latency.p50)} ms, p99 ${ms(baseline.latency.p99)} ms; starting the server`);
    const tStart = now();
    const profileDir = opts.profile ? OUT_DIR : null;
    server = await startServer(dir, profileDir, opts.processes);
    const url = await server.url;
    const startMs = now() - tStart;
    progress(`  listening on ${url}; preflight: ${int(bodies.length)} bodies`);
    const pre = await preflight(url, bodies);
    const levels: LoadLevel[] = [];
    for (let round = 1; round <= opts.rounds; round++)
      for (const c of opts.connections) {
        progress(
          `load: ${c} connection(s), ${opts.warmup} s warm-up + ${opts.duration} s${opts.rounds > 1 ? `, round ${round} of ${opts.rounds}` : ''}`,
        );
        const level = await loadLevel(server, url, bodies, c, opts, round);
        progress(
          `  ${int(level.requestsPerSec)} req/s, p50 ${ms(level.latency.p50)} ms, p99 ${ms(level.latency.p99)} ms, non-2xx ${level.non2xx}`,
        );
        levels.push(level);
      }
    const env = environment(loadAtStart);
    const stop = await server.stop();
    const f: RunFigures = {
      env,
      opts,
      corpus,
      build,
      baseline,
      startMs,
      preflight: pre,
      levels,
      stop,
      profile: opts.profile ? 'bench/out/CPU.*.cpuprofile' : null,
    };
    const md = report(f);
    process.stdout.write(`${md}\n`);
    const jsonPath = writeResults(f, md);
    progress(`done; written to ${OUT_PATH} and ${jsonPath}`);
  } finally {
    if (server?.alive) await server.stop();
    if (temporary) {
      rmSync(dir, { recursive: true, force: true });
      leftovers.dirs.delete(dir);
    }
  }
}

await main();
