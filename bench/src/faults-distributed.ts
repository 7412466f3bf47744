// Fault injection in the distributed pipeline, through the CLI as a user runs it: a private redis-server,
// two `cairn worker --stages capture,embed,index` processes, one `cairn ingest` of N memories that each
// carry a unique token, and one fault while the ingest runs (a worker SIGKILLed and restarted, a FLUSHALL
// of Redis, Redis stopped and restarted with its append-only file, or SIGKILLed without one so that it
// comes back empty). Afterwards `cairn stats --json` is polled until stored == embedded == indexed == N or
// the settle time runs out, then fresh `cairn search` processes look each sampled memory up by its token
// (vector leg only, and with the default weights) and by its own text (vector leg only: the probe that tells
// an indexed vector from an absent one). Every figure comes from a CLI process reading the data folder, so
// it includes whatever the index files and a cold start do.
// Usage: pnpm build && node bench/dist/faults-distributed.js [--cli apps/cli/dist/main.js]
//          [--scenario worker-kill|flushall|redis-restart-aof|redis-kill-no-aof] [--memories 20000] [--kill-after-ms 2000] [--flush-after-ms 4000]
//          [--rounds 1] [--sample 300] [--settle-s 180] [--poll-s 5] [--seed 42] [--log-dir DIR] [--out FILE]
// Prints the JSON summary on stdout and one line per round on stderr; exits 1 when a round never converged.
// Needs redis-server on PATH.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import {
  createWriteStream,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  type WriteStream,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { assertRedisReachable, redisConnection } from '@cairn/pipeline/distributed';
import { type RedisServer, startRedisServer } from '@cairn/pipeline/testing';
import { CLI_PATH, writeJsonl } from './cli-runner.js';
import { seededRandom } from './seeded-random.js';
import { generateCorpus, MAIN_NAMESPACE } from './synthetic-corpus.js';

/** How long Redis stays down in the restart scenarios (ms). */
const REDIS_DOWN_MS = 3_000;
const SCENARIOS = ['worker-kill', 'flushall', 'redis-restart-aof', 'redis-kill-no-aof'] as const;
type Scenario = (typeof SCENARIOS)[number];

interface FaultOptions {
  /** The CLI under test (`apps/cli/dist/main.js` of the build being measured). */
  cli: string;
  scenario: Scenario;
  /** Memories ingested, all in one namespace, each with its own token. @defaultValue 20_000 */
  memories: number;
  /** worker-kill: ms after the ingest starts when worker 1 is SIGKILLed. @defaultValue 2_000 */
  killAfterMs: number;
  /** flushall: ms after the ingest starts when Redis is flushed. @defaultValue 4_000 */
  flushAfterMs: number;
  /** Fresh deployments (Redis, data folder, workers) run one after the other. @defaultValue 1 */
  rounds: number;
  /** Memories looked up by their token after the settle phase. @defaultValue 300 */
  sample: number;
  /** Seconds after the ingest returns during which the counts may converge. @defaultValue 180 */
  settleS: number;
  /** Seconds between `cairn stats` polls. @defaultValue 5 */
  pollS: number;
  /** An ingest that has not returned after this many seconds is killed and reported as hung. @defaultValue 900 */
  ingestTimeoutS: number;
  seed: number;
  /** Keep the processes' logs here (one folder per round); null: a temporary folder, removed. */
  logDir: string | null;
  /** Also write the JSON summary to this file. */
  out: string | null;
}

const DEFAULT_FAULT_OPTIONS: Readonly<FaultOptions> = Object.freeze({
  cli: CLI_PATH,
  scenario: 'worker-kill',
  memories: 20_000,
  killAfterMs: 2_000,
  flushAfterMs: 4_000,
  rounds: 1,
  sample: 300,
  settleS: 180,
  pollS: 5,
  ingestTimeoutS: 900,
  seed: 42,
  logDir: null,
  out: null,
});

/** The defect report's deployment: two workers, every stage in each. */
const WORKERS = 2;
const STAGES = 'capture,embed,index';
/**
 * Hits asked of each token search: the router's default candidate pool, so "in the top k" means "among the
 * candidates the vector leg hands to fusion". Rank 1 is the headline.
 */
const SEARCH_K = 50;
/** Hits asked of each own-text search: only rank 1 is read. */
const OWN_TEXT_K = 10;
/**
 * The own-text search's vector pool, the wire maximum: the HNSW search then looks at over a thousand
 * neighbours, so a vector the index holds is not lost to the graph's approximation.
 */
const OWN_TEXT_POOL = 1_000;
const VECTOR_ONLY = Object.freeze({ lexical: 0, vector: 1 });
/** A worker has this long (ms) to log "worker started". */
const WORKER_READY_MS = 60_000;
/** SIGTERMed workers get the CLI's default --shutdown-timeout (10 s) plus this margin (ms) before SIGKILL. */
const WORKER_STOP_MS = 20_000;
/** Lines of a process's stderr kept to explain a failure. */
const TAIL_LINES = 20;
/** One `cairn stats` or `cairn search` process gets this long (ms). */
const CLI_CALL_MS = 180_000;

