// Soak benchmark: `cairn serve` (embedded mode) under mixed searches and writes over HTTP for minutes, to see
// whether the server holds its throughput, latency and memory over time or grows without bound. Every
// window (30 s by default) it records throughput, p50/p99 latency, errors by status, and the server's RSS
// (anonymous vs file-backed), open file descriptors, threads and V8 heap; at the end it checks that every
// acknowledged write can be read back, and prints a per-minute table and a JSON summary.
// Usage: pnpm build && node bench/dist/soak.js [--minutes 10] [--connections 16] [--search-share 0.8]
//          [--interval 30] [--seed-docs 10000] [--write-batch 1] [--seed 42] [--data-dir DIR]
//          [--node-arg=--trace-gc ...] [--no-heap-probe] [--json PATH]
// The load runs in this process, on the same machine as the server: the two share its cores, so
// throughput is the highest rate this machine holds with both, not the server's alone.

import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { type RedisServer, startRedisServer } from '@cairn/pipeline/testing';
import { gitRevision } from './git-revision.js';
import { summarize } from './percentiles.js';
import { seededRandom } from './seeded-random.js';
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

interface SoakOptions {
  /** Minutes of measured load. @defaultValue 10 */
  minutes: number;
  /** Concurrent keep-alive connections, each sending its next request as soon as the last one answered. @defaultValue 16 */
  connections: number;
  /** Share of requests that are searches; the rest are writes. 1 = read-only, 0 = writes only. @defaultValue 0.8 */
  searchShare: number;
  /** Seconds per sample window. @defaultValue 30 */
  interval: number;
  /** Memories written (in batches of 1,000) before the load, so searches find something from the start. @defaultValue 10_000 */
  seedDocs: number;
  /** Memories per write request. @defaultValue 1 */
  writeBatch: number;
  /** Distinct search bodies the connections cycle through. @defaultValue 2_000 */
  queries: number;
  seed: number;
  /** The data folder; null: a temporary one, removed at the end. It must be empty or new. @defaultValue null */
  dataDir: string | null;
  /** Extra options for the server's node (`--trace-gc`, `--heapsnapshot-signal=SIGUSR2`, `--inspect`). */
  nodeArgs: string[];
  /** Preload a probe that reports process.memoryUsage() of the server on stderr (/metrics has no heap figures). @defaultValue true */
  heapProbe: boolean;
  /** Where the JSON summary goes; null: bench/results/soak-<date>.json. @defaultValue null */
  json: string | null;
  /**
   * `distributed`: a private redis-server, one `cairn worker` (every stage) and `cairn serve` with
   * REDIS_URL; writes wait for `stored`. The worker's RSS and fds are reported beside the server's.
   * @defaultValue 'embedded'
   */
  mode: 'embedded' | 'distributed';
}

const DEFAULT_SOAK_OPTIONS: Readonly<SoakOptions> = Object.freeze({
  minutes: 10,
  connections: 16,
  searchShare: 0.8,
  interval: 30,
  seedDocs: 10_000,
  writeBatch: 1,
  queries: 2_000,
  seed: 42,
  dataDir: null,
  nodeArgs: [],
  heapProbe: true,
  json: null,
  mode: 'embedded',
});

/** A request that takes longer than this counts as an error ("timeout") and its socket is dropped. */
const REQUEST_TIMEOUT_MS = 30_000;
/** The heap probe's period (ms): a few samples per window, so each window ends with a fresh one. */
const PROBE_PERIOD_MS = 5_000;
/** The probe's stderr lines start with this, so they are told apart from the server's own output. */
const PROBE_MARK = '@@soak-mem ';
/** POST /v1/memories/get takes at most this many ids. */
const GET_IDS_MAX = 200;
/** A write batch and a seed batch are at most MAX_CAPTURE_BATCH memories. */
const WRITE_BATCH_MAX = 1_000;
/** How long the read-back waits for `embedded` and `indexed` to reach `stored`. */
const CONVERGE_DEADLINE_MS = 180_000;

const RESULTS_DIR = resolve(import.meta.dirname, '../results');

