// Live reindex benchmark: a user's `cairn reindex` beside a running `cairn serve` that is under a steady
// load of searches and writes, all through the real CLI processes. It builds a fresh data folder with
// `cairn ingest`, starts the server, puts it under an open-loop load (fixed rates of searches and writes,
// whatever the latencies), runs `cairn reindex --embedder hash:384 --json` after a warm-up, keeps the load
// on for a cool-down after the switch, then checks that every acknowledged write is there with a vector in
// the new space and that nothing is left pending. Prints Markdown (a row per window, by phase, and the
// issue's targets), and the whole record as JSON with --json-out.
// Usage: cd bench && npx tsc -p tsconfig.build.json && cd .. && node bench/dist/live-reindex.js
//          [--n 100000] [--search-rate 100] [--write-rate 10] [--max-in-flight 8] [--prewarm 15]
//          [--warmup 20] [--cooldown 30] [--window 10] [--baseline-skip 5] [--from hash:768] [--embedder hash:384]
//          [--sample 200] [--queries 2000] [--seed 42] [--reindex-timeout 1800] [--data-dir DIR] [--keep]
//          [--json-out PATH] [--mode embedded|distributed] [--node-arg=--cpu-prof …]
// (pnpm bench:reindex runs the built file.) The work folder is kept, with the server's and the reindex
// command's output, whenever something in Cairn misbehaved (an error, a search without its vector leg, a
// lost write, a miss of the own-text check, pending left, no switch).
// The load runs in this process, on the same machine as the server and the reindex: the three share its
// cores, as they would on a small host.