function parseOptions(argv: string[]): FaultOptions {
  const { values } = parseArgs({
    args: argv,
    options: {
      cli: { type: 'string' },
      scenario: { type: 'string' },
      memories: { type: 'string' },
      'kill-after-ms': { type: 'string' },
      'flush-after-ms': { type: 'string' },
      rounds: { type: 'string' },
      sample: { type: 'string' },
      'settle-s': { type: 'string' },
      'poll-s': { type: 'string' },
      'ingest-timeout-s': { type: 'string' },
      seed: { type: 'string' },
      'log-dir': { type: 'string' },
      out: { type: 'string' },
    },
  });
  const integer = (key: string, raw: string | undefined, fallback: number, min: number) => {
    if (raw === undefined) return fallback;
    const v = Number(raw.replaceAll('_', ''));
    if (!Number.isInteger(v) || v < min)
      throw new Error(`--${key} must be an integer ≥ ${min}, got "${raw}"`);
    return v;
  };
  const d = DEFAULT_FAULT_OPTIONS;
  const scenario = (values.scenario ?? d.scenario) as Scenario;
  if (!SCENARIOS.includes(scenario))
    throw new Error(`--scenario must be one of ${SCENARIOS.join(', ')}, got "${values.scenario}"`);
  const opts: FaultOptions = {
    cli: resolve(values.cli ?? d.cli),
    scenario,
    memories: integer('memories', values.memories, d.memories, 1),
    killAfterMs: integer('kill-after-ms', values['kill-after-ms'], d.killAfterMs, 0),
    flushAfterMs: integer('flush-after-ms', values['flush-after-ms'], d.flushAfterMs, 0),
    rounds: integer('rounds', values.rounds, d.rounds, 1),
    sample: integer('sample', values.sample, d.sample, 1),
    settleS: integer('settle-s', values['settle-s'], d.settleS, 0),
    pollS: integer('poll-s', values['poll-s'], d.pollS, 1),
    ingestTimeoutS: integer('ingest-timeout-s', values['ingest-timeout-s'], d.ingestTimeoutS, 1),
    seed: integer('seed', values.seed, d.seed, 0),
    logDir: values['log-dir'] ? resolve(values['log-dir']) : null,
    out: values.out ? resolve(values.out) : null,
  };
  if (!existsSync(opts.cli)) throw new Error(`no CLI at ${opts.cli}: build it first (pnpm build)`);
  if (opts.sample > opts.memories) opts.sample = opts.memories;
  return opts;
}

const now = () => performance.now();
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
/** A sleep that does not keep the process alive (a deadline in a race that usually ends first). */
const expiry = (ms: number) => new Promise<null>((r) => setTimeout(() => r(null), ms).unref());
const t0Global = now();
const progress = (msg: string) =>
  process.stderr.write(`[faults ${((now() - t0Global) / 1000).toFixed(1)}s] ${msg}\n`);
const secs = (ms: number) => Math.round(ms / 100) / 10;

// ── Clean-up on any exit ────────────────────────────────────────────────────────────────────────────────

/**
 * What must not outlive the benchmark, however it ends (error, Ctrl-C): the CLI children, the redis-server
 * (by pid from INFO: the test helper keeps its ChildProcess private) and the temporary folders. The 'exit'
 * handler is synchronous, so everything is SIGKILLed there; the normal path stops things gracefully first.
 */
const leftovers = { children: new Set<ChildProcess>(), pids: new Set<number>(), dirs: new Set<string>() };
process.on('exit', () => {
  for (const c of leftovers.children) c.kill('SIGKILL');
  for (const pid of leftovers.pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
  for (const d of leftovers.dirs) rmSync(d, { recursive: true, force: true });
});
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => process.exit(130));

// ── CLI child processes ─────────────────────────────────────────────────────────────────────────────────

interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/**
 * One `node <cli> …` process. stderr (where the CLI logs) goes to a file, so a round's warnings and errors
 * can be tallied afterwards; stdout is kept in memory when the caller reads results from it.
 */
class CliProcess {
  readonly exited: Promise<Exit>;
  readonly pid: number;
  readonly startedAt = now();
  stdout = '';
  exit: Exit | null = null;
  private readonly child: ChildProcess;
  private readonly log: WriteStream;
  private readonly lineWaiters: Array<{ test: (line: string) => boolean; resolve: () => void }> = [];
  private readonly tail: string[] = [];
  private carry = '';