function parseOptions(argv: string[]): SoakOptions {
  const { values } = parseArgs({
    args: argv,
    options: {
      minutes: { type: 'string' },
      connections: { type: 'string' },
      'search-share': { type: 'string' },
      interval: { type: 'string' },
      'seed-docs': { type: 'string' },
      'write-batch': { type: 'string' },
      queries: { type: 'string' },
      seed: { type: 'string' },
      'data-dir': { type: 'string' },
      'node-arg': { type: 'string', multiple: true },
      'no-heap-probe': { type: 'boolean' },
      json: { type: 'string' },
      mode: { type: 'string' },
    },
  });
  const num = (key: string, raw: string, min: number, max = Number.POSITIVE_INFINITY, int = true) => {
    const v = Number(raw.replaceAll('_', ''));
    if (!Number.isFinite(v) || v < min || v > max || (int && !Number.isInteger(v)))
      throw new Error(
        `--${key} must be ${int ? 'an integer' : 'a number'} in [${min}, ${max}], got "${raw}"`,
      );
    return v;
  };
  const v = values;
  const d = DEFAULT_SOAK_OPTIONS;
  return {
    // Fractional minutes allowed: short validation runs (--minutes 0.5) use the same code.
    minutes: v.minutes === undefined ? d.minutes : num('minutes', v.minutes, 0.05, 24 * 60, false),
    connections: v.connections === undefined ? d.connections : num('connections', v.connections, 1, 1_024),
    searchShare:
      v['search-share'] === undefined ? d.searchShare : num('search-share', v['search-share'], 0, 1, false),
    interval: v.interval === undefined ? d.interval : num('interval', v.interval, 1, 3_600),
    seedDocs: v['seed-docs'] === undefined ? d.seedDocs : num('seed-docs', v['seed-docs'], 0),
    writeBatch:
      v['write-batch'] === undefined
        ? d.writeBatch
        : num('write-batch', v['write-batch'], 1, WRITE_BATCH_MAX),
    queries: v.queries === undefined ? d.queries : num('queries', v.queries, 1),
    seed: v.seed === undefined ? d.seed : num('seed', v.seed, 0),
    dataDir: v['data-dir'] ? resolve(v['data-dir']) : null,
    nodeArgs: v['node-arg'] ?? [],
    heapProbe: !v['no-heap-probe'],
    json: v.json ? resolve(v.json) : null,
    mode:
      v.mode === undefined || v.mode === 'embedded'
        ? 'embedded'
        : v.mode === 'distributed'
          ? 'distributed'
          : (() => {
              throw new Error(`--mode must be embedded or distributed, got "${v.mode}"`);
            })(),
  };
}

const now = () => performance.now();
let t0Global = now();
const progress = (msg: string) =>
  process.stderr.write(`[soak ${((now() - t0Global) / 1000).toFixed(1)}s] ${msg}\n`);

// ── The server child ────────────────────────────────────────────────────────────────────────────────────

/** What the probe reports: process.memoryUsage() of the server, in bytes, and when (server's Date.now()). */
interface MemoryUsageSample {
  at: number;
  rss: number;
  heapTotal: number;
  heapUsed: number;
  external: number;
  arrayBuffers: number;
}

/**
 * A CommonJS preload for the server's node (`--require`): it prints process.memoryUsage() every few
 * seconds on stderr. The timer is unref'd so it never holds the server open; the rest of the server is
 * untouched. Only the main thread's heap is seen (a worker thread has its own isolate).
 */
const PROBE_SOURCE = `'use strict';
const mark = ${JSON.stringify(PROBE_MARK)};
const report = () => {
  const m = process.memoryUsage();
  process.stderr.write(mark + JSON.stringify({ at: Date.now(), rss: m.rss, heapTotal: m.heapTotal,
    heapUsed: m.heapUsed, external: m.external, arrayBuffers: m.arrayBuffers }) + '\\n');
};
setInterval(report, ${PROBE_PERIOD_MS}).unref();
setImmediate(report);
`;

// ── /proc figures of the server ─────────────────────────────────────────────────────────────────────────

/** The server's footprint from /proc (Linux): null fields where it cannot be read. */
interface ProcSample {
  /** VmRSS, bytes: what the reviewer measured. */
  rss: number | null;
  /** RssAnon: heap, native allocations (SQLite page cache, usearch graphs) and thread stacks. */
  rssAnon: number | null;
  /** RssFile: file-backed pages resident, i.e. mmap'ed index files and the node binary. */
  rssFile: number | null;
  /** Open file descriptors (/proc/<pid>/fd entries): sockets, SQLite files, index files. */
  fds: number | null;
  /** Threads: the main thread, libuv's pool, V8's helpers and any worker threads. */
  threads: number | null;
  /** CPU seconds (user + system) of all its threads. */
  cpu: number | null;
}

const CLOCK_TICKS = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

function readProc(pid: number): ProcSample {
  const out: ProcSample = { rss: null, rssAnon: null, rssFile: null, fds: null, threads: null, cpu: null };
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kib = (name: string) => {
      const m = new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status);
      return m ? Number(m[1]) * 1024 : null;
    };
    out.rss = kib('VmRSS');
    out.rssAnon = kib('RssAnon');
    out.rssFile = kib('RssFile');
    const t = /^Threads:\s+(\d+)/m.exec(status);
    out.threads = t ? Number(t[1]) : null;
  } catch {
    // Not Linux, or the server is gone: the fields stay null.
  }
  try {
    out.fds = readdirSync(`/proc/${pid}/fd`).length;
  } catch {
    // As above.
  }
  try {
    // Fields after the parenthesised command name: utime is field 14, stime 15 (proc(5)).
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    out.cpu = (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
  } catch {
    // As above.
  }
  return out;
}