import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
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
import { dirname, join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { type RedisServer, startRedisServer } from '@cairn/pipeline/testing';
import { cliIngest } from './cli-runner.js';
import { gitRevision } from './git-revision.js';
import { type LatencySummary, summarize } from './percentiles.js';
import {
  CLI_SCRIPT,
  expiry,
  leftovers,
  ServeProcess,
  START_DEADLINE_MS,
  STOP_DEADLINE_MS,
} from './serve-process.js';
import { generateCorpus, type SyntheticCorpus } from './synthetic-corpus.js';
import { makeQueries, toRequest } from './synthetic-queries.js';

/** The issue's targets, reported beside the figures; the benchmark exits non-zero only on lost writes. */
const TARGETS = Object.freeze({
  /** Search p99 during the reindex at most this many times the p99 before it. */
  p99Ratio: 2,
  /** Memories a second of the reindex, from the CLI's own summary. */
  reindexPerSec: 6_000,
});

interface LiveReindexOptions {
  /** Memories in the data folder before the run. @defaultValue 100_000 */
  n: number;
  /** Searches a second, scheduled open-loop. @defaultValue 100 */
  searchRate: number;
  /** Writes (one memory each) a second, scheduled open-loop. @defaultValue 10 */
  writeRate: number;
  /** Searches, and writes, in flight at most; a due request beyond it waits, and the wait counts in its latency. @defaultValue 8 */
  maxInFlight: number;
  /**
   * Seconds of unrecorded closed-loop searches (`maxInFlight` at a time) before the measured load: a
   * fresh server over 100k memories maps its indexes and fills its caches in its first seconds, and an
   * open-loop load started on it would queue up a backlog that spills over into the baseline. @defaultValue 15
   */
  prewarm: number;
  /** Seconds of load before the reindex starts (the "before" phase). @defaultValue 20 */
  warmup: number;
  /** Seconds of load after the reindex command exits (the "after" phase). @defaultValue 30 */
  cooldown: number;
  /** Seconds per row of the table. @defaultValue 10 */
  window: number;
  /**
   * The "before" baseline leaves out its first seconds (the open loop's own start); at most half the
   * before phase. @defaultValue 5
   */
  baselineSkip: number;
  /** The embedder of the space the corpus is ingested into (the old model). @defaultValue 'hash:768' */
  from: string;
  /** The embedder of the new space. @defaultValue 'hash:384' */
  embedder: string;
  /** Acknowledged writes searched by their own text at the end (all those of the reindex first). @defaultValue 200 */
  sample: number;
  /** Distinct search bodies the load cycles through. @defaultValue 2_000 */
  queries: number;
  seed: number;
  /** Seconds the reindex command may take before it is killed and the run fails. @defaultValue 1_800 */
  reindexTimeout: number;
  /** Work folder (the data folder is `<dir>/data`); null: a temporary one. It must be empty or new. @defaultValue null */
  dataDir: string | null;
  /** Keep the temporary work folder (it is kept anyway when something in Cairn misbehaved). @defaultValue false */
  keep: boolean;
  /** Where the JSON record goes; null: none. @defaultValue null */
  jsonOut: string | null;
  /**
   * `distributed`: a private redis-server, one `cairn worker` (every stage), `cairn serve` and `cairn
   * reindex` with REDIS_URL (the embed workers fill the space). The corpus is ingested embedded first.
   * @defaultValue 'embedded'
   */
  mode: 'embedded' | 'distributed';
  /** Node flags for the server process (`--cpu-prof`, `--cpu-prof-dir=D`). @defaultValue [] */
  nodeArgs: readonly string[];
}

const DEFAULTS: Readonly<LiveReindexOptions> = Object.freeze({
  n: 100_000,
  searchRate: 100,
  writeRate: 10,
  maxInFlight: 8,
  prewarm: 15,
  warmup: 20,
  cooldown: 30,
  window: 10,
  baselineSkip: 5,
  from: 'hash:768',
  embedder: 'hash:384',
  sample: 200,
  queries: 2_000,
  seed: 42,
  reindexTimeout: 1_800,
  dataDir: null,
  keep: false,
  jsonOut: null,
  mode: 'embedded',
  nodeArgs: [],
});

/** A request that takes longer than this counts as an error ("timeout"). */
const REQUEST_TIMEOUT_MS = 30_000;
/** POST /v1/memories/get takes at most this many ids. */
const GET_IDS_MAX = 200;
/** How long the end waits for every namespace's `pending` to reach 0. */
const PENDING_DEADLINE_MS = 30_000;
/**
 * Half the time window of the "exact" vector search of a miss: at 10 writes a second it holds a few dozen
 * memories, below the size at which the vector leg stops scanning a filtered set exactly.
 */
const EXACT_WINDOW_MS = 1_000;
/** How often the scheduler looks for due requests. */
const TICK_MS = 5;

function parseOptions(argv: string[]): LiveReindexOptions {
  const { values: v } = parseArgs({
    args: argv,
    options: {
      n: { type: 'string' },
      'search-rate': { type: 'string' },
      'write-rate': { type: 'string' },
      'max-in-flight': { type: 'string' },
      prewarm: { type: 'string' },
      warmup: { type: 'string' },
      cooldown: { type: 'string' },
      window: { type: 'string' },
      'baseline-skip': { type: 'string' },
      from: { type: 'string' },
      embedder: { type: 'string' },
      sample: { type: 'string' },
      queries: { type: 'string' },
      seed: { type: 'string' },
      'reindex-timeout': { type: 'string' },
      'data-dir': { type: 'string' },
      keep: { type: 'boolean' },
      'json-out': { type: 'string' },
      mode: { type: 'string' },
      'node-arg': { type: 'string', multiple: true, default: [] },
    },
  });
  const num = (key: string, raw: string | undefined, fallback: number, min: number, int = true) => {
    if (raw === undefined) return fallback;
    const x = Number(raw.replaceAll('_', ''));
    if (!Number.isFinite(x) || x < min || (int && !Number.isInteger(x)))
      throw new Error(`--${key} must be ${int ? 'an integer' : 'a number'} ≥ ${min}, got "${raw}"`);
    return x;
  };
  const d = DEFAULTS;
  const mode = v.mode ?? d.mode;
  if (mode !== 'embedded' && mode !== 'distributed')
    throw new Error(`--mode must be embedded or distributed, got "${mode}"`);
  return {
    n: num('n', v.n, d.n, 1),
    searchRate: num('search-rate', v['search-rate'], d.searchRate, 0, false),
    writeRate: num('write-rate', v['write-rate'], d.writeRate, 0, false),
    maxInFlight: num('max-in-flight', v['max-in-flight'], d.maxInFlight, 1),
    prewarm: num('prewarm', v.prewarm, d.prewarm, 0, false),
    warmup: num('warmup', v.warmup, d.warmup, 1, false),
    cooldown: num('cooldown', v.cooldown, d.cooldown, 0, false),
    window: num('window', v.window, d.window, 1, false),
    baselineSkip: num('baseline-skip', v['baseline-skip'], d.baselineSkip, 0, false),
    from: v.from ?? d.from,
    embedder: v.embedder ?? d.embedder,
    sample: num('sample', v.sample, d.sample, 0),
    queries: num('queries', v.queries, d.queries, 1),
    seed: num('seed', v.seed, d.seed, 0),
    reindexTimeout: num('reindex-timeout', v['reindex-timeout'], d.reindexTimeout, 1, false),
    dataDir: v['data-dir'] ? resolve(v['data-dir']) : null,
    keep: Boolean(v.keep),
    jsonOut: v['json-out'] ? resolve(v['json-out']) : null,
    mode,
    nodeArgs: v['node-arg'] ?? [],
  };
}

const now = () => performance.now();
let tProgram = now();
const progress = (msg: string) =>
  process.stderr.write(`[live-reindex ${((now() - tProgram) / 1000).toFixed(1)}s] ${msg}\n`);

// ── HTTP ────────────────────────────────────────────────────────────────────────────────────────────────

interface Answer {
  status: number;
  text: string;
}

/** One request with fetch (keep-alive by default in Node 20); throws on a transport failure or timeout. */
async function call(base: string, method: 'GET' | 'POST', path: string, body?: unknown): Promise<Answer> {
  const res = await fetch(`${base}${path}`, {
    method,
    ...(body === undefined
      ? {}
      : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
    signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
  });
  return { status: res.status, text: await res.text() };
}

/** A transport failure's name: its cause's code (ECONNRESET, ECONNREFUSED…), "timeout", or the message. */
function errorName(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  if (err.name === 'TimeoutError' || err.name === 'AbortError') return 'timeout';
  const cause = (err as Error & { cause?: { code?: string } }).cause;
  return cause?.code ?? err.message.slice(0, 40);
}

// ── /proc figures ───────────────────────────────────────────────────────────────────────────────────────

const CLOCK_TICKS = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

/** VmRSS and VmHWM (peak RSS) in bytes, and CPU seconds, of a process; null where unreadable. */
function readProc(pid: number | undefined): { rss: number | null; hwm: number | null; cpu: number | null } {
  const out = { rss: null as number | null, hwm: null as number | null, cpu: null as number | null };
  if (pid === undefined) return out;
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kib = (name: string) => {
      const m = new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status);
      return m ? Number(m[1]) * 1024 : null;
    };
    out.rss = kib('VmRSS');
    out.hwm = kib('VmHWM');
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    out.cpu = (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
  } catch {
    // Not Linux, or the process is gone.
  }
  return out;
}

// ── The workload ────────────────────────────────────────────────────────────────────────────────────────

type Memory = SyntheticCorpus['memories'][number];

/** One request of the load; times in ms since the load began. */
interface RequestRecord {
  kind: 'search' | 'write';
  /** When it was due (open loop: the schedule, not when it could be sent). */
  at: number;
  /** From due to answered: waiting for a free slot included. */
  ms: number;
  /** From sent to answered. */
  serviceMs: number;
  /** HTTP status; 0: no answer (see `error`). */
  status: number;
  error?: string;
  /** A search answered without its vector leg (`degraded` includes 'vector'). */
  vectorDegraded: boolean;
  /** A search's `degraded` list and reasons when not empty. */
  degraded?: { legs: string[]; reasons: Record<string, string> };
}

/** One kind of request's queue: due requests wait here for one of its `maxInFlight` slots. */
interface Lane {
  inFlight: number;
  backlog: Array<() => Promise<void>>;
  peakBacklog: number;
}

/** An acknowledged write (201 and status stored): checked at the end. */
interface AckedWrite {
  namespace: string;
  id: string;
  text: string;
  /** Ms since the load began, when acknowledged. */
  at: number;
  /** Wall clock at the write, for a time filter. */
  wall: number;
}

/**
 * The open-loop load: the i-th search is due at i / searchRate seconds, the j-th write at j / writeRate,
 * whatever the server's latency. Searches and writes are two lanes, as two independent clients would be
 * (a slow write never holds a search back): at most `maxInFlight` requests of each are out at once; a due
 * request beyond that waits in its lane, and the wait counts in its latency (so a slow server cannot hide
 * behind the schedule).
 */
class OpenLoopLoad {
  readonly records: RequestRecord[] = [];
  readonly acked: AckedWrite[] = [];
  /** The item status of every 201 answer to a write (stored, updated, …), for the record. */
  readonly writeStatuses: Record<string, number> = {};
  private t0 = 0;
  private timer: NodeJS.Timeout | null = null;
  private searchesIssued = 0;
  private writesIssued = 0;
  readonly lanes: Record<RequestRecord['kind'], Lane> = {
    search: { inFlight: 0, backlog: [], peakBacklog: 0 },
    write: { inFlight: 0, backlog: [], peakBacklog: 0 },
  };
  private idle: (() => void) | null = null;
  private readonly runId = Date.now().toString(36);

  constructor(
    private readonly base: string,
    private readonly searches: readonly string[],
    private readonly pool: readonly Memory[],
    private readonly opts: LiveReindexOptions,
  ) {}

  /** Ms since the load began. */
  elapsed(): number {
    return now() - this.t0;
  }

  start(): void {
    this.t0 = now();
    this.timer = setInterval(() => this.tick(), TICK_MS);
  }

  /** Stops scheduling; resolves once every due request has been answered. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    if (this.drained()) return;
    await new Promise<void>((r) => {
      this.idle = r;
    });
  }

  private tick(): void {
    const t = this.elapsed();
    const dueSearches = Math.floor((t * this.opts.searchRate) / 1000);
    const dueWrites = Math.floor((t * this.opts.writeRate) / 1000);
    while (this.searchesIssued < dueSearches) {
      const i = this.searchesIssued++;
      this.enqueue(this.lanes.search, () => this.search(i, (i * 1000) / this.opts.searchRate));
    }
    while (this.writesIssued < dueWrites) {
      const j = this.writesIssued++;
      this.enqueue(this.lanes.write, () => this.write(j, (j * 1000) / this.opts.writeRate));
    }
  }

  private drained(): boolean {
    return Object.values(this.lanes).every((l) => l.inFlight === 0 && l.backlog.length === 0);
  }

  private enqueue(lane: Lane, job: () => Promise<void>): void {
    lane.backlog.push(job);
    lane.peakBacklog = Math.max(lane.peakBacklog, lane.backlog.length);
    this.pump(lane);
  }

  private pump(lane: Lane): void {
    while (lane.inFlight < this.opts.maxInFlight && lane.backlog.length > 0) {
      const job = lane.backlog.shift()!;
      lane.inFlight++;
      void job().finally(() => {
        lane.inFlight--;
        this.pump(lane);
        if (this.idle && this.drained()) this.idle();
      });
    }
  }

  private async search(i: number, due: number): Promise<void> {
    const body = this.searches[i % this.searches.length]!;
    const sent = this.elapsed();
    const rec: RequestRecord = {
      kind: 'search',
      at: due,
      ms: 0,
      serviceMs: 0,
      status: 0,
      vectorDegraded: false,
    };
    try {
      const res = await call(this.base, 'POST', '/v1/search', JSON.parse(body));
      rec.status = res.status;
      if (res.status === 200) {
        const r = JSON.parse(res.text) as { degraded?: string[]; degradedReasons?: Record<string, string> };
        if (r.degraded && r.degraded.length > 0) {
          rec.degraded = { legs: r.degraded, reasons: r.degradedReasons ?? {} };
          rec.vectorDegraded = r.degraded.includes('vector');
        }
      } else rec.error = res.text.slice(0, 200);
    } catch (err) {
      rec.error = errorName(err);
    }
    const end = this.elapsed();
    rec.ms = end - due;
    rec.serviceMs = end - sent;
    this.records.push(rec);
  }

  private async write(j: number, due: number): Promise<void> {
    const source = this.pool[j % this.pool.length]!;
    const id = `live-${this.runId}-${j}`;
    // Past the pool's end a text comes round again: a marker keeps every text unique, so a search of a
    // write's own text can only be answered by that write.
    const text =
      j < this.pool.length ? source.text : `${source.text} lap${Math.floor(j / this.pool.length)}x${j}`;
    const sent = this.elapsed();
    const wall = Date.now();
    const rec: RequestRecord = {
      kind: 'write',
      at: due,
      ms: 0,
      serviceMs: 0,
      status: 0,
      vectorDegraded: false,
    };
    try {
      const res = await call(this.base, 'POST', '/v1/memories', { namespace: source.namespace, id, text });
      rec.status = res.status;
      if (res.status === 201) {
        const r = JSON.parse(res.text) as { items: Array<{ id: string; status: string }> };
        const item = r.items[0];
        const status = item?.status ?? 'missing';
        this.writeStatuses[status] = (this.writeStatuses[status] ?? 0) + 1;
        if (item && (status === 'stored' || status === 'updated' || status === 'unchanged'))
          this.acked.push({ namespace: source.namespace, id: item.id, text, at: this.elapsed(), wall });
      } else rec.error = res.text.slice(0, 200);
    } catch (err) {
      rec.error = errorName(err);
    }
    const end = this.elapsed();
    rec.ms = end - due;
    rec.serviceMs = end - sent;
    this.records.push(rec);
  }
}

/**
 * Closed-loop searches, `concurrency` at a time, for `seconds`, not recorded: the fresh server maps its
 * index files and fills its caches before the measured load starts. Errors are ignored here; the
 * measured load counts its own.
 */
async function prewarm(base: string, searches: readonly string[], concurrency: number, seconds: number) {
  const until = now() + seconds * 1000;
  let next = 0;
  const recent: Array<[number, number]> = [];
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (now() < until) {
        const body = searches[next++ % searches.length]!;
        const t = now();
        try {
          await call(base, 'POST', '/v1/search', JSON.parse(body));
        } catch {
          // Counted by the measured load, not here.
        }
        recent.push([now(), now() - t]);
      }
    }),
  );
  const tail = recent.filter(([at]) => at >= until - 2_000).map(([, ms]) => ms);
  return { searches: recent.length, lastP50: summarize(tail).p50 };
}