  constructor(
    readonly label: string,
    cli: string,
    args: readonly string[],
    env: NodeJS.ProcessEnv,
    logPath: string,
    keepStdout: boolean,
  ) {
    this.log = createWriteStream(logPath, { flags: 'a' });
    this.child = spawn(process.execPath, [cli, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env });
    this.pid = this.child.pid ?? -1;
    leftovers.children.add(this.child);
    this.child.stdout!.on('data', (b: Buffer) => {
      if (keepStdout) this.stdout += b.toString();
      else this.log.write(b);
    });
    this.child.stderr!.on('data', (b: Buffer) => {
      this.log.write(b);
      const lines = (this.carry + b.toString()).split('\n');
      this.carry = lines.pop() ?? '';
      for (const line of lines) {
        for (let i = this.lineWaiters.length - 1; i >= 0; i--)
          if (this.lineWaiters[i]!.test(line)) this.lineWaiters.splice(i, 1)[0]!.resolve();
        this.tail.push(line);
      }
      this.tail.splice(0, Math.max(0, this.tail.length - TAIL_LINES));
    });
    this.child.on('exit', (code, signal) => {
      leftovers.children.delete(this.child);
      this.exit = { code, signal };
    });
    // 'close' rather than 'exit': stdout and stderr may still hold data after the process is gone.
    this.exited = new Promise((r) =>
      this.child.on('close', (code, signal) => this.log.end(() => r({ code, signal }))),
    );
  }

  get alive(): boolean {
    return this.exit === null;
  }

  /**
   * Resolves when stderr shows a line matching `test`; rejects if the process exits, reports a CLI error
   * or `ms` passes first. A CLI error alone is not an exit: a `cairn worker` whose start-up fails after
   * it connected to Redis prints its error and stays alive.
   */
  async waitForLine(test: (line: string) => boolean, ms: number, what: string): Promise<void> {
    const seen = new Promise<void>((resolve) => this.lineWaiters.push({ test, resolve }));
    const failed = new Promise<void>((resolve) =>
      this.lineWaiters.push({ test: (l) => l.startsWith('cairn: error'), resolve }),
    );
    const r = await Promise.race([
      seen.then(() => 'ok' as const),
      failed.then(() => 'error' as const),
      this.exited,
      expiry(ms),
    ]);
    if (r === 'ok') return;
    const why =
      r === 'error'
        ? 'reported an error'
        : r
          ? `exited (${describeExit(r)})`
          : `did not log ${what} within ${ms} ms`;
    throw new Error(
      `${this.label} ${why}:\n${this.tail.map((l) => `  | ${l}`).join('\n') || '  (no output)'}`,
    );
  }

  kill(signal: NodeJS.Signals = 'SIGKILL'): void {
    if (this.alive) this.child.kill(signal);
  }

  /** SIGTERM (the worker's graceful stop), then SIGKILL when it overruns `ms`. */
  async stop(ms: number): Promise<Exit> {
    if (!this.alive) return this.exited;
    this.kill('SIGTERM');
    const r = await Promise.race([this.exited, expiry(ms)]);
    if (r) return r;
    this.kill('SIGKILL');
    return this.exited;
  }
}

const describeExit = (e: Exit) => (e.signal ? `signal ${e.signal}` : `code ${e.code}`);

/** A one-shot CLI command (stats, search) with a deadline: its stdout, or its failure. */
async function runCli(
  label: string,
  cli: string,
  args: readonly string[],
  env: NodeJS.ProcessEnv,
  logPath: string,
): Promise<{ stdout: string; exit: Exit; ms: number }> {
  const p = new CliProcess(label, cli, args, env, logPath, true);
  const r = await Promise.race([p.exited, expiry(CLI_CALL_MS)]);
  if (!r) {
    p.kill('SIGKILL');
    await p.exited;
    throw new Error(`${label} did not finish within ${CLI_CALL_MS} ms`);
  }
  return { stdout: p.stdout, exit: r, ms: now() - p.startedAt };
}

// ── The corpus ──────────────────────────────────────────────────────────────────────────────────────────

/**
 * The speed benchmark's generated agent memories (Zipfian words, shared session topics and identifiers, so
 * neighbours overlap as real ones do), each with one token found nowhere else. The tokens are letters only
 * and scrambled from the index, so two tokens share few character n-grams. Even so, the built-in hashing
 * embedder's vector for one 7-letter word is a weak signal among 20,000 memories of ~30 words each hashed
 * into 768 dimensions (in a clean embedded run, 31 of 300 tokens come back at rank 1 vector-only, 26 to 126
 * in distributed runs whose index held every vector, while the memory's own text does for 299 to 300): the
 * own-text probe is the one that tells whether a vector is indexed.
 */