// ── HTTP ────────────────────────────────────────────────────────────────────────────────────────────────

interface HttpAnswer {
  status: number;
  body: string;
}

/**
 * One request on the shared keep-alive agent. node:http rather than fetch: it is lighter on the load
 * generator's CPU, which shares the two cores with the server.
 */
function request(
  agent: http.Agent,
  base: URL,
  method: string,
  path: string,
  body?: string,
): Promise<HttpAnswer> {
  return new Promise((resolveAnswer, reject) => {
    const headers: http.OutgoingHttpHeaders = {};
    if (body !== undefined) {
      headers['content-type'] = 'application/json';
      headers['content-length'] = Buffer.byteLength(body);
    }
    const req = http.request(
      { agent, host: base.hostname, port: base.port, method, path, headers, timeout: REQUEST_TIMEOUT_MS },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolveAnswer({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() }),
        );
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end(body);
  });
}

/** A transport failure's name in the error table: its code (ECONNRESET…) or "timeout". */
const errorName = (err: unknown) =>
  err instanceof Error ? ((err as NodeJS.ErrnoException).code ?? err.message.slice(0, 40)) : String(err);

// ── The workload ────────────────────────────────────────────────────────────────────────────────────────

type Memory = SyntheticCorpus['memories'][number];

/**
 * Search bodies and write texts, from the speed benchmark's synthetic corpus. The corpus holds the seed
 * memories and then a pool of texts the writes cycle through; every write gets its own id, so a text
 * written twice is two memories and every acknowledged id must be readable at the end.
 */
interface Workload {
  seed: Memory[];
  pool: Memory[];
  searches: string[];
}

function makeWorkload(opts: SoakOptions): Workload {
  const poolSize = 20_000;
  const corpus = generateCorpus({ mainDocs: opts.seedDocs + poolSize, seed: opts.seed });
  // Seed memories first in the corpus' time order; the rest is the pool. Queries come from the whole
  // corpus, so some match memories the soak has not written yet, as a live agent's queries would.
  const seed = corpus.memories.slice(0, opts.seedDocs);
  const pool = corpus.memories.slice(opts.seedDocs);
  const queries = makeQueries(
    corpus,
    opts.queries,
    opts.seed + 1,
    corpus.namespaces.map((n) => n.namespace),
  );
  return { seed, pool, searches: queries.map((q) => JSON.stringify(toRequest(q))) };
}

/** What a write sends: the pool text under a new id, without the corpus's session (a fresh stream). */
const writeMemory = (m: Memory, id: string) => {
  const { session: _session, id: _id, ...rest } = m;
  return { ...rest, id };
};

/** Counts and latencies of one window; the per-minute rows merge consecutive windows. */
interface WindowStats {
  searchMs: number[];
  writeMs: number[];
  /** Answers by HTTP status ("200", "201", "500"…) and transport failures by name ("ECONNRESET", "timeout"). */
  outcomes: Record<string, number>;
  searches: number;
  writes: number;
  /** Memories acknowledged by the writes of the window. */
  memoriesWritten: number;
}

const emptyWindow = (): WindowStats => ({
  searchMs: [],
  writeMs: [],
  outcomes: {},
  searches: 0,
  writes: 0,
  memoriesWritten: 0,
});

/** Acknowledged write ids by namespace: the read-back check at the end asks for exactly these. */
type Acked = Map<string, string[]>;

class Load {
  current = emptyWindow();
  readonly acked: Acked = new Map();
  private stopAt = 0;
  private nextWrite = 0;
  private readonly runId = Date.now().toString(36);
  private readonly rand: () => number;

  constructor(
    private readonly agent: http.Agent,
    private readonly base: URL,
    private readonly work: Workload,
    private readonly opts: SoakOptions,
  ) {
    this.rand = seededRandom(opts.seed + 2);
  }

  /** Runs `connections` request loops until `ms` from now; resolves once the last in-flight request ends. */
  async run(ms: number): Promise<void> {
    this.stopAt = now() + ms;
    await Promise.all(Array.from({ length: this.opts.connections }, (_, c) => this.loop(c)));
  }

  /** Swaps in a new window and returns the finished one. */
  cut(): WindowStats {
    const w = this.current;
    this.current = emptyWindow();
    return w;
  }