// ── Monitors: /v1/stats, /v1/spaces and /proc once a second ─────────────────────────────────────────────

interface StatsNamespace {
  stored: number;
  embedded: number;
  indexed: number;
  pending: number;
  failed: number;
}

interface Poll {
  /** Ms since the load began. */
  at: number;
  /** The active space per GET /v1/stats; null when the poll failed. */
  space: string | null;
  pending: number | null;
  statsMs: number | null;
  /** The new space's progress per GET /v1/spaces, when the server has that route. */
  build: { embedded: number; total: number; phase: string | null; active: boolean } | null;
  serverRss: number | null;
  serverCpu: number | null;
  reindexRss: number | null;
  /** CPU seconds of the reindex command so far. */
  reindexCpu: number | null;
  /** CPU seconds of this process (the load generator) so far. */
  loadCpu: number;
}

interface SpaceRow {
  id: string;
  active: boolean;
  progress: { total: number; embedded: number; failed: number };
  build: { phase: string; last_error: string | null } | null;
}

class Monitor {
  readonly polls: Poll[] = [];
  newSpace: string | null = null;
  spacesRoute = true;
  reindexPid: number | undefined;
  private timer: NodeJS.Timeout | null = null;
  private busy = false;

  constructor(
    private readonly base: string,
    private readonly serverPid: number,
    private readonly load: OpenLoopLoad,
  ) {}

  start(): void {
    this.timer = setInterval(() => void this.poll(), 1_000);
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }

  private async poll(): Promise<void> {
    if (this.busy) return;
    this.busy = true;
    try {
      const at = this.load.elapsed();
      const server = readProc(this.serverPid);
      const build = readProc(this.reindexPid);
      const p: Poll = {
        at,
        space: null,
        pending: null,
        statsMs: null,
        build: null,
        serverRss: server.rss,
        serverCpu: server.cpu,
        reindexRss: build.rss,
        reindexCpu: build.cpu,
        loadCpu: (process.cpuUsage().user + process.cpuUsage().system) / 1e6,
      };
      try {
        const t = now();
        const res = await call(this.base, 'GET', '/v1/stats');
        p.statsMs = now() - t;
        if (res.status === 200) {
          const s = JSON.parse(res.text) as {
            space: string | null;
            namespaces: Record<string, StatsNamespace>;
          };
          p.space = s.space;
          p.pending = Object.values(s.namespaces).reduce((a, n) => a + n.pending, 0);
        }
      } catch {
        // Counted as a failed poll (space null).
      }
      if (this.spacesRoute && this.newSpace) {
        try {
          const res = await call(this.base, 'GET', '/v1/spaces');
          if (res.status === 404) this.spacesRoute = false;
          else if (res.status === 200) {
            const s = (JSON.parse(res.text) as { spaces: SpaceRow[] }).spaces.find(
              (x) => x.id === this.newSpace,
            );
            if (s)
              p.build = {
                embedded: s.progress.embedded,
                total: s.progress.total,
                phase: s.build?.phase ?? null,
                active: s.active,
              };
          }
        } catch {
          // Left null.
        }
      }
      this.polls.push(p);
    } finally {
      this.busy = false;
    }
  }
}

// ── The reindex command ─────────────────────────────────────────────────────────────────────────────────

interface ReindexSummary {
  space: string;
  total: number;
  embedded: number;
  failed: number;
  computed: number;
  seconds: number;
  perSecond: number;
  activated: boolean;
  mode: string;
  ranIn: string;
}

interface ReindexRun {
  /** Ms since the load began. */
  start: number;
  end: number | null;
  exit: string | null;
  summary: ReindexSummary | null;
  stdout: string;
  stderr: string;
  pid: number | undefined;
}