function makeCorpus(n: number, seed: number) {
  const corpus = generateCorpus({ mainDocs: n, seed });
  const rand = seededRandom(seed + 7);
  // A token must be unique to its memory, so none may be a word the generator already used.
  const vocabulary = new Set(corpus.memories.flatMap((m) => m.text.toLowerCase().split(/[^a-z0-9_]+/)));
  const memories = corpus.memories
    .filter((m) => m.namespace === MAIN_NAMESPACE)
    .map((m, i) => {
      const token = tokenOf(i);
      if (vocabulary.has(token)) throw new Error(`corpus: token ${token} is also a corpus word`);
      const words = m.text.split(' ');
      // Never before the first word: that is the "User:" / "Ran <identifier>:" lead of the generator.
      const at = 1 + Math.floor(rand() * words.length);
      words.splice(at, 0, token);
      return { ...m, text: words.join(' ') };
    });
  if (memories.length !== n) throw new Error(`corpus: ${memories.length} memories, expected ${n}`);
  return memories;
}

/**
 * Seven letters scrambled from the index: the multiplier is coprime to 26, so i ↦ token is one-to-one
 * below 26^7. No fixed prefix or suffix: the hashing embedder's edge n-grams (`<zq`, `x>`) would be shared
 * by every token and let short neighbours outrank a long memory on its own token in the vector leg.
 */
const TOKEN_LETTERS = 7;
const TOKEN_SPACE = 26 ** TOKEN_LETTERS;
function tokenOf(i: number): string {
  let x = (i * 2_654_435_761 + 97_531) % TOKEN_SPACE;
  let s = '';
  for (let d = 0; d < TOKEN_LETTERS; d++) {
    s += String.fromCharCode(97 + (x % 26));
    x = Math.floor(x / 26);
  }
  return s;
}

/** Evenly spread over the ingest order, so early, killed-batch and late memories are all looked up. */
function sampleIndexes(n: number, count: number): number[] {
  return Array.from({ length: count }, (_, j) => Math.floor(((j + 0.5) * n) / count));
}

// ── One round ───────────────────────────────────────────────────────────────────────────────────────────

interface NamespaceCounts {
  stored: number;
  embedded: number;
  indexed: number;
  pending: number;
  failed: number;
  index: string;
}

interface Poll {
  /** Seconds after the ingest returned, when the stats process started. */
  t: number;
  stored: number | null;
  embedded: number | null;
  indexed: number | null;
  pending: number | null;
  index: string | null;
  /** Jobs waiting or delayed, jobs active, jobs failed for good, over every queue. */
  queued: number | null;
  active: number | null;
  failedJobs: number | null;
  error?: string;
}

interface SearchFigures {
  queries: number;
  rank1: number;
  /** Found anywhere in the hits asked for. */
  inTopK: number;
  /** Answered with no hit at all. */
  noHits: number;
  /** Answered with a leg missing (the response's `degraded` list not empty). */
  degraded: number;
  errors: number;
  firstError?: string;
  /** Sampled memory ids not at rank 1 (the first 20). */
  missed: string[];
  ms: number;
}

interface LogLine {
  level: string;
  msg: string;
  count: number;
  files: string[];
  example: string;
}

interface RoundReport {
  round: number;
  scenario: Scenario;
  ingest: {
    exit: string;
    hung: boolean;
    seconds: number;
    summary: Record<string, unknown> | null;
    stderrTail: string[];
  };
  fault: {
    kind: Scenario;
    /** ms after the ingest started when the fault was injected; null when the ingest ended first. */
    atMs: number | null;
    duringIngest: boolean;
    detail: string;
  };
  workers: { unexpectedExits: string[]; restartedReadyMs: number | null };
  polls: Poll[];
  end: Poll | null;
  converged: boolean;
  /** Seconds after the ingest returned at which stored == embedded == indexed == N was first seen. */
  convergedAfterS: number | null;
  search: {
    sample: number;
    /** The token, vector leg only: the defect report's probe. */
    vectorOnly: SearchFigures;
    /** The token, default weights: what a user's search returns. */
    defaults: SearchFigures;
    /**
     * The memory's own text, vector leg only, with the widest pool: its stored vector is then at rank 1
     * unless absent from the index (a single token is too weak a vector signal at this size; see
     * makeCorpus). The query vector is idf-weighted, so a few memories lose to a neighbour even in a
     * clean index: 1 of the 300 default samples in an embedded run.
     */
    ownTextVectorOnly: SearchFigures;
  };
  logs: { dir: string; warnOrWorse: LogLine[] };
}

function countsOf(stdout: string): { ns: NamespaceCounts | null; queues: Poll['queued'][] } {
  const s = JSON.parse(stdout) as {
    namespaces: Record<string, NamespaceCounts>;
    queues?: Record<string, { waiting: number; active: number; delayed: number; failed: number }>;
  };
  const q = Object.values(s.queues ?? {});
  return {
    ns: s.namespaces[MAIN_NAMESPACE] ?? null,
    queues: [
      q.reduce((a, c) => a + c.waiting + c.delayed, 0),
      q.reduce((a, c) => a + c.active, 0),
      q.reduce((a, c) => a + c.failed, 0),
    ],
  };
}