  private async loop(connection: number): Promise<void> {
    // Each connection starts at its own offset in the search bodies so they do not search in lockstep.
    let s = Math.floor((connection * this.work.searches.length) / this.opts.connections);
    while (now() < this.stopAt) {
      if (this.rand() < this.opts.searchShare) {
        const body = this.work.searches[s++ % this.work.searches.length]!;
        await this.send('search', '/v1/search', body, null);
      } else {
        const memories = Array.from({ length: this.opts.writeBatch }, () => {
          const n = this.nextWrite++;
          const m = this.work.pool[n % this.work.pool.length]!;
          return writeMemory(m, `soak-${this.runId}-${n}`);
        });
        const body = JSON.stringify({ memories });
        await this.send('write', '/v1/memories', body, memories);
      }
    }
  }

  private async send(
    kind: 'search' | 'write',
    path: string,
    body: string,
    memories: Array<{ id: string; namespace: string }> | null,
  ): Promise<void> {
    const t0 = now();
    let outcome: string;
    try {
      const res = await request(this.agent, this.base, 'POST', path, body);
      const ms = now() - t0;
      // The window is read at answer time: a request that straddles a cut counts in the later window.
      const w = this.current;
      outcome = String(res.status);
      if (kind === 'search') {
        w.searches++;
        if (res.status === 200) w.searchMs.push(ms);
      } else {
        w.writes++;
        if (res.status === 201 && memories) {
          w.writeMs.push(ms);
          this.acknowledge(res.body, memories, w);
        }
      }
    } catch (err) {
      outcome = errorName(err);
      if (kind === 'search') this.current.searches++;
      else this.current.writes++;
    }
    this.current.outcomes[outcome] = (this.current.outcomes[outcome] ?? 0) + 1;
  }

  /** Only the items the server says it stored count as acknowledged (a rejected item is not a loss). */
  private acknowledge(text: string, memories: Array<{ id: string; namespace: string }>, w: WindowStats) {
    const r = JSON.parse(text) as { items: Array<{ index: number; id: string; status: string }> };
    for (const item of r.items) {
      if (item.status !== 'stored' && item.status !== 'updated' && item.status !== 'unchanged') continue;
      const ns = memories[item.index]!.namespace;
      const ids = this.acked.get(ns) ?? [];
      if (ids.length === 0) this.acked.set(ns, ids);
      ids.push(item.id);
      w.memoriesWritten++;
    }
  }
}

// ── Seed and read-back ──────────────────────────────────────────────────────────────────────────────────

async function seedData(agent: http.Agent, base: URL, seed: readonly Memory[]): Promise<number> {
  const t0 = now();
  for (let i = 0; i < seed.length; i += WRITE_BATCH_MAX) {
    const batch = seed.slice(i, i + WRITE_BATCH_MAX);
    const res = await request(agent, base, 'POST', '/v1/memories', JSON.stringify({ memories: batch }));
    if (res.status !== 201)
      throw new Error(`seeding: POST /v1/memories → ${res.status} ${res.body.slice(0, 300)}`);
  }
  return now() - t0;
}

interface Verification {
  acknowledged: number;
  found: number;
  missing: number;
  /** A few missing ids, to look up by hand. */
  missingSample: string[];
  /** GET /v1/stats' stored count (all namespaces) against seed + acknowledged writes. */
  statsStored: number | null;
  expectedStored: number;
  /** When embedded and indexed reached stored after the load (ms into the read-back), or null: never. */
  converged: { ms: number } | null;
  /** The last stats read: stored, embedded and indexed over all namespaces. */
  derived: { stored: number; embedded: number; indexed: number };
}

/** Every acknowledged id, read back with POST /v1/memories/get (200 ids a call), then the stats count. */
async function verify(agent: http.Agent, base: URL, acked: Acked, seedDocs: number): Promise<Verification> {
  let acknowledged = 0;
  let found = 0;
  const missing: string[] = [];
  for (const [namespace, ids] of acked) {
    acknowledged += ids.length;
    for (let i = 0; i < ids.length; i += GET_IDS_MAX) {
      const chunk = ids.slice(i, i + GET_IDS_MAX);
      const res = await request(
        agent,
        base,
        'POST',
        '/v1/memories/get',
        JSON.stringify({ namespace, ids: chunk }),
      );
      if (res.status !== 200)
        throw new Error(`POST /v1/memories/get → ${res.status} ${res.body.slice(0, 300)}`);
      const r = JSON.parse(res.body) as { memories: Array<{ id: string }>; missing: string[] };
      found += r.memories.length;
      missing.push(...r.missing);
    }
  }
  let statsStored: number | null = null;
  // Derived state must converge too: every stored memory embedded and in the index. Polled, since the
  // last writes' vectors follow them (and in distributed mode travel through the queues).
  const started = Date.now();
  let converged: { ms: number } | null = null;
  let last = { stored: 0, embedded: 0, indexed: 0 };
  while (Date.now() - started < CONVERGE_DEADLINE_MS) {
    const stats = await request(agent, base, 'GET', '/v1/stats');
    if (stats.status === 200) {
      const s = JSON.parse(stats.body) as {
        namespaces: Record<string, { stored: number; embedded: number; indexed: number }>;
      };
      const all = Object.values(s.namespaces);
      last = {
        stored: all.reduce((a, n) => a + n.stored, 0),
        embedded: all.reduce((a, n) => a + n.embedded, 0),
        indexed: all.reduce((a, n) => a + n.indexed, 0),
      };
      statsStored = last.stored;
      if (last.embedded === last.stored && last.indexed === last.stored) {
        converged = { ms: Date.now() - started };
        break;
      }
    }
    await expiry(1_000);
  }
  return {
    converged,
    derived: last,
    acknowledged,
    found,
    missing: missing.length,
    missingSample: missing.slice(0, 10),
    statsStored,
    expectedStored: seedDocs + acknowledged,
  };
}