/** `cairn reindex --embedder <spec> --data-dir D --json` as its own process; resolves when it exits. */
function startReindex(
  dataDir: string,
  opts: LiveReindexOptions,
  env: Record<string, string>,
  load: OpenLoopLoad,
): { run: ReindexRun; done: Promise<ReindexRun>; child: ChildProcess } {
  const childEnv: NodeJS.ProcessEnv = { ...process.env, CAIRN_LOG_LEVEL: 'warn' };
  for (const name of ['REDIS_URL', 'CAIRN_API_URL', 'CAIRN_API_KEY', 'CAIRN_DATA_DIR']) delete childEnv[name];
  Object.assign(childEnv, env);
  const args = [CLI_SCRIPT, 'reindex', '--embedder', opts.embedder, '--data-dir', dataDir, '--json'];
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'], env: childEnv });
  leftovers.children.add(child);
  const run: ReindexRun = {
    start: load.elapsed(),
    end: null,
    exit: null,
    summary: null,
    stdout: '',
    stderr: '',
    pid: child.pid,
  };
  child.stdout!.on('data', (b: Buffer) => {
    run.stdout += b.toString();
  });
  child.stderr!.on('data', (b: Buffer) => {
    run.stderr += b.toString();
    if (run.stderr.length > 200_000) run.stderr = run.stderr.slice(-100_000);
  });
  const done = new Promise<ReindexRun>((r) =>
    child.on('exit', (code, signal) => {
      leftovers.children.delete(child);
      run.end = load.elapsed();
      run.exit = signal ? `signal ${signal}` : `code ${code}`;
      // --json prints one JSON object on stdout at the end.
      const line = run.stdout
        .trim()
        .split('\n')
        .reverse()
        .find((l) => l.trim().startsWith('{'));
      if (line)
        try {
          run.summary = JSON.parse(line) as ReindexSummary;
        } catch {
          // Left null; stdout is in the record.
        }
      r(run);
    }),
  );
  return { run, done, child };
}

// ── Verification ────────────────────────────────────────────────────────────────────────────────────────

interface SampleMiss {
  id: string;
  namespace: string;
  /** For a write: the phase it was acknowledged in; `ingested` for the control sample. */
  phase: Phase | 'ingested';
  topId: string | null;
  vecRank: number | null;
  bm25Rank: number | null;
  degraded: string[];
  /** Vector leg only (weights lexical 0), k 5: the memory's rank there, null if not in the five. */
  vectorOnlyRank: number | null;
  /**
   * Vector leg only, restricted to the second around the memory's time (a few candidates: an exact
   * search): its rank; 1 means the vector leg does reach it, so the miss is graph recall or fusion.
   */
  exactVectorRank: number | null;
  /** The plain search again once the whole sample is done: is the miss still there? */
  stillMissedOnRecheck: boolean;
  /**
   * `exact miss`: even the exact search does not return it (no vector in the active space, or its own
   * text's query vector falls below the embedder's similarity floor: the API cannot tell which);
   * `graph`: only the exact search finds it (HNSW recall); `fusion`: the vector leg alone finds it, the
   * hybrid ranking puts another memory first or leaves it out of the vector leg's short list.
   */
  cause: 'exact miss' | 'graph' | 'fusion';
}

/** The own-text check over a list of memories: top hit itself with a vector rank, and why not. */
interface OwnTextCheck {
  checked: number;
  byPhase: Record<string, number>;
  passed: number;
  misses: SampleMiss[];
}

interface Verification {
  acknowledged: number;
  /** Read back by POST /v1/memories/get. */
  found: number;
  missingSample: string[];
  /** Acknowledged writes searched by their own text. */
  writes: OwnTextCheck;
  /** The same check over memories of the ingested corpus: what the check gives without a live write. */
  control: OwnTextCheck;
  /** Every namespace's pending reached 0 (ms after the load stopped), or null: not within the deadline. */
  pendingZeroAfterMs: number | null;
  lastPending: Record<string, number>;
  finalSpace: string | null;
}

type Phase = 'before' | 'reindex' | 'after';

/** Up to `n` items, evenly spaced over the list (all of them when it has at most n). */
function spread<T>(items: readonly T[], n: number): T[] {
  if (items.length <= n) return [...items];
  return Array.from({ length: n }, (_, i) => items[Math.floor((i * items.length) / n)]!);
}

type Hit = { id: string; explain?: { vecRank: number | null; bm25Rank: number | null } };

/**
 * Each memory searched by its own exact text (k 1, explain full): it passes when the top hit is itself
 * with a vector rank. A miss is searched twice more, vector leg only (k 5), unfiltered and restricted to
 * the second around its time (an exact search), to tell a graph miss from a missing vector; and once
 * more, as at first, after the whole list.
 */
async function checkOwnText(
  base: string,
  list: ReadonlyArray<{ memory: AckedWrite; phase: SampleMiss['phase'] }>,
): Promise<OwnTextCheck> {
  const searchOwn = async (a: AckedWrite, how: 'hybrid' | 'vector' | 'exact vector') => {
    const body: Record<string, unknown> = { namespace: a.namespace, query: a.text, k: 1, explain: 'full' };
    if (how !== 'hybrid') Object.assign(body, { k: 5, weights: { lexical: 0, vector: 1 } });
    if (how === 'exact vector')
      body.filters = { since: a.wall - EXACT_WINDOW_MS, until: a.wall + EXACT_WINDOW_MS };
    const res = await call(base, 'POST', '/v1/search', body);
    if (res.status !== 200) throw new Error(`POST /v1/search → ${res.status} ${res.text.slice(0, 300)}`);
    return JSON.parse(res.text) as { hits: Hit[]; degraded: string[] };
  };
  const passes = (r: { hits: Hit[] }, a: AckedWrite) => {
    const top = r.hits[0];
    return top?.id === a.id && top.explain?.vecRank !== null && top.explain?.vecRank !== undefined;
  };
  const rankOf = (r: { hits: Hit[] }, a: AckedWrite) => {
    const i = r.hits.findIndex((h) => h.id === a.id);
    return i < 0 ? null : i + 1;
  };
  const out: OwnTextCheck = { checked: 0, byPhase: {}, passed: 0, misses: [] };
  const missed: Array<{ a: AckedWrite; miss: SampleMiss }> = [];
  for (const { memory: a, phase } of list) {
    out.checked++;
    out.byPhase[phase] = (out.byPhase[phase] ?? 0) + 1;
    const r = await searchOwn(a, 'hybrid');
    if (passes(r, a)) {
      out.passed++;
      continue;
    }
    const top = r.hits[0];
    const vectorOnlyRank = rankOf(await searchOwn(a, 'vector'), a);
    // The memory's own time as the server stamped it, for a window around it that holds a few memories.
    const got = await call(base, 'POST', '/v1/memories/get', { namespace: a.namespace, ids: [a.id] });
    const ts =
      got.status === 200
        ? (JSON.parse(got.text) as { memories: Array<{ ts: number }> }).memories[0]?.ts
        : undefined;
    const exactVectorRank = rankOf(await searchOwn({ ...a, wall: ts ?? a.wall }, 'exact vector'), a);
    const miss: SampleMiss = {
      id: a.id,
      namespace: a.namespace,
      phase,
      topId: top?.id ?? null,
      vecRank: top?.explain?.vecRank ?? null,
      bm25Rank: top?.explain?.bm25Rank ?? null,
      degraded: r.degraded,
      vectorOnlyRank,
      exactVectorRank,
      stillMissedOnRecheck: true,
      cause: exactVectorRank === null ? 'exact miss' : vectorOnlyRank === null ? 'graph' : 'fusion',
    };
    missed.push({ a, miss });
    out.misses.push(miss);
  }
  for (const { a, miss } of missed) miss.stillMissedOnRecheck = !passes(await searchOwn(a, 'hybrid'), a);
  return out;
}