async function poll(
  cli: string,
  dataDir: string,
  env: NodeJS.ProcessEnv,
  logDir: string,
  t: number,
): Promise<Poll> {
  const empty = { stored: null, embedded: null, indexed: null, pending: null, index: null };
  try {
    const r = await runCli(
      'stats',
      cli,
      ['stats', '--json', '--data-dir', dataDir],
      env,
      join(logDir, 'stats.log'),
    );
    if (r.exit.code !== 0)
      throw new Error(`stats exited with ${describeExit(r.exit)}: ${r.stdout.slice(0, 300)}`);
    const { ns, queues } = countsOf(r.stdout);
    const [queued, active, failedJobs] = queues;
    return {
      t,
      ...(ns
        ? {
            stored: ns.stored,
            embedded: ns.embedded,
            indexed: ns.indexed,
            pending: ns.pending,
            index: ns.index,
          }
        : empty),
      queued: queued ?? null,
      active: active ?? null,
      failedJobs: failedJobs ?? null,
    };
  } catch (err) {
    return { t, ...empty, queued: null, active: null, failedJobs: null, error: (err as Error).message };
  }
}

async function searchAll(
  label: string,
  cli: string,
  dataDir: string,
  env: NodeJS.ProcessEnv,
  workDir: string,
  logDir: string,
  lookups: ReadonlyArray<{ id: string; query: string }>,
  k: number,
  weights: { lexical: number; vector: number } | null,
  candidatePool?: number,
): Promise<SearchFigures> {
  const file = join(workDir, `queries-${label}.jsonl`);
  writeJsonl(
    file,
    lookups.map((l) => ({
      id: l.id,
      namespace: MAIN_NAMESPACE,
      query: l.query,
      k,
      ...(weights ? { weights } : {}),
      ...(candidatePool ? { candidatePool } : {}),
    })),
  );
  const fig: SearchFigures = {
    queries: lookups.length,
    rank1: 0,
    inTopK: 0,
    noHits: 0,
    degraded: 0,
    errors: 0,
    missed: [],
    ms: 0,
  };
  const r = await runCli(
    `search ${label}`,
    cli,
    ['search', '--queries', file, '--json', '--data-dir', dataDir],
    env,
    join(logDir, `search-${label}.log`),
  );
  fig.ms = Math.round(r.ms);
  const seen = new Set<string>();
  for (const line of r.stdout.split('\n')) {
    if (!line.trim()) continue;
    const res = JSON.parse(line) as {
      id: string;
      hits?: Array<{ id: string }>;
      degraded?: unknown;
      error?: { message: string };
    };
    const id = String(res.id);
    seen.add(id);
    if (res.error) {
      fig.errors++;
      fig.firstError ??= res.error.message;
      continue;
    }
    const hits = (res.hits ?? []).map((h) => h.id);
    if (Array.isArray(res.degraded) ? res.degraded.length > 0 : res.degraded) fig.degraded++;
    if (hits.length === 0) fig.noHits++;
    if (hits.includes(id)) fig.inTopK++;
    if (hits[0] === id) fig.rank1++;
    else if (fig.missed.length < 20) fig.missed.push(id);
  }
  // A process that died halfway answers fewer lines than it was asked.
  const unanswered = lookups.filter((l) => !seen.has(l.id)).length;
  if (unanswered > 0) {
    fig.errors += unanswered;
    fig.firstError ??= `${unanswered} queries unanswered (search exited with ${describeExit(r.exit)})`;
  }
  return fig;
}

/** Warnings and worse from the round's logs (pino JSON lines, plus plain lines that look like failures). */
function tallyLogs(dir: string): LogLine[] {
  const levels: Record<number, string> = { 40: 'warn', 50: 'error', 60: 'fatal' };
  const tally = new Map<string, LogLine>();
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.log'))) {
    for (const line of readFileSync(join(dir, file), 'utf8').split('\n')) {
      if (!line.trim()) continue;
      let level: string | null = null;
      let msg = '';
      try {
        const j = JSON.parse(line) as { level?: number; msg?: string };
        if (typeof j.level === 'number' && j.level >= 40) {
          level = levels[j.level] ?? String(j.level);
          msg = j.msg ?? '';
        }
      } catch {
        // The progress bar and plain messages; only failures count.
        if (/error|warn|fail|exception|^\s+at /i.test(line)) {
          level = 'text';
          msg = line.trim().replace(/\d+/g, 'N').slice(0, 160);
        }
      }
      if (level === null) continue;
      const key = `${level}\u0000${msg}`;
      const e = tally.get(key) ?? { level, msg, count: 0, files: [], example: line.slice(0, 600) };
      e.count++;
      if (!e.files.includes(file)) e.files.push(file);
      tally.set(key, e);
    }
  }
  return [...tally.values()].sort((a, b) => b.count - a.count);
}