// ── Report ──────────────────────────────────────────────────────────────────────────────────────────────

/** One row of the table: a window or a minute, with the server's figures at its end. */
interface Row {
  /** Seconds since the load began, at the row's end. */
  at: number;
  /** The minute of the load (1-based) a per-minute row covers; absent on window rows. */
  minute?: number;
  seconds: number;
  requestsPerSec: number;
  searchesPerSec: number;
  writesPerSec: number;
  memoriesWritten: number;
  searchP50: number;
  searchP99: number;
  writeP50: number;
  writeP99: number;
  outcomes: Record<string, number>;
  /** Requests not answered 2xx, transport failures included. */
  errors: number;
  /** Average busy cores of the server over the row (1.0 = one core). */
  serverCores: number | null;
  proc: ProcSample;
  memory: MemoryUsageSample | null;
}

function makeRow(
  at: number,
  seconds: number,
  windows: readonly WindowStats[],
  proc: ProcSample,
  cpu: number | null,
  memory: MemoryUsageSample | null,
): Row {
  const outcomes: Record<string, number> = {};
  let searches = 0;
  let writes = 0;
  let memoriesWritten = 0;
  const searchMs: number[] = [];
  const writeMs: number[] = [];
  for (const w of windows) {
    searches += w.searches;
    writes += w.writes;
    memoriesWritten += w.memoriesWritten;
    for (const x of w.searchMs) searchMs.push(x);
    for (const x of w.writeMs) writeMs.push(x);
    for (const [k, n] of Object.entries(w.outcomes)) outcomes[k] = (outcomes[k] ?? 0) + n;
  }
  const s = summarize(searchMs);
  const wr = summarize(writeMs);
  const errors = Object.entries(outcomes)
    .filter(([k]) => !/^2\d\d$/.test(k))
    .reduce((a, [, n]) => a + n, 0);
  return {
    at,
    seconds,
    requestsPerSec: (searches + writes) / seconds,
    searchesPerSec: searches / seconds,
    writesPerSec: writes / seconds,
    memoriesWritten,
    searchP50: s.p50,
    searchP99: s.p99,
    writeP50: wr.p50,
    writeP99: wr.p99,
    outcomes,
    errors,
    serverCores: cpu === null ? null : cpu / seconds,
    proc,
    memory,
  };
}

const MIB = 2 ** 20;
const mib = (x: number | null | undefined) => (x === null || x === undefined ? '–' : (x / MIB).toFixed(0));
const int = (x: number) => Math.round(x).toLocaleString('en-US');
const ms = (x: number) =>
  Number.isNaN(x) ? '–' : x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2);
const outcomeText = (o: Record<string, number>) =>
  Object.entries(o)
    .filter(([k]) => !/^2\d\d$/.test(k))
    .map(([k, n]) => `${k}×${n}`)
    .join(' ') || '0';

function table(rows: readonly Row[], label: string): string {
  const header = [
    label,
    'req/s',
    'search/s',
    'write/s',
    'search p50/p99 ms',
    'write p50/p99 ms',
    'errors',
    'server cores',
    'RSS MiB',
    'anon/file MiB',
    'fds',
    'threads',
    'heapUsed MiB',
    'external MiB',
  ];
  const lines = [
    `| ${header.join(' | ')} |`,
    `|${header.map((_, i) => (i === 0 ? '---' : '---:')).join('|')}|`,
  ];
  for (const r of rows)
    lines.push(
      `| ${[
        r.minute ?? (r.at / 60).toFixed(1),
        int(r.requestsPerSec),
        int(r.searchesPerSec),
        int(r.writesPerSec),
        `${ms(r.searchP50)} / ${ms(r.searchP99)}`,
        `${ms(r.writeP50)} / ${ms(r.writeP99)}`,
        outcomeText(r.outcomes),
        r.serverCores === null ? '–' : r.serverCores.toFixed(2),
        mib(r.proc.rss),
        `${mib(r.proc.rssAnon)} / ${mib(r.proc.rssFile)}`,
        r.proc.fds ?? '–',
        r.proc.threads ?? '–',
        mib(r.memory?.heapUsed),
        mib(r.memory?.external),
      ].join(' | ')} |`,
    );
  return lines.join('\n');
}