async function verify(
  base: string,
  acked: readonly AckedWrite[],
  phaseOf: (at: number) => Phase,
  sampleSize: number,
  ingested: readonly Memory[],
): Promise<Verification> {
  // 1. Every acknowledged id read back.
  let found = 0;
  const missing: string[] = [];
  const byNs = new Map<string, string[]>();
  for (const a of acked) byNs.set(a.namespace, [...(byNs.get(a.namespace) ?? []), a.id]);
  for (const [namespace, ids] of byNs)
    for (let i = 0; i < ids.length; i += GET_IDS_MAX) {
      const res = await call(base, 'POST', '/v1/memories/get', {
        namespace,
        ids: ids.slice(i, i + GET_IDS_MAX),
      });
      if (res.status !== 200)
        throw new Error(`POST /v1/memories/get → ${res.status} ${res.text.slice(0, 300)}`);
      const r = JSON.parse(res.text) as { memories: unknown[]; missing: string[] };
      found += r.memories.length;
      missing.push(...r.missing);
    }

  // 2. Pending drains to 0 in every namespace.
  const t0 = now();
  let pendingZeroAfterMs: number | null = null;
  let lastPending: Record<string, number> = {};
  let finalSpace: string | null = null;
  while (now() - t0 < PENDING_DEADLINE_MS) {
    try {
      const res = await call(base, 'GET', '/v1/stats');
      if (res.status === 200) {
        const s = JSON.parse(res.text) as {
          space: string | null;
          namespaces: Record<string, StatsNamespace>;
        };
        finalSpace = s.space;
        lastPending = Object.fromEntries(Object.entries(s.namespaces).map(([ns, x]) => [ns, x.pending]));
        if (Object.values(lastPending).every((p) => p === 0)) {
          pendingZeroAfterMs = now() - t0;
          break;
        }
      }
    } catch {
      // Polled again.
    }
    await expiry(500);
  }

  // 3. A sample searched by its own text: the writes of the reindex first (all of them if they are
  // fewer than three quarters of the sample), then the others; a quarter is kept for the writes before
  // and after, so both kinds are checked.
  const during = acked.filter((a) => phaseOf(a.at) === 'reindex');
  const others = acked.filter((a) => phaseOf(a.at) !== 'reindex');
  const reserve = Math.min(others.length, Math.floor(sampleSize / 4));
  const picked = spread(during, sampleSize - reserve);
  picked.push(...spread(others, sampleSize - picked.length));
  const writes = await checkOwnText(
    base,
    picked.map((memory) => ({ memory, phase: phaseOf(memory.at) })),
  );
  // 4. The control: as many ingested memories, spread over the corpus, through the same check.
  const control = await checkOwnText(
    base,
    spread(ingested, picked.length).map((m) => ({
      memory: { namespace: m.namespace, id: m.id, text: m.text, at: -1, wall: m.ts },
      phase: 'ingested' as const,
    })),
  );
  return {
    acknowledged: acked.length,
    found,
    missingSample: missing.slice(0, 10),
    writes,
    control,
    pendingZeroAfterMs,
    lastPending,
    finalSpace,
  };
}

// ── Report ──────────────────────────────────────────────────────────────────────────────────────────────

interface Row {
  window: number;
  /** Seconds since the load began: the window's start and end. */
  from: number;
  to: number;
  phase: Phase;
  /** Searches due in the window (the schedule). */
  searchesPerSec: number;
  /** Searches answered in the window, whenever they were due: what the server got through. */
  answeredPerSec: number;
  /** Due → answered. */
  search: LatencySummary;
  /** Sent → answered. */
  searchService: LatencySummary;
  writesPerSec: number;
  write: LatencySummary;
  errors: number;
  vectorDegraded: number;
  /** The active space at the window's last stats poll. */
  space: string | null;
  serverRss: number | null;
  /** Busy cores of the server over the window. */
  serverCores: number | null;
}

interface PhaseFigures {
  phase: Phase | 'before (baseline)';
  seconds: number;
  searches: number;
  searchesPerSec: number;
  search: LatencySummary;
  searchService: LatencySummary;
  writes: number;
  write: LatencySummary;
  errors: number;
  errorKinds: Record<string, number>;
  vectorDegraded: number;
  otherDegraded: number;
}

const isError = (r: RequestRecord) => r.status < 200 || r.status > 299;
const errorKey = (r: RequestRecord) => (r.status === 0 ? (r.error ?? 'network') : String(r.status));

function phaseFigures(
  label: PhaseFigures['phase'],
  recs: readonly RequestRecord[],
  seconds: number,
): PhaseFigures {
  const searches = recs.filter((r) => r.kind === 'search');
  const writes = recs.filter((r) => r.kind === 'write');
  const errorKinds: Record<string, number> = {};
  for (const r of recs.filter(isError))
    errorKinds[`${r.kind} ${errorKey(r)}`] = (errorKinds[`${r.kind} ${errorKey(r)}`] ?? 0) + 1;
  const ok = searches.filter((r) => r.status === 200);
  return {
    phase: label,
    seconds,
    searches: searches.length,
    searchesPerSec: searches.length / Math.max(seconds, 1e-3),
    search: summarize(ok.map((r) => r.ms)),
    searchService: summarize(ok.map((r) => r.serviceMs)),
    writes: writes.length,
    write: summarize(writes.filter((r) => r.status === 201).map((r) => r.ms)),
    errors: recs.filter(isError).length,
    errorKinds,
    vectorDegraded: searches.filter((r) => r.vectorDegraded).length,
    otherDegraded: searches.filter((r) => r.degraded && !r.vectorDegraded).length,
  };
}

const MIB = 2 ** 20;
const mib = (x: number | null | undefined) => (x === null || x === undefined ? '–' : (x / MIB).toFixed(0));
const int = (x: number) => Math.round(x).toLocaleString('en-US');
const fmtMs = (x: number) =>
  Number.isNaN(x) ? '–' : x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2);
const sec = (ms: number | null) => (ms === null ? '–' : (ms / 1000).toFixed(1));
const yes = (ok: boolean) => (ok ? '**met**' : '**not met**');

function windowTable(rows: readonly Row[]): string {
  const header = [
    'window (s)',
    'phase',
    'search/s due',
    'answered/s',
    'search p50 ms',
    'search p99 ms',
    'p99 sent→answer',
    'write/s',
    'write p99 ms',
    'errors',
    'vector leg degraded',
    'active space',
    'server RSS MiB',
    'server cores',
  ];
  const lines = [
    `| ${header.join(' | ')} |`,
    `|${header.map((_, i) => (i < 2 ? '---' : '---:')).join('|')}|`,
  ];
  for (const r of rows)
    lines.push(
      `| ${[
        `${r.from.toFixed(0)}–${r.to.toFixed(0)}`,
        r.phase,
        r.searchesPerSec.toFixed(1),
        r.answeredPerSec.toFixed(1),
        fmtMs(r.search.p50),
        fmtMs(r.search.p99),
        fmtMs(r.searchService.p99),
        r.writesPerSec.toFixed(1),
        fmtMs(r.write.p99),
        r.errors,
        r.vectorDegraded,
        r.space ?? '–',
        mib(r.serverRss),
        r.serverCores === null ? '–' : r.serverCores.toFixed(2),
      ].join(' | ')} |`,
    );
  return lines.join('\n');
}

function phaseTable(phases: readonly PhaseFigures[]): string {
  const header = [
    'phase',
    'seconds',
    'searches',
    'search/s',
    'search p50 / p99 ms',
    'p99 sent→answer ms',
    'writes',
    'write p50 / p99 ms',
    'errors',
    'vector leg degraded',
  ];
  const lines = [
    `| ${header.join(' | ')} |`,
    `|${header.map((_, i) => (i === 0 ? '---' : '---:')).join('|')}|`,
  ];
  for (const p of phases)
    lines.push(
      `| ${[
        p.phase,
        p.seconds.toFixed(1),
        int(p.searches),
        p.searchesPerSec.toFixed(1),
        `${fmtMs(p.search.p50)} / ${fmtMs(p.search.p99)}`,
        fmtMs(p.searchService.p99),
        int(p.writes),
        `${fmtMs(p.write.p50)} / ${fmtMs(p.write.p99)}`,
        p.errors === 0
          ? '0'
          : `${p.errors} (${Object.entries(p.errorKinds)
              .map(([k, n]) => `${k}×${n}`)
              .join(', ')})`,
        p.vectorDegraded,
      ].join(' | ')} |`,
    );
  return lines.join('\n');
}