async function runRound(round: number, opts: FaultOptions, memories: ReturnType<typeof makeCorpus>) {
  const work = mkdtempSync(join(os.tmpdir(), 'cairn-faults-'));
  leftovers.dirs.add(work);
  const dataDir = join(work, 'data');
  mkdirSync(dataDir);
  const logDir = opts.logDir ? join(opts.logDir, `${opts.scenario}-round${round}`) : join(work, 'logs');
  mkdirSync(logDir, { recursive: true });
  const file = join(work, 'memories.jsonl');
  writeJsonl(file, memories);

  let redis: RedisServer | null = null;
  let admin: ReturnType<typeof redisConnection> | null = null;
  let redisPid: number | null = null;
  const workers: CliProcess[] = [];
  let ingest: CliProcess | null = null;
  let faultTimer: NodeJS.Timeout | null = null;
  try {
    // With an append-only file, as the compose file runs it; without, Redis comes back empty.
    redis = await startRedisServer({ appendonly: opts.scenario === 'redis-restart-aof' });
    leftovers.dirs.add(redis.dir);
    admin = redisConnection(redis.url, 'producer');
    await assertRedisReachable(admin, redis.url);
    const info = await admin.info('server');
    redisPid = Number(/^process_id:(\d+)/m.exec(info)?.[1] ?? Number.NaN);
    if (Number.isInteger(redisPid)) leftovers.pids.add(redisPid);
    // The environment a user's shell gives: REDIS_URL, the CLI's own defaults for everything else.
    const env: NodeJS.ProcessEnv = { ...process.env, REDIS_URL: redis.url };
    for (const name of Object.keys(env)) if (name.startsWith('CAIRN_')) delete env[name];

    const startWorker = (label: string) =>
      new CliProcess(
        label,
        opts.cli,
        ['worker', '--stages', STAGES, '--data-dir', dataDir],
        env,
        join(logDir, `${label}.log`),
        false,
      );
    const ready = (w: CliProcess) =>
      w.waitForLine((l) => l.includes('"worker started"'), WORKER_READY_MS, '"worker started"');
    // Started together, so the index shard leases are raced for rather than all taken by the first one.
    for (let i = 1; i <= WORKERS; i++) workers.push(startWorker(`worker-${i}`));
    await Promise.all(workers.map(ready));
    progress(`round ${round}: redis ${redis.url}, ${WORKERS} workers ready; ingesting ${memories.length}`);

    ingest = new CliProcess(
      'ingest',
      opts.cli,
      ['ingest', file, '--json', '--data-dir', dataDir],
      env,
      join(logDir, 'ingest.log'),
      true,
    );
    const ingestStart = ingest.startedAt;
    const fault: RoundReport['fault'] = {
      kind: opts.scenario,
      atMs: null,
      duringIngest: false,
      detail: 'not injected',
    };
    let restartedReadyMs: number | null = null;
    const faultAfter = opts.scenario === 'worker-kill' ? opts.killAfterMs : opts.flushAfterMs;
    const runningIngest = ingest;
    const conn = admin;
    const faultDone = new Promise<void>((done) => {
      faultTimer = setTimeout(async () => {
        try {
          fault.atMs = Math.round(now() - ingestStart);
          fault.duringIngest = runningIngest.alive;
          if (opts.scenario === 'worker-kill') {
            const victim = workers[0]!;
            victim.kill('SIGKILL');
            const how = await victim.exited;
            // Right away, as a supervisor would: the jobs it held come back once their locks lapse.
            const again = startWorker('worker-1-restarted');
            workers.push(again);
            fault.detail = `SIGKILLed ${victim.label} (pid ${victim.pid}, ${describeExit(how)}) and started pid ${again.pid}`;
            const t = now();
            await ready(again);
            restartedReadyMs = Math.round(now() - t);
          } else if (opts.scenario === 'flushall') {
            await conn.flushall();
            fault.detail = `FLUSHALL on ${redis?.url}`;
          } else {
            // A crash of Redis itself, then a supervisor starting it again on the same port and folder.
            const signal = opts.scenario === 'redis-restart-aof' ? 'SIGTERM' : 'SIGKILL';
            await redis!.stop(signal);
            await sleep(REDIS_DOWN_MS);
            await redis!.start();
            fault.detail = `redis ${signal === 'SIGTERM' ? 'stopped (AOF kept)' : 'SIGKILLed (no AOF: empty)'} for ${REDIS_DOWN_MS} ms, then started again`;
          }
          progress(
            `round ${round}: ${fault.detail} at ${fault.atMs} ms (ingest running: ${fault.duringIngest})`,
          );
        } catch (err) {
          fault.detail = `fault injection failed: ${(err as Error).message}`;
          progress(`round ${round}: ${fault.detail}`);
        }
        done();
      }, faultAfter);
    });

    const ended = await Promise.race([ingest.exited, expiry(opts.ingestTimeoutS * 1000)]);
    const hung = ended === null;
    if (hung) {
      progress(`round ${round}: the ingest did not return within ${opts.ingestTimeoutS} s; killing it`);
      ingest.kill('SIGKILL');
    }
    let ingestExit = await ingest.exited;
    await faultDone;
    if (ingestExit.code !== 0 && opts.scenario.startsWith('redis-') && !hung) {
      // A producer that lost Redis fails with BACKEND_UNAVAILABLE saying a retry with the same ids is
      // safe; a user runs the same command again.
      progress(`round ${round}: ingest ${describeExit(ingestExit)}; running it again, as its error advises`);
      ingest = new CliProcess(
        'ingest-again',
        opts.cli,
        ['ingest', file, '--json', '--data-dir', dataDir],
        env,
        join(logDir, 'ingest-again.log'),
        true,
      );
      ingestExit = await ingest.exited;
    }
    const ingestEnd = now();
    let summary: Record<string, unknown> | null = null;
    try {
      const line = ingest.stdout.trim().split('\n').pop();
      summary = line ? (JSON.parse(line) as Record<string, unknown>) : null;
    } catch {
      summary = null;
    }
    const stderrTail = readFileSync(join(logDir, `${ingest.label}.log`), 'utf8')
      .split('\n')
      .filter((l) => l.trim() && !l.startsWith('ingest ['))
      .slice(-5);
    progress(
      `round ${round}: ingest ${describeExit(ingestExit)} after ${secs(ingestEnd - ingestStart)} s` +
        `${summary ? `: stored ${summary.stored}, queued ${summary.queued}, rejected ${summary.rejected}` : ''}` +
        `${stderrTail.length ? ` | ${stderrTail.at(-1)}` : ''}`,
    );

    // Settle: every poll is a fresh `cairn stats` process, as a user checking on the deployment would run.
    const polls: Poll[] = [];
    let convergedAfterS: number | null = null;
    for (;;) {
      const started = now();
      const t = secs(started - ingestEnd);
      const p = await poll(opts.cli, dataDir, env, logDir, t);
      polls.push(p);
      progress(
        `round ${round}: +${t} s stored ${p.stored} embedded ${p.embedded} indexed ${p.indexed} (${p.index}) ` +
          `queued ${p.queued} active ${p.active} failed jobs ${p.failedJobs}${p.error ? ` error: ${p.error}` : ''}`,
      );
      const n = memories.length;
      if (p.stored === n && p.embedded === n && p.indexed === n) {
        convergedAfterS = t;
        break;
      }
      const next = started + opts.pollS * 1000;
      if (next - ingestEnd > opts.settleS * 1000) break;
      await sleep(Math.max(0, next - now()));
    }

    // Lookups by token: fresh search processes, the workers still running as they would be.
    const sampled = sampleIndexes(memories.length, opts.sample);
    const byToken = sampled.map((i) => ({ id: memories[i]!.id, query: tokenOf(i) }));
    const byText = sampled.map((i) => ({ id: memories[i]!.id, query: memories[i]!.text }));
    const search = (
      label: string,
      lookups: typeof byToken,
      k: number,
      weights: typeof VECTOR_ONLY | null,
      pool?: number,
    ) => searchAll(label, opts.cli, dataDir, env, work, logDir, lookups, k, weights, pool);
    const vectorOnly = await search('vector-only', byToken, SEARCH_K, VECTOR_ONLY);
    const defaults = await search('defaults', byToken, SEARCH_K, null);
    const ownTextVectorOnly = await search(
      'own-text-vector-only',
      byText,
      OWN_TEXT_K,
      VECTOR_ONLY,
      OWN_TEXT_POOL,
    );

    const unexpectedExits = workers
      .filter((w) => !w.alive && !(w === workers[0] && opts.scenario === 'worker-kill'))
      .map((w) => `${w.label}: ${describeExit(w.exit!)}`);
    await Promise.all(workers.map((w) => w.stop(WORKER_STOP_MS)));
    const report: RoundReport = {
      round,
      scenario: opts.scenario,
      ingest: {
        exit: describeExit(ingestExit),
        hung,
        seconds: secs(ingestEnd - ingestStart),
        summary: summary
          ? Object.fromEntries(
              ['read', 'stored', 'updated', 'unchanged', 'rejected', 'queued', 'mode', 'errors', 'error'].map(
                (k) => [k, summary[k]],
              ),
            )
          : null,
        stderrTail,
      },
      fault,
      workers: { unexpectedExits, restartedReadyMs },
      polls,
      end: polls.at(-1) ?? null,
      converged: convergedAfterS !== null,
      convergedAfterS,
      search: { sample: sampled.length, vectorOnly, defaults, ownTextVectorOnly },
      logs: {
        dir: opts.logDir ? logDir : '(removed; pass --log-dir to keep)',
        warnOrWorse: tallyLogs(logDir),
      },
    };
    return report;
  } finally {
    if (faultTimer) clearTimeout(faultTimer);
    ingest?.kill('SIGKILL');
    await Promise.all(workers.map((w) => w.stop(WORKER_STOP_MS)));
    admin?.disconnect();
    if (redis) {
      await redis.close();
      leftovers.dirs.delete(redis.dir);
    }
    if (redisPid !== null) leftovers.pids.delete(redisPid);
    rmSync(work, { recursive: true, force: true });
    leftovers.dirs.delete(work);
  }
}