/** Least-squares slope of y over x (per minute when x is in minutes); null with fewer than 2 points. */
function slope(points: ReadonlyArray<readonly [number, number]>): number | null {
  if (points.length < 2) return null;
  const n = points.length;
  const mx = points.reduce((a, [x]) => a + x, 0) / n;
  const my = points.reduce((a, [, y]) => a + y, 0) / n;
  let num = 0;
  let den = 0;
  for (const [x, y] of points) {
    num += (x - mx) * (y - my);
    den += (x - mx) ** 2;
  }
  return den === 0 ? null : num / den;
}

/**
 * Growth in MiB/minute of a figure over the first and the second half of the run: a leak keeps its slope,
 * a cache filling to its cap flattens in the second half.
 */
function growth(rows: readonly Row[], value: (r: Row) => number | null | undefined) {
  const pts = rows
    .map((r) => [r.at / 60, value(r)] as const)
    .filter((p): p is readonly [number, number] => p[1] !== null && p[1] !== undefined)
    .map(([x, y]) => [x, y / MIB] as const);
  const half = pts.length >> 1;
  return { whole: slope(pts), firstHalf: slope(pts.slice(0, half + 1)), secondHalf: slope(pts.slice(half)) };
}

// ── Main ────────────────────────────────────────────────────────────────────────────────────────────────