// ── Main ────────────────────────────────────────────────────────────────────────────────────────────────

async function main(): Promise<void> {
  const opts = parseOptions(process.argv.slice(2));
  if (!existsSync(CLI_SCRIPT)) throw new Error(`${CLI_SCRIPT} is missing: run pnpm build first`);
  tProgram = now();
  const loadAverageStart = os.loadavg()[0]!;
  const date = new Date().toISOString();

  // The corpus: the first n memories go to `cairn ingest`; the rest is the pool the writes take texts from.
  const expectedWrites = Math.ceil(opts.writeRate * (opts.warmup + opts.cooldown + 600));
  const poolSize = Math.max(2_000, Math.min(50_000, expectedWrites));
  const corpus = generateCorpus({ mainDocs: opts.n + poolSize, seed: opts.seed });
  const seed = corpus.memories.slice(0, opts.n);
  const pool = corpus.memories.slice(opts.n);
  const searches = makeQueries(
    corpus,
    opts.queries,
    opts.seed + 1,
    corpus.namespaces.map((n) => n.namespace),
  ).map((q) => JSON.stringify(toRequest(q, { k: 10 })));

  const work = opts.dataDir ?? mkdtempSync(join(os.tmpdir(), 'cairn-live-reindex-'));
  if (opts.dataDir) {
    mkdirSync(work, { recursive: true });
    if (readdirSync(work).length > 0)
      throw new Error(`${work} is not empty: the benchmark needs a fresh folder`);
  }
  const temporary = opts.dataDir === null;
  if (temporary) leftovers.dirs.add(work);
  // cliIngest writes its JSONL beside the data folder, i.e. in the work folder, removed with it.
  const dataDir = join(work, 'data');
  mkdirSync(dataDir, { recursive: true });

  let redis: RedisServer | null = null;
  let worker: ChildProcess | null = null;
  let server: ServeProcess | null = null;
  let anomaly = false;
  const workerLog: string[] = [];
  try {
    progress(`ingesting ${int(opts.n)} memories into ${dataDir} (cairn ingest)`);
    const tIngest = now();
    // The old model is 768-d feature hashing (the default before 384), as in the issue: 768-d → 384-d.
    cliIngest(seed, dataDir, opts.from);
    const ingestMs = now() - tIngest;
    progress(`  ingested in ${sec(ingestMs)} s`);

    const env: Record<string, string> = {};
    if (opts.mode === 'distributed') {
      redis = await startRedisServer();
      env.REDIS_URL = redis.url;
      const workerEnv: NodeJS.ProcessEnv = { ...process.env, REDIS_URL: redis.url, CAIRN_LOG_LEVEL: 'warn' };
      delete workerEnv.CAIRN_API_URL;
      worker = spawn(process.execPath, [CLI_SCRIPT, 'worker', '--data-dir', dataDir], {
        stdio: ['ignore', 'ignore', 'pipe'],
        env: workerEnv,
      });
      leftovers.children.add(worker);
      // Drained, or a chatty worker would block on a full pipe; its tail goes to worker.log when kept.
      worker.stderr!.on('data', (b: Buffer) => {
        workerLog.push(b.toString());
        if (workerLog.length > 2_000) workerLog.splice(0, 1_000);
      });
      progress(`distributed: redis ${redis.url}, worker pid ${worker.pid}`);
    }

    const serverLog: string[] = [];
    server = new ServeProcess({
      dataDir,
      env,
      nodeArgs: opts.nodeArgs,
      onLine: (line) => {
        serverLog.push(line);
        if (serverLog.length > 4_000) serverLog.splice(0, 2_000);
        return false;
      },
      progress,
    });
    const url = await Promise.race([server.url, expiry(START_DEADLINE_MS)]);
    if (url === null)
      throw new Error(`the server did not listen within ${START_DEADLINE_MS} ms\n${server.tail()}`);
    const initial = JSON.parse((await call(url, 'GET', '/v1/stats')).text) as { space: string | null };
    progress(
      `server pid ${server.pid} on ${url}, active space ${initial.space}; load ${opts.searchRate} searches/s + ` +
        `${opts.writeRate} writes/s (≤ ${opts.maxInFlight} in flight each), before ${opts.warmup} s`,
    );

    const warm = await prewarm(url, searches, opts.maxInFlight, opts.prewarm);
    progress(
      `  prewarm: ${int(warm.searches)} closed-loop searches in ${opts.prewarm} s, p50 of the last 2 s ` +
        `${fmtMs(warm.lastP50)} ms`,
    );
    const load = new OpenLoopLoad(url, searches, pool, opts);
    const monitor = new Monitor(url, server.pid, load);
    load.start();
    monitor.start();
    const windowMs = opts.window * 1000;
    const windowLog = setInterval(() => {
      const t = load.elapsed();
      const recent = load.records.filter((r) => r.at >= t - windowMs - 2_000 && r.at < t - 2_000);
      const s = summarize(recent.filter((r) => r.kind === 'search' && r.status === 200).map((r) => r.ms));
      const last = monitor.polls.at(-1);
      progress(
        `  ${(t / 1000).toFixed(0)} s: ${recent.filter((r) => r.kind === 'search').length} searches, p50 ${fmtMs(s.p50)} ` +
          `p99 ${fmtMs(s.p99)} ms, errors ${recent.filter(isError).length}, vector degraded ` +
          `${recent.filter((r) => r.vectorDegraded).length}, space ${last?.space}` +
          (last?.build ? `, new space ${last.build.embedded}/${last.build.total} ${last.build.phase}` : '') +
          `, server RSS ${mib(last?.serverRss)} MiB`,
      );
    }, windowMs);

    await expiry(opts.warmup * 1000);
    progress(`reindex: cairn reindex --embedder ${opts.embedder} --data-dir ${dataDir} --json`);
    const reindex = startReindex(dataDir, opts, env, load);
    monitor.reindexPid = reindex.run.pid;
    // The new space's id is only printed at the end; a hash space's id is known from its spec.
    const hash = /^hash(?::(\d+))?$/.exec(opts.embedder);
    monitor.newSpace = hash ? `cairn-hash-v1/${hash[1] ?? '384'}` : null;
    const finished = await Promise.race([reindex.done, expiry(opts.reindexTimeout * 1000)]);
    if (finished === null) {
      reindex.child.kill('SIGKILL');
      await reindex.done;
      reindex.run.exit = `killed after ${opts.reindexTimeout} s`;
      anomaly = true;
    }
    const run = reindex.run;
    progress(
      `  reindex exited (${run.exit}) after ${sec(run.end! - run.start)} s: ${run.summary ? JSON.stringify(run.summary) : run.stdout.slice(-500)}`,
    );
    if (run.summary?.space) monitor.newSpace = run.summary.space;
    await expiry(opts.cooldown * 1000);
    const loadEnd = load.elapsed();
    await load.stop();
    monitor.stop();
    clearInterval(windowLog);
    const loadStopped = load.elapsed();
    progress(
      `load stopped at ${sec(loadStopped)} s; verifying ${int(load.acked.length)} acknowledged writes`,
    );

    const rStart = run.start;
    const rEnd = run.end!;
    const phaseOf = (at: number): Phase => (at < rStart ? 'before' : at < rEnd ? 'reindex' : 'after');
    const verification = await verify(url, load.acked, phaseOf, opts.sample, seed);
    const serverProc = readProc(server.pid);
    const serverTail = serverLog.slice(-200);

    // The switch: the first stats poll that reports the new space active.
    const target = run.summary?.space ?? monitor.newSpace;
    const switchPoll = monitor.polls.find(
      (p) => p.space !== null && p.space === target && p.space !== initial.space,
    );
    // The build's phases as GET /v1/spaces reported them (the writer's embedding, indexing, …).
    const buildPhases: Array<{ phase: string; fromMs: number; embedded: number; total: number }> = [];
    for (const p of monitor.polls) {
      if (!p.build || p.at < rStart) continue;
      const phase = p.build.phase ?? (p.build.active ? 'active' : 'none');
      if (buildPhases.at(-1)?.phase !== phase)
        buildPhases.push({ phase, fromMs: p.at, embedded: p.build.embedded, total: p.build.total });
    }
    const firstIndexing = buildPhases.find((b) => b.phase === 'indexing');
    const embedPhaseRate = firstIndexing
      ? firstIndexing.embedded / ((firstIndexing.fromMs - rStart) / 1000)
      : null;
    const failedPolls = monitor.polls.filter((p) => p.space === null).length;

    // Windows of the table.
    const rows: Row[] = [];
    for (let w = 0; w * windowMs < loadEnd; w++) {
      const from = w * windowMs;
      const to = Math.min(loadEnd, from + windowMs);
      const recs = load.records.filter((r) => r.at >= from && r.at < to);
      const seconds = (to - from) / 1000;
      const polls = monitor.polls.filter((p) => p.at >= from && p.at < to);
      const before = monitor.polls.filter((p) => p.at < from).at(-1) ?? polls[0];
      const lastPoll = polls.at(-1);
      const cpu =
        before?.serverCpu != null && lastPoll?.serverCpu != null && lastPoll.at > before.at
          ? (lastPoll.serverCpu - before.serverCpu) / ((lastPoll.at - before.at) / 1000)
          : null;
      const okSearches = recs.filter((r) => r.kind === 'search' && r.status === 200);
      rows.push({
        window: w,
        from: from / 1000,
        to: to / 1000,
        phase: to <= rStart ? 'before' : from >= rEnd ? 'after' : 'reindex',
        searchesPerSec: recs.filter((r) => r.kind === 'search').length / seconds,
        answeredPerSec:
          load.records.filter((r) => r.kind === 'search' && r.at + r.ms >= from && r.at + r.ms < to).length /
          seconds,
        search: summarize(okSearches.map((r) => r.ms)),
        searchService: summarize(okSearches.map((r) => r.serviceMs)),
        writesPerSec: recs.filter((r) => r.kind === 'write').length / seconds,
        write: summarize(recs.filter((r) => r.kind === 'write' && r.status === 201).map((r) => r.ms)),
        errors: recs.filter(isError).length,
        vectorDegraded: recs.filter((r) => r.vectorDegraded).length,
        space: lastPoll?.space ?? null,
        serverRss: lastPoll?.serverRss ?? null,
        serverCores: cpu,
      });
    }
    const skip = Math.min(opts.baselineSkip * 1000, rStart / 2);
    const phases = [
      phaseFigures(
        'before (baseline)',
        load.records.filter((r) => r.at >= skip && r.at < rStart),
        (rStart - skip) / 1000,
      ),
      phaseFigures(
        'before',
        load.records.filter((r) => r.at < rStart),
        rStart / 1000,
      ),
      phaseFigures(
        'reindex',
        load.records.filter((r) => r.at >= rStart && r.at < rEnd),
        (rEnd - rStart) / 1000,
      ),
      phaseFigures(
        'after',
        load.records.filter((r) => r.at >= rEnd),
        (loadEnd - rEnd) / 1000,
      ),
    ];
    const [baseline, , during, after] = phases as [PhaseFigures, PhaseFigures, PhaseFigures, PhaseFigures];
    const all = phaseFigures('before', load.records, loadEnd / 1000);
    const ratio = during.search.p99 / baseline.search.p99;
    const serviceRatio = during.searchService.p99 / baseline.searchService.p99;
    const afterRatio = after.search.p99 / baseline.search.p99;
    const s = run.summary;
    const allFound = verification.found === verification.acknowledged;
    const w = verification.writes;
    const c = verification.control;
    const allVectors = w.passed === w.checked;
    const exactMisses = w.misses.filter((m) => m.cause === 'exact miss').length;
    const causesOf = (check: OwnTextCheck) =>
      (['exact miss', 'graph', 'fusion'] as const)
        .map((cause) => [cause, check.misses.filter((m) => m.cause === cause).length] as const)
        .filter(([, k]) => k > 0)
        .map(([cause, k]) => `${k} ${cause}`)
        .join(', ') || 'none';
    const pendingOk = verification.pendingZeroAfterMs !== null;
    const switched = Boolean(s?.activated) && verification.finalSpace === s?.space;
    anomaly ||=
      all.errors > 0 ||
      all.vectorDegraded > 0 ||
      !allFound ||
      // A write its own exact search misses lacks its vector: a defect. Graph and fusion misses are the
      // hashed vectors' recall, which ingested memories share (the control), not a misbehaving run.
      exactMisses > 0 ||
      !pendingOk ||
      !switched ||
      run.exit !== 'code 0';

    const machine = {
      cpu: os.cpus()[0]?.model.trim() ?? 'unknown',
      cores: os.availableParallelism(),
      memoryGiB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
      node: process.version,
    };
    const revision = gitRevision();
    const command = ['node', 'bench/dist/live-reindex.js', ...process.argv.slice(2)].join(' ');
    const loadAverageEnd = os.loadavg()[0]!;
    const peakBuildRss = Math.max(0, ...monitor.polls.map((p) => p.reindexRss ?? 0)) || null;
    // CPU over the reindex: the server, the reindex command (its last sample) and this load generator.
    const inReindex = monitor.polls.filter((p) => p.at >= rStart && p.at <= rEnd);
    const firstR = inReindex[0];
    const lastR = inReindex.at(-1);
    const spanR = firstR && lastR && lastR.at > firstR.at ? (lastR.at - firstR.at) / 1000 : null;
    const coresR = (a: number | null | undefined, b: number | null | undefined) =>
      spanR && a != null && b != null ? ((b - a) / spanR).toFixed(2) : '–';
    const buildCpu = Math.max(0, ...monitor.polls.map((p) => p.reindexCpu ?? 0));
    const cpuLine =
      `CPU during the reindex (busy cores): server ${coresR(firstR?.serverCpu, lastR?.serverCpu)}, load generator ` +
      `${coresR(firstR?.loadCpu, lastR?.loadCpu)}; the reindex command used ${buildCpu.toFixed(1)} CPU s in ` +
      `${sec(rEnd - rStart)} s; machine load average ${loadAverageStart.toFixed(1)} → ${os.loadavg()[0]!.toFixed(1)}.`;
    const missText = (m: SampleMiss) =>
      `${m.id} (${m.phase}; top hit ${m.topId === m.id ? 'itself' : m.topId} with vecRank ${m.vecRank}; vector leg ` +
      `alone: rank ${m.vectorOnlyRank ?? '>5'}, exact: ${m.exactVectorRank ?? '>5'} → ${m.cause}` +
      `${m.stillMissedOnRecheck ? '' : '; passed on a recheck'})`;
    const md = [
      `### Live reindex (${opts.mode}): ${int(opts.n)} memories, ${opts.searchRate} searches/s + ${opts.writeRate} writes/s`,
      '',
      `- Command: \`${command}\``,
      `- Date ${date}; revision ${revision}; ${machine.cpu}, ${machine.cores} cores, ${machine.memoryGiB} GiB, Node ${machine.node}; ` +
        `load average ${loadAverageStart.toFixed(1)} at the start, ${loadAverageEnd.toFixed(1)} at the end.`,
      `- Data: ${int(opts.n)} synthetic memories (${corpus.namespaces.length} namespaces) by \`cairn ingest\` in ${sec(ingestMs)} s ` +
        `(${int(opts.n / (ingestMs / 1000))}/s, embedded and indexed in the default space ${initial.space}).`,
      `- Load: open loop, ${opts.searchRate} searches/s (${opts.queries} synthetic queries, k 10) and ${opts.writeRate} ` +
        `single-memory writes/s, each ≤ ${opts.maxInFlight} in flight (peak backlog ${int(load.lanes.search.peakBacklog)} ` +
        `searches, ${int(load.lanes.write.peakBacklog)} writes). Latency counts from when a request was due (queueing ` +
        `behind a slow server included); "sent→answer" leaves the queueing out. Before ${opts.warmup} s, after ` +
        `${opts.cooldown} s; the baseline is the before phase minus its first ${sec(skip)} s. Before it, ` +
        `${opts.prewarm} s of unrecorded closed-loop searches (${int(warm.searches)}; p50 of their last 2 s ` +
        `${fmtMs(warm.lastP50)} ms) warmed the fresh server.`,
      `- Reindex: \`cairn reindex --embedder ${opts.embedder} --data-dir D --json\` started at ${sec(rStart)} s, exited ` +
        `(${run.exit}) at ${sec(rEnd)} s (${sec(rEnd - rStart)} s); stats first showed ${target} active at ` +
        `${switchPoll ? `${sec(switchPoll.at)} s (${sec(switchPoll.at - rStart)} s after the start)` : 'no poll'}.` +
        (buildPhases.length
          ? ` Build phases (GET /v1/spaces, seconds after the start): ${buildPhases
              .map((b) => `${b.phase} ${sec(b.fromMs - rStart)} (${int(b.embedded)}/${int(b.total)})`)
              .join(' → ')}.`
          : ''),
      `- CLI summary: \`${s ? JSON.stringify(s) : `none; stdout: ${run.stdout.slice(-300)}`}\``,
      '',
      windowTable(rows),
      '',
      phaseTable(phases),
      '',
      '**Targets**',
      '',
      `- 0 refused or failed requests: ${all.errors} ${yes(all.errors === 0)}` +
        (all.errors
          ? ` (${Object.entries(all.errorKinds)
              .map(([k, n]) => `${k}×${n}`)
              .join(', ')})`
          : '') +
        `.`,
      `- 0 searches without the vector leg: ${all.vectorDegraded} of ${int(all.searches)} ${yes(all.vectorDegraded === 0)}` +
        (all.otherDegraded ? ` (and ${all.otherDegraded} with another leg degraded)` : '') +
        `.`,
      `- Search p99 during the reindex ≤ ${TARGETS.p99Ratio}× before: ${fmtMs(during.search.p99)} vs ${fmtMs(baseline.search.p99)} ms = ` +
        `${ratio.toFixed(2)}× ${yes(ratio <= TARGETS.p99Ratio)}; sent→answer ${fmtMs(during.searchService.p99)} vs ` +
        `${fmtMs(baseline.searchService.p99)} ms = ${serviceRatio.toFixed(2)}×; after the switch ${afterRatio.toFixed(2)}×.`,
      `- Every acknowledged write found with a vector: ${int(verification.found)} of ${int(verification.acknowledged)} read back; ` +
        `of ${w.checked} sampled writes (${w.byPhase.before ?? 0} before, ${w.byPhase.reindex ?? 0} during, ` +
        `${w.byPhase.after ?? 0} after the reindex), ${w.checked - exactMisses} are found by the vector leg of the active ` +
        `space (in a plain search, or an exact one over the second around them) ${yes(allFound && exactMisses === 0)}; ` +
        `${w.passed} are their own text's top hit with a vector rank in a plain search (k 1) ${yes(allVectors)} ` +
        `(misses: ${causesOf(w)}). Control, the same check over ${c.checked} ingested memories: ${c.passed} pass ` +
        `(misses: ${causesOf(c)}).`,
      ...w.misses.slice(0, 8).map((m) => `  - ${missText(m)}`),
      `- Pending 0 in every namespace at the end: ${pendingOk ? `yes, ${sec(verification.pendingZeroAfterMs)} s after the load` : `**no** after ${PENDING_DEADLINE_MS / 1000} s (${JSON.stringify(verification.lastPending)})`}; ` +
        `active space ${verification.finalSpace} ${yes(pendingOk && switched)}.`,
      `- Reindex rate ≥ ${int(TARGETS.reindexPerSec)} memories/s: ${s ? `${int(s.perSecond)}/s (${int(s.computed)} in ${s.seconds.toFixed(1)} s: embedding, index build, activation)` : '–'} ` +
        `${yes((s?.perSecond ?? 0) >= TARGETS.reindexPerSec)}` +
        (embedPhaseRate === null ? '' : `; the embedding phase alone ${int(embedPhaseRate)}/s`) +
        `.`,
      `- Server peak RSS (VmHWM): ${mib(serverProc.hwm)} MiB (RSS at the end ${mib(serverProc.rss)} MiB); the reindex ` +
        `command's peak sampled RSS ${mib(peakBuildRss)} MiB.`,
      `- ${cpuLine}`,
      ...(failedPolls ? [`- ${failedPolls} stats polls failed.`] : []),
      '',
    ].join('\n');
    process.stdout.write(`${md}\n`);

    const record = {
      date,
      command,
      revision,
      machine,
      loadAverage: { start: loadAverageStart, end: loadAverageEnd },
      options: opts,
      dataDir,
      ingestMs,
      initialSpace: initial.space,
      reindex: { ...run, stderr: run.stderr.slice(-20_000) },
      switchAtMs: switchPoll?.at ?? null,
      buildPhases,
      phases,
      windows: rows,
      verification,
      server: { pid: server.pid, peakRss: serverProc.hwm, rss: serverProc.rss },
      polls: monitor.polls,
      writeStatuses: load.writeStatuses,
      requests: load.records.map((r) => [
        r.kind === 'search' ? 's' : 'w',
        Math.round(r.at),
        Math.round(r.ms * 10) / 10,
        Math.round(r.serviceMs * 10) / 10,
        r.status,
        r.vectorDegraded ? 1 : 0,
        r.error ?? null,
        r.degraded ?? null,
      ]),
      requestColumns: ['kind', 'dueMs', 'ms', 'serviceMs', 'status', 'vectorDegraded', 'error', 'degraded'],
      markdown: md,
    };
    if (opts.jsonOut) {
      mkdirSync(dirname(opts.jsonOut), { recursive: true });
      writeFileSync(opts.jsonOut, `${JSON.stringify(record, null, 1)}\n`);
      progress(`JSON record in ${opts.jsonOut}`);
    }
    if (anomaly || opts.keep || !temporary) {
      writeFileSync(join(work, 'server.log'), `${serverTail.join('\n')}\n`);
      writeFileSync(join(work, 'reindex.stderr.log'), run.stderr);
      writeFileSync(join(work, 'reindex.stdout.log'), run.stdout);
      if (worker) writeFileSync(join(work, 'worker.log'), workerLog.join(''));
      writeFileSync(join(work, 'record.json'), `${JSON.stringify(record)}\n`);
      if (temporary) leftovers.dirs.delete(work);
      progress(
        `${anomaly ? 'something misbehaved: ' : ''}work folder kept: ${work} (data, server.log, reindex.*.log, record.json)`,
      );
    }
    if (!allFound) process.exitCode = 1;
  } finally {
    if (server?.alive) await server.stop();
    if (worker && worker.exitCode === null) {
      const gone = new Promise((r) => worker!.once('exit', r));
      worker.kill('SIGTERM');
      await Promise.race([gone, expiry(STOP_DEADLINE_MS)]);
      worker.kill('SIGKILL');
    }
    if (worker) leftovers.children.delete(worker);
    await redis?.close();
    if (temporary && leftovers.dirs.has(work)) {
      rmSync(work, { recursive: true, force: true });
      leftovers.dirs.delete(work);
    }
  }
}

await main();