// ── Report ──────────────────────────────────────────────────────────────────────────────────────────────

function revisionOf(cli: string): string {
  try {
    const git = (args: string[]) =>
      execFileSync('git', args, {
        cwd: dirname(cli),
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'ignore'],
      }).trim();
    const head = git(['rev-parse', '--short', 'HEAD']);
    const dirty = git(['status', '--porcelain', '--', 'packages', 'apps']);
    return dirty ? `${head} plus uncommitted changes in ${dirty.split('\n').length} package file(s)` : head;
  } catch {
    return 'unknown (not a git checkout)';
  }
}

function redisVersion(): string {
  try {
    return (
      /v=(\S+)/.exec(execFileSync('redis-server', ['--version'], { encoding: 'utf8' }))?.[1] ?? 'unknown'
    );
  } catch {
    return 'unknown';
  }
}

function humanLine(r: RoundReport, n: number): string {
  const e = r.end;
  const s = r.search;
  const errors = s.vectorOnly.errors + s.defaults.errors + s.ownTextVectorOnly.errors;
  return (
    `${r.scenario} round ${r.round}: ingest ${r.ingest.exit} in ${r.ingest.seconds} s, fault at ${r.fault.atMs ?? '–'} ms` +
    `${r.fault.duringIngest ? '' : ' (after the ingest ended)'}; ` +
    `end stored ${e?.stored ?? '?'} embedded ${e?.embedded ?? '?'} indexed ${e?.indexed ?? '?'} of ${n}, ` +
    `${r.converged ? `converged ${r.convergedAfterS} s after the ingest` : `NOT converged within ${e?.t ?? '?'} s`}; ` +
    `token at rank 1: vector-only ${s.vectorOnly.rank1}/${s.sample} (in the top ${SEARCH_K}: ${s.vectorOnly.inTopK}), ` +
    `defaults ${s.defaults.rank1}/${s.sample}; own text vector-only at rank 1: ${s.ownTextVectorOnly.rank1}/${s.sample}` +
    `${errors > 0 ? ` (${errors} search errors)` : ''}`
  );
}