async function main(): Promise<void> {
  const opts = parseOptions(process.argv.slice(2));
  t0Global = now();
  const loadAtStart = os.loadavg()[0]!;
  const work = makeWorkload(opts);
  const dir = opts.dataDir ?? mkdtempSync(join(os.tmpdir(), 'cairn-soak-'));
  const temporary = opts.dataDir === null;
  if (temporary) leftovers.dirs.add(dir);
  else if (readdirSync(dir, { withFileTypes: true }).length > 0 && opts.seedDocs > 0)
    throw new Error(`${dir} is not empty: the soak seeds a fresh folder (or pass --seed-docs 0)`);
  const probeDir = mkdtempSync(join(os.tmpdir(), 'cairn-soak-probe-'));
  leftovers.dirs.add(probeDir);
  let probePath: string | null = null;
  if (opts.heapProbe) {
    probePath = join(probeDir, 'memory-probe.cjs');
    writeFileSync(probePath, PROBE_SOURCE);
  }
  let server: ServeProcess | null = null;
  // The probe's latest report; null until the first arrives (or without the probe).
  const probe: { latest: MemoryUsageSample | null } = { latest: null };
  // One socket per connection, kept alive: the soak measures the server, not TCP handshakes.
  const agent = new http.Agent({ keepAlive: true, maxSockets: opts.connections });
  let redis: RedisServer | null = null;
  let worker: ChildProcess | null = null;
  try {
    if (opts.mode === 'distributed') {
      redis = await startRedisServer();
      worker = spawn(process.execPath, [CLI_SCRIPT, 'worker', '--data-dir', dir], {
        stdio: ['ignore', 'ignore', 'pipe'],
        env: { ...process.env, REDIS_URL: redis.url, CAIRN_LOG_LEVEL: 'warn' },
      });
      leftovers.children.add(worker);
      progress(`distributed: redis ${redis.url}, worker pid ${worker.pid}`);
    }
    server = new ServeProcess({
      dataDir: dir,
      nodeArgs: [...opts.nodeArgs, ...(probePath ? ['--require', probePath] : [])],
      env: redis ? { REDIS_URL: redis.url } : {},
      onLine: (line) => {
        if (!line.startsWith(PROBE_MARK)) return false;
        probe.latest = JSON.parse(line.slice(PROBE_MARK.length)) as MemoryUsageSample;
        return true;
      },
      progress,
    });
    const url = await Promise.race([server.url, expiry(START_DEADLINE_MS)]);
    if (url === null)
      throw new Error(`the server did not listen within ${START_DEADLINE_MS} ms\n${server.tail()}`);
    const base = new URL(url);
    progress(`server pid ${server.pid} on ${url}, data ${dir}; seeding ${int(opts.seedDocs)} memories`);
    const seedMs = await seedData(agent, base, work.seed);
    progress(
      `  seeded in ${(seedMs / 1000).toFixed(1)} s; load: ${opts.connections} connections, ` +
        `${Math.round(opts.searchShare * 100)}% searches, ${opts.minutes} min, windows of ${opts.interval} s`,
    );
    // A probe report from after the seeding, so the start figures are not the empty server's.
    const seeded = Date.now();
    for (
      let waited = 0;
      opts.heapProbe && (probe.latest?.at ?? 0) < seeded && waited < 2 * PROBE_PERIOD_MS;
      waited += 100
    )
      await expiry(100);
    const start = readProc(server.pid);
    const startMemory = probe.latest;
    const workerStart = worker?.pid ? readProc(worker.pid) : null;
    const load = new Load(agent, base, work, opts);
    const windows: Array<{ row: Row; stats: WindowStats; cpu: number | null }> = [];
    const totalMs = opts.minutes * 60_000;
    const tLoad = now();
    let lastCpu = start.cpu;
    let lastAt = tLoad;
    // The sampler cuts a window every `interval` seconds while the load runs; the last window is cut
    // when the load ends (it may be shorter).
    const sample = (final: boolean) => {
      const at = now();
      // The last window is cut when the load has ended (in-flight requests included), not by the timer.
      if (!final && at - tLoad > totalMs - 1_000) return;
      const stats = load.cut();
      const proc = readProc(server!.pid);
      const cpu = proc.cpu === null || lastCpu === null ? null : proc.cpu - lastCpu;
      lastCpu = proc.cpu;
      const row = makeRow((at - tLoad) / 1000, (at - lastAt) / 1000, [stats], proc, cpu, probe.latest);
      lastAt = at;
      windows.push({ row, stats, cpu });
      progress(
        `  ${(row.at / 60).toFixed(1)} min: ${int(row.requestsPerSec)} req/s, search p50 ${ms(row.searchP50)} p99 ${ms(row.searchP99)} ms, ` +
          `errors ${outcomeText(row.outcomes)}, RSS ${mib(proc.rss)} MiB (anon ${mib(proc.rssAnon)}, file ${mib(proc.rssFile)}), ` +
          `fds ${proc.fds}, threads ${proc.threads}, heapUsed ${mib(row.memory?.heapUsed)} MiB, external ${mib(row.memory?.external)} MiB`,
      );
    };
    const timer = setInterval(() => sample(false), opts.interval * 1000);
    await load.run(totalMs);
    clearInterval(timer);
    sample(true);
    progress(
      `load done; reading back ${int([...load.acked.values()].reduce((a, l) => a + l.length, 0))} acknowledged writes`,
    );
    const verification = await verify(agent, base, load.acked, opts.seedDocs);
    const after = readProc(server.pid);
    const workerEnd = worker?.pid ? readProc(worker.pid) : null;

    // Minutes: consecutive windows whose end falls in the same minute of the load.
    const minutes: Row[] = [];
    const groups = new Map<number, typeof windows>();
    for (const w of windows) {
      // By the window's start: timers fire a little late, so an end time just past a minute mark
      // would move a window into the next minute.
      const m = Math.floor(Math.max(0, w.row.at - w.row.seconds) / 60) + 1;
      groups.set(m, [...(groups.get(m) ?? []), w]);
    }
    for (const [m, ws] of groups) {
      const last = ws.at(-1)!;
      const seconds = ws.reduce((a, w) => a + w.row.seconds, 0);
      const cpu = ws.some((w) => w.cpu === null) ? null : ws.reduce((a, w) => a + w.cpu!, 0);
      const row = makeRow(
        last.row.at,
        seconds,
        ws.map((w) => w.stats),
        last.row.proc,
        cpu,
        last.row.memory,
      );
      minutes.push({ ...row, minute: m });
    }
    const rows = windows.map((w) => w.row);
    const summary = {
      date: new Date().toISOString(),
      command: ['node', 'bench/dist/soak.js', ...process.argv.slice(2)].join(' '),
      revision: gitRevision(),
      machine: {
        cpu: os.cpus()[0]?.model.trim() ?? 'unknown',
        cores: os.availableParallelism(),
        memoryGiB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
        node: process.version,
      },
      loadAverage: { start: loadAtStart, end: os.loadavg()[0]! },
      options: { ...opts, dataDir: dir },
      serverPid: server.pid,
      seedMs,
      atLoadStart: { proc: start, memory: startMemory },
      afterReadBack: { proc: after, memory: probe.latest },
      worker:
        workerStart && workerEnd
          ? { pid: worker!.pid, atLoadStart: workerStart, afterReadBack: workerEnd }
          : null,
      totals: {
        requests: rows.reduce((a, r) => a + r.requestsPerSec * r.seconds, 0),
        memoriesWritten: rows.reduce((a, r) => a + r.memoriesWritten, 0),
        outcomes: minutes.reduce<Record<string, number>>((acc, r) => {
          for (const [k, n] of Object.entries(r.outcomes)) acc[k] = (acc[k] ?? 0) + n;
          return acc;
        }, {}),
      },
      // MiB per minute; see growth(): compare the halves to tell a leak from a cache filling up.
      growthMiBPerMinute: {
        rss: growth(rows, (r) => r.proc.rss),
        rssAnon: growth(rows, (r) => r.proc.rssAnon),
        rssFile: growth(rows, (r) => r.proc.rssFile),
        heapUsed: growth(rows, (r) => r.memory?.heapUsed),
        external: growth(rows, (r) => r.memory?.external),
      },
      verification,
      minutes,
      windows: rows,
    };
    const stop = await server.stop();
    const out = [
      `## Soak (${opts.mode}): ${opts.minutes} min, ${opts.connections} connections, ${Math.round(opts.searchShare * 100)}% searches / ${Math.round((1 - opts.searchShare) * 100)}% writes of ${opts.writeBatch}`,
      '',
      `Revision ${summary.revision}; ${summary.machine.cpu}, ${summary.machine.cores} cores, Node ${summary.machine.node}; ` +
        `${int(opts.seedDocs)} seed memories; server stopped: ${stop.graceful ? stop.how : `killed after ${STOP_DEADLINE_MS / 1000} s`}.`,
      `At load start: RSS ${mib(start.rss)} MiB, fds ${start.fds}, heapUsed ${mib(startMemory?.heapUsed)} MiB.`,
      '',
      table(minutes, 'minute'),
      '',
      `Read-back: ${int(verification.found)} of ${int(verification.acknowledged)} acknowledged writes found, ` +
        `${int(verification.missing)} missing${verification.missingSample.length ? ` (${verification.missingSample.join(', ')})` : ''}; ` +
        `stats: ${verification.statsStored === null ? '–' : int(verification.statsStored)} stored, ${int(verification.expectedStored)} expected.`,
      `Derived state: ${verification.converged ? `embedded and indexed reached stored ${(verification.converged.ms / 1000).toFixed(1)} s after the load` : `NOT converged within ${CONVERGE_DEADLINE_MS / 1000} s`} ` +
        `(stored ${int(verification.derived.stored)}, embedded ${int(verification.derived.embedded)}, indexed ${int(verification.derived.indexed)}).`,
      ...(workerStart && workerEnd
        ? [
            `Worker (${opts.mode}): RSS ${mib(workerStart.rss)} → ${mib(workerEnd.rss)} MiB, fds ${workerStart.fds} → ${workerEnd.fds}, threads ${workerStart.threads} → ${workerEnd.threads}.`,
          ]
        : []),
      `RSS growth (MiB/min): whole ${summary.growthMiBPerMinute.rss.whole?.toFixed(1)}, first half ${summary.growthMiBPerMinute.rss.firstHalf?.toFixed(1)}, ` +
        `second half ${summary.growthMiBPerMinute.rss.secondHalf?.toFixed(1)}; heapUsed whole ${summary.growthMiBPerMinute.heapUsed.whole?.toFixed(1)}.`,
      '',
    ].join('\n');
    process.stdout.write(`${out}\n`);
    const jsonPath =
      opts.json ?? join(RESULTS_DIR, `soak-${summary.date.slice(0, 19).replaceAll(':', '')}.json`);
    mkdirSync(dirname(jsonPath), { recursive: true });
    writeFileSync(jsonPath, `${JSON.stringify({ ...summary, stop, markdown: out }, null, 2)}\n`);
    process.stdout.write(
      `${JSON.stringify({ growthMiBPerMinute: summary.growthMiBPerMinute, verification, totals: summary.totals })}\n`,
    );
    progress(`done; JSON summary in ${jsonPath}`);
    if (
      verification.missing > 0 ||
      verification.converged === null ||
      (verification.statsStored !== null && verification.statsStored < verification.expectedStored)
    )
      process.exitCode = 1;
  } finally {
    agent.destroy();
    if (server?.alive) await server.stop();
    if (worker && worker.exitCode === null) {
      const gone = new Promise((r) => worker!.once('exit', r));
      worker.kill('SIGTERM');
      await Promise.race([gone, expiry(STOP_DEADLINE_MS)]);
      worker.kill('SIGKILL');
      leftovers.children.delete(worker);
    }
    await redis?.close();
    if (temporary) {
      rmSync(dir, { recursive: true, force: true });
      leftovers.dirs.delete(dir);
    }
    rmSync(probeDir, { recursive: true, force: true });
    leftovers.dirs.delete(probeDir);
  }
}

await main();