// ── Main ────────────────────────────────────────────────────────────────────────────────────────────────

async function main(): Promise<void> {
  const opts = parseOptions(process.argv.slice(2));
  const memories = makeCorpus(opts.memories, opts.seed);
  const revision = revisionOf(opts.cli);
  progress(
    `${opts.scenario}: ${opts.rounds} round(s) of ${opts.memories} memories against ${opts.cli} (${revision})`,
  );
  const rounds: RoundReport[] = [];
  // A round that fails (a worker that never starts, say) is reported, and the next one still runs.
  const failedRounds: Array<{ round: number; error: string }> = [];
  for (let round = 1; round <= opts.rounds; round++) {
    try {
      rounds.push(await runRound(round, opts, memories));
    } catch (err) {
      const error = (err as Error).message;
      failedRounds.push({ round, error });
      progress(`round ${round} failed: ${error}`);
    }
  }
  const summary = {
    date: new Date().toISOString(),
    command: ['node', 'bench/dist/faults-distributed.js', ...process.argv.slice(2)].join(' '),
    cli: opts.cli,
    revision,
    machine: {
      cpu: os.cpus()[0]?.model.trim() ?? 'unknown',
      cores: os.availableParallelism(),
      memoryGiB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
      node: process.version,
      redis: redisVersion(),
      loadAverage: os.loadavg()[0],
    },
    options: opts,
    deployment: {
      workers: WORKERS,
      stages: STAGES,
      namespace: MAIN_NAMESPACE,
      searchK: SEARCH_K,
      ownTextK: OWN_TEXT_K,
      ownTextCandidatePool: OWN_TEXT_POOL,
    },
    converged: failedRounds.length === 0 && rounds.every((r) => r.converged),
    rounds,
    failedRounds,
  };
  const json = JSON.stringify(summary, null, 2);
  process.stdout.write(`${json}\n`);
  if (opts.out) writeFileSync(opts.out, `${json}\n`);
  for (const r of rounds) process.stderr.write(`${humanLine(r, opts.memories)}\n`);
  for (const f of failedRounds)
    process.stderr.write(`${opts.scenario} round ${f.round}: FAILED: ${f.error.replace(/\n\s*/g, ' ')}\n`);
  if (!summary.converged) process.exitCode = 1;
}

await main();
