// Fault injection in embedded mode, through the CLI as a user runs it. Three scenarios, each on a fresh data
// folder and each verified afterwards by fresh processes:
//   serve-kill (default): `cairn serve --no-auth --port 0` under 8 concurrent HTTP writers posting single
//     memories (unique ids, each text with a unique 7-letter token), SIGKILLed every 3 s and started again
//     at once on the same folder (on a new port: the writers follow it), 25 times. Then the writers stop,
//     the server starts one last time, and every id acknowledged with a 201 is read back (exactly once,
//     with the text sent), /v1/stats' stored is compared with the ids that exist (acknowledged, plus
//     unacknowledged ones stored before a kill), embedded and indexed are polled until they reach stored,
//     sampled memories are searched for by their own text (vector leg only) and by their token (default
//     weights), and after a graceful stop `cairn check` must pass.
//   ingest-kill: `cairn ingest` of N memories SIGKILLed at a random point, re-run (the same command) and
//     killed again, 5 times in a row, then run to completion; then `cairn stats --json` must show
//     stored == embedded == indexed == N, `cairn check` must pass, and a fresh `cairn search --queries`
//     process must find the sampled memories at rank 1.
//   reindex-kill: N memories ingested, then `cairn reindex --embedder hash:384` SIGKILLed part-way 3 times
//     and run to completion; `cairn spaces --json` must show the new space active, then the same
//     convergence, check and rank-1 probes.
// Usage: pnpm build && node bench/dist/faults-embedded.js [--cli apps/cli/dist/main.js]
//          [--scenario serve-kill|ingest-kill|reindex-kill] [--kills 25|5|3] [--rounds 1] [--seed 42]
//          serve-kill:   [--writers 8] [--kill-every-ms 3000] [--pool 100000] [--converge-s 120]
//          ingest-kill, reindex-kill: [--memories 20000] [--kill-jitter-ms 150]
//                                     [--embedder hash:384] [--settle-s 120] [--poll-s 2]
//          [--sample 300] [--min-rank1-share 0.98] [--log-dir DIR] [--keep] [--out FILE]
// Prints the JSON summary on stdout and one line per round on stderr; exits 1 when a round fails (a lost or
// duplicated acknowledged write, counts that never converge, a failed check, a CLI step that fails, or
// fewer than --min-rank1-share of the sampled memories at rank 1 in a probe that must find them).
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
import http from 'node:http';
import os from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import Database from 'better-sqlite3';
import { CLI_PATH, writeJsonl } from './cli-runner.js';
import { summarize } from './percentiles.js';
import { randomInt, seededRandom } from './seeded-random.js';
import { generateCorpus, MAIN_NAMESPACE } from './synthetic-corpus.js';

const SCENARIOS = ['serve-kill', 'ingest-kill', 'reindex-kill'] as const;
type Scenario = (typeof SCENARIOS)[number];

interface FaultOptions {
  /** The CLI under test (`apps/cli/dist/main.js` of the build being measured). */
  cli: string;
  scenario: Scenario;
  /** SIGKILLs per round. @defaultValue 25 (serve-kill), 5 (ingest-kill), 3 (reindex-kill) */
  kills: number;
  /** Fresh data folders, one after the other. @defaultValue 1 */
  rounds: number;
  seed: number;
  /** serve-kill: concurrent HTTP writers, each posting one memory at a time. @defaultValue 8 */
  writers: number;
  /** serve-kill: ms the server listens before it is SIGKILLed. @defaultValue 3_000 */
  killEveryMs: number;
  /** serve-kill: distinct memories the writers may post; they stop early if it runs out. @defaultValue 100_000 */
  pool: number;
  /** serve-kill: seconds the last server gets for embedded and indexed to reach stored. @defaultValue 120 */
  convergeS: number;
  /** ingest-kill, reindex-kill: memories in the JSONL file. @defaultValue 20_000 */
  memories: number;
  /**
   * ingest-kill, reindex-kill: run k is SIGKILLed once cairn.db shows its share f_k of the work done (rows
   * stored, or vectors in the new space), f_1 < … < f_kills drawn at random in [0.05, 0.95], plus a random
   * delay of up to this many ms, so the kill may land inside a batch rather than just after a commit.
   * @defaultValue 150
   */
  killJitterMs: number;
  /** reindex-kill: the new space's embedder. @defaultValue hash:384 */
  embedder: string;
  /** ingest-kill, reindex-kill: seconds of `cairn stats` polling for the counts to converge. @defaultValue 120 */
  settleS: number;
  /** Seconds between `cairn stats` polls. @defaultValue 2 */
  pollS: number;
  /** Memories looked up by their own text and their token. @defaultValue 300 */
  sample: number;
  /** A must-find probe (own text vector-only, token with defaults) fails below this share at rank 1. @defaultValue 0.98 */
  minRank1Share: number;
  /** Keep the processes' logs here (one folder per round); null: a temporary folder, removed. */
  logDir: string | null;
  /** Keep each round's work folder (data folder, JSONL files) instead of removing it, to look into a failure. */
  keep: boolean;
  /** Also write the JSON summary to this file. */
  out: string | null;
}

const DEFAULT_KILLS: Record<Scenario, number> = { 'serve-kill': 25, 'ingest-kill': 5, 'reindex-kill': 3 };

/** Hits asked of each token search. */
const SEARCH_K = 50;
/** Hits asked of each own-text search: only rank 1 is read. */
const OWN_TEXT_K = 10;
/** The own-text search's vector pool, the wire maximum, so an indexed vector is not lost to the HNSW approximation. */
const OWN_TEXT_POOL = 1_000;
const VECTOR_ONLY = Object.freeze({ lexical: 0, vector: 1 });
/** The server's per-key limit (requests/minute): far above what this machine serves, so no 429s. */
const RATE_LIMIT_PER_MINUTE = 100_000_000;
/** A server has this long (ms) to print "Cairn API on …". */
const SERVER_READY_MS = 120_000;
/** A SIGTERMed server gets this long (ms) before SIGKILL (serve.ts gives requests 10 s). */
const SERVER_STOP_MS = 30_000;
/** One HTTP request gets this long (ms). */
const REQUEST_MS = 60_000;
/** Ids per `POST /v1/memories/get` (the API's limit). */
const GET_IDS_MAX = 200;
/** Queries per `POST /v1/search/batch` (the API's limit). */
const BATCH_QUERIES_MAX = 50;
/** serve-kill: how long (ms) the probes may be retried while the server reports a degraded vector leg. */
const DEGRADED_RETRY_MS = 60_000;
/** Lines of a process's stderr kept to explain a failure. */
const TAIL_LINES = 20;
/** One `cairn stats|check|search|spaces` process gets this long (ms). */
const CLI_CALL_MS = 180_000;
/** A run that is not killed (the last ingest or reindex) gets this long (ms). */
const RUN_TIMEOUT_MS = 900_000;

function parseOptions(argv: string[]): FaultOptions {
  const { values } = parseArgs({
    args: argv,
    options: {
      cli: { type: 'string' },
      scenario: { type: 'string' },
      kills: { type: 'string' },
      rounds: { type: 'string' },
      seed: { type: 'string' },
      writers: { type: 'string' },
      'kill-every-ms': { type: 'string' },
      pool: { type: 'string' },
      'converge-s': { type: 'string' },
      memories: { type: 'string' },
      'kill-jitter-ms': { type: 'string' },
      embedder: { type: 'string' },
      'settle-s': { type: 'string' },
      'poll-s': { type: 'string' },
      sample: { type: 'string' },
      'min-rank1-share': { type: 'string' },
      'log-dir': { type: 'string' },
      keep: { type: 'boolean' },
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
  const scenario = (values.scenario ?? 'serve-kill') as Scenario;
  if (!SCENARIOS.includes(scenario))
    throw new Error(`--scenario must be one of ${SCENARIOS.join(', ')}, got "${values.scenario}"`);
  const share = values['min-rank1-share'] === undefined ? 0.98 : Number(values['min-rank1-share']);
  if (!(share >= 0 && share <= 1)) throw new Error('--min-rank1-share must be between 0 and 1');
  const opts: FaultOptions = {
    cli: resolve(values.cli ?? CLI_PATH),
    scenario,
    kills: integer('kills', values.kills, DEFAULT_KILLS[scenario], 0),
    rounds: integer('rounds', values.rounds, 1, 1),
    seed: integer('seed', values.seed, 42, 0),
    writers: integer('writers', values.writers, 8, 1),
    killEveryMs: integer('kill-every-ms', values['kill-every-ms'], 3_000, 1),
    pool: integer('pool', values.pool, 100_000, 1),
    convergeS: integer('converge-s', values['converge-s'], 120, 0),
    memories: integer('memories', values.memories, 20_000, 1),
    killJitterMs: integer('kill-jitter-ms', values['kill-jitter-ms'], 150, 0),
    embedder: values.embedder ?? 'hash:384',
    settleS: integer('settle-s', values['settle-s'], 120, 0),
    pollS: integer('poll-s', values['poll-s'], 2, 1),
    sample: integer('sample', values.sample, 300, 1),
    minRank1Share: share,
    logDir: values['log-dir'] ? resolve(values['log-dir']) : null,
    keep: values.keep ?? false,
    out: values.out ? resolve(values.out) : null,
  };
  if (!existsSync(opts.cli)) throw new Error(`no CLI at ${opts.cli}: build it first (pnpm build)`);
  if (scenario !== 'serve-kill' && opts.sample > opts.memories) opts.sample = opts.memories;
  return opts;
}

const now = () => performance.now();
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
/** A sleep that does not keep the process alive (a deadline in a race that usually ends first). */
const expiry = (ms: number) => new Promise<null>((r) => setTimeout(() => r(null), ms).unref());
const t0Global = now();
const progress = (msg: string) =>
  process.stderr.write(`[faults-embedded ${((now() - t0Global) / 1000).toFixed(1)}s] ${msg}\n`);
const secs = (ms: number) => Math.round(ms / 100) / 10;

// ── Clean-up on any exit ────────────────────────────────────────────────────────────────────────────────

/**
 * What must not outlive the benchmark, however it ends (error, Ctrl-C): the CLI children and the temporary
 * folders. The 'exit' handler is synchronous, so children are SIGKILLed there; the normal path stops them
 * gracefully first.
 */
const leftovers = { children: new Set<ChildProcess>(), dirs: new Set<string>() };
process.on('exit', () => {
  for (const c of leftovers.children) c.kill('SIGKILL');
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
  private readonly lineWaiters: Array<{ test: (line: string) => boolean; resolve: (line: string) => void }> =
    [];
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
    this.log.write(`\n--- ${label}: node ${[cli, ...args].join(' ')}\n`);
    this.child = spawn(process.execPath, [cli, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env });
    this.pid = this.child.pid ?? -1;
    leftovers.children.add(this.child);
    this.child.stdout!.on('data', (b: Buffer) => {
      if (keepStdout) this.stdout += b.toString();
      this.log.write(b);
    });
    this.child.stderr!.on('data', (b: Buffer) => {
      this.log.write(b);
      const lines = (this.carry + b.toString()).split('\n');
      this.carry = lines.pop() ?? '';
      for (const line of lines) {
        for (let i = this.lineWaiters.length - 1; i >= 0; i--)
          if (this.lineWaiters[i]!.test(line)) this.lineWaiters.splice(i, 1)[0]!.resolve(line);
        if (line.trim()) this.tail.push(line);
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

  /** The last stderr lines (at most TAIL_LINES), oldest first. */
  lastLines(n = TAIL_LINES): string[] {
    return this.tail.slice(-n);
  }

  /**
   * Resolves with the first stderr line matching `test`; rejects if the process exits, reports a CLI
   * error or `ms` passes first.
   */
  async waitForLine(test: (line: string) => boolean, ms: number, what: string): Promise<string> {
    const seen = new Promise<string>((resolve) => this.lineWaiters.push({ test, resolve }));
    const failed = new Promise<string>((resolve) =>
      this.lineWaiters.push({ test: (l) => l.startsWith('cairn: error'), resolve }),
    );
    const r = await Promise.race([
      seen.then((line) => ({ ok: line })),
      failed.then(() => 'error' as const),
      this.exited,
      expiry(ms),
    ]);
    if (r && typeof r === 'object' && 'ok' in r) return r.ok;
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

  /** SIGTERM (a graceful stop), then SIGKILL when it overruns `ms`. */
  async stop(ms: number): Promise<Exit & { graceful: boolean }> {
    if (!this.alive) return { ...(await this.exited), graceful: true };
    this.kill('SIGTERM');
    const r = await Promise.race([this.exited, expiry(ms)]);
    if (r) return { ...r, graceful: true };
    this.kill('SIGKILL');
    return { ...(await this.exited), graceful: false };
  }
}

const describeExit = (e: Exit) => (e.signal ? `signal ${e.signal}` : `code ${e.code}`);

/** A one-shot CLI command (stats, search, check, spaces) with a deadline: its stdout, or its failure. */
async function runCli(
  label: string,
  cli: string,
  args: readonly string[],
  env: NodeJS.ProcessEnv,
  logPath: string,
  ms = CLI_CALL_MS,
): Promise<{ stdout: string; exit: Exit; ms: number; tail: string[] }> {
  const p = new CliProcess(label, cli, args, env, logPath, true);
  const r = await Promise.race([p.exited, expiry(ms)]);
  if (!r) {
    p.kill('SIGKILL');
    await p.exited;
    throw new Error(`${label} did not finish within ${ms} ms`);
  }
  return { stdout: p.stdout, exit: r, ms: now() - p.startedAt, tail: p.lastLines(5) };
}

/** The environment a user's shell gives in embedded mode: no REDIS_URL, the CLI's own defaults. */
function cliEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  delete env.REDIS_URL;
  for (const name of Object.keys(env)) if (name.startsWith('CAIRN_')) delete env[name];
  return env;
}

// ── The corpus (as in faults-distributed.ts) ────────────────────────────────────────────────────────────

type Memory = ReturnType<typeof makeCorpus>[number];

/**
 * The speed benchmark's generated agent memories, each with one 7-letter token found nowhere else,
 * inserted at a random word position (never first).
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
      const at = 1 + Math.floor(rand() * words.length);
      words.splice(at, 0, token);
      return { ...m, text: words.join(' ') };
    });
  if (memories.length !== n) throw new Error(`corpus: ${memories.length} memories, expected ${n}`);
  return memories;
}

/**
 * Seven letters scrambled from the index: the multiplier is coprime to 26, so i ↦ token is one-to-one
 * below 26^7, and no token shares a fixed prefix or suffix with the others.
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

/** Evenly spread over `n` items, so early, killed-batch and late memories are all looked up. */
function sampleIndexes(n: number, count: number): number[] {
  const c = Math.min(n, count);
  return Array.from({ length: c }, (_, j) => Math.floor(((j + 0.5) * n) / c));
}

// ── Shared report pieces ────────────────────────────────────────────────────────────────────────────────

interface SearchFigures {
  queries: number;
  rank1: number;
  /** Found anywhere in the hits asked for. */
  inTopK: number;
  noHits: number;
  /** Answered with a leg missing (the response's `degraded` list not empty). */
  degraded: number;
  /** Hit lists holding one id twice. */
  duplicateHits: number;
  errors: number;
  firstError?: string;
  /** Sampled memory ids not at rank 1 (the first 20). */
  missed: string[];
  ms: number;
}

const emptyFigures = (queries: number): SearchFigures => ({
  queries,
  rank1: 0,
  inTopK: 0,
  noHits: 0,
  degraded: 0,
  duplicateHits: 0,
  errors: 0,
  missed: [],
  ms: 0,
});

function tally(fig: SearchFigures, id: string, hits: string[], degraded: boolean): void {
  if (degraded) fig.degraded++;
  if (hits.length === 0) fig.noHits++;
  if (new Set(hits).size !== hits.length) fig.duplicateHits++;
  if (hits.includes(id)) fig.inTopK++;
  if (hits[0] === id) fig.rank1++;
  else if (fig.missed.length < 20) fig.missed.push(id);
}

interface Probes {
  sample: number;
  /** The memory's own text, vector leg only, widest pool: must be at rank 1 unless its vector is absent. */
  ownTextVectorOnly: SearchFigures;
  /** The token, default weights: what a user's search returns; the lexical leg finds it. Must be rank 1. */
  tokenDefaults: SearchFigures;
  /** The token, vector leg only: informational (one 7-letter word is a weak vector signal). */
  tokenVectorOnly: SearchFigures;
}

interface LookupSet {
  byText: Array<{ id: string; query: string }>;
  byToken: Array<{ id: string; query: string }>;
}

function lookupsFor(memories: readonly Memory[], indexes: readonly number[]): LookupSet {
  return {
    byText: indexes.map((i) => ({ id: memories[i]!.id, query: memories[i]!.text })),
    byToken: indexes.map((i) => ({ id: memories[i]!.id, query: tokenOf(i) })),
  };
}

const wireQuery = (
  l: { id: string; query: string },
  k: number,
  weights: typeof VECTOR_ONLY | null,
  candidatePool?: number,
) => ({
  namespace: MAIN_NAMESPACE,
  query: l.query,
  k,
  ...(weights ? { weights } : {}),
  ...(candidatePool ? { candidatePool } : {}),
});

/** Failures of the must-find probes: too few at rank 1, or any error. */
function probeFailures(p: Probes, minShare: number): string[] {
  const out: string[] = [];
  const need = Math.ceil(p.sample * minShare);
  for (const [name, f] of [
    ['own text vector-only', p.ownTextVectorOnly],
    ['token with defaults', p.tokenDefaults],
  ] as const) {
    if (f.rank1 < need) out.push(`${name}: ${f.rank1}/${p.sample} at rank 1 (needs ${need})`);
    if (f.errors > 0) out.push(`${name}: ${f.errors} search errors (${f.firstError})`);
  }
  for (const [name, f] of Object.entries(p))
    if (typeof f === 'object' && f.duplicateHits > 0)
      out.push(`${name}: ${f.duplicateHits} hit lists hold an id twice`);
  return out;
}

interface LogLine {
  level: string;
  msg: string;
  count: number;
  files: string[];
  example: string;
}

/** Warnings and worse from the round's logs (pino JSON lines, plus plain lines that look like failures). */
function tallyLogs(dir: string): LogLine[] {
  const levels: Record<number, string> = { 40: 'warn', 50: 'error', 60: 'fatal' };
  const found = new Map<string, LogLine>();
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.log'))) {
    for (const line of readFileSync(join(dir, file), 'utf8').split('\n')) {
      if (!line.trim() || line.startsWith('--- ')) continue;
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
      const e = found.get(key) ?? { level, msg, count: 0, files: [], example: line.slice(0, 600) };
      e.count++;
      if (!e.files.includes(file)) e.files.push(file);
      found.set(key, e);
    }
  }
  return [...found.values()].sort((a, b) => b.count - a.count);
}

interface CheckResult {
  exit: string;
  ok: boolean | null;
  ms: number;
  problems?: unknown;
  error?: string;
}

/** `cairn check --json` over the folder, with nothing else running on it. */
async function runCheck(cli: string, dataDir: string, env: NodeJS.ProcessEnv, logDir: string) {
  try {
    const r = await runCli(
      'check',
      cli,
      ['check', '--json', '--data-dir', dataDir],
      env,
      join(logDir, 'check.log'),
    );
    let ok: boolean | null = null;
    let problems: unknown;
    try {
      const j = JSON.parse(r.stdout) as { ok?: boolean; problems?: unknown };
      ok = j.ok ?? null;
      problems = j.problems;
    } catch {
      ok = null;
    }
    const out: CheckResult = {
      exit: describeExit(r.exit),
      ok: r.exit.code === 0 && ok === true,
      ms: Math.round(r.ms),
    };
    if (problems && Array.isArray(problems) && problems.length > 0) out.problems = problems;
    if (r.exit.code !== 0) out.error = (r.stdout + r.tail.join('\n')).slice(0, 600);
    return out;
  } catch (err) {
    return { exit: 'none', ok: false, ms: 0, error: (err as Error).message } satisfies CheckResult;
  }
}

/**
 * A read-only look at cairn.db beside the CLI's figures, with every Cairn process on the folder stopped:
 * live rows of the namespace, distinct ids among them, and vectors per embedding space. null on any error.
 */
type SqlCounts =
  | { rows: number; distinctIds: number; spaces: Array<{ space: string; active: number; vectors: number }> }
  | { error: string };

function sqlCounts(dataDir: string): SqlCounts {
  try {
    const db = new Database(join(dataDir, 'cairn.db'), { readonly: true, fileMustExist: true });
    try {
      const rows = db
        .prepare(
          'SELECT COUNT(*) AS n, COUNT(DISTINCT id) AS ids FROM memories WHERE namespace = ? AND deleted_at IS NULL',
        )
        .get(MAIN_NAMESPACE) as { n: number; ids: number };
      const spaces = db
        .prepare(
          'SELECT s.id AS space, s.active AS active, (SELECT COUNT(*) FROM embeddings e WHERE e.space = s.id) AS vectors FROM embedding_spaces s',
        )
        .all() as Array<{ space: string; active: number; vectors: number }>;
      return { rows: rows.n, distinctIds: rows.ids, spaces };
    } finally {
      db.close();
    }
  } catch (err) {
    return { error: (err as Error).message };
  }
}

// ── serve-kill ──────────────────────────────────────────────────────────────────────────────────────────

interface HttpResult {
  status: number;
  body: string;
}

/** One HTTP request on `agent`; rejects on a connection error (refused, reset, the server gone mid-answer). */
function request(
  agent: http.Agent,
  base: URL,
  method: string,
  path: string,
  body?: string,
  ms = REQUEST_MS,
): Promise<HttpResult> {
  return new Promise((resolvePromise, reject) => {
    const req = http.request(
      {
        host: base.hostname,
        port: base.port,
        method,
        path,
        agent,
        timeout: ms,
        headers: body
          ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }
          : {},
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolvePromise({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() }),
        );
        res.on('aborted', () => reject(Object.assign(new Error('response aborted'), { code: 'EABORTED' })));
        res.on('error', reject);
      },
    );
    req.on('timeout', () =>
      req.destroy(Object.assign(new Error('request timed out'), { code: 'ETIMEDOUT' })),
    );
    req.on('error', reject);
    if (body) req.write(body);
    req.end();
  });
}

const errorName = (err: unknown) =>
  (err as { code?: string }).code ?? (err as Error).message.slice(0, 40) ?? 'error';

/** The server the writers should use now: null between a kill and the next "Cairn API on" line. */
interface Live {
  generation: number;
  base: URL | null;
  agent: http.Agent | null;
  waiters: Array<() => void>;
}

function waitForChange(live: Live, ms: number): Promise<void> {
  return new Promise((r) => {
    live.waiters.push(r);
    setTimeout(r, ms).unref();
  });
}

function announce(live: Live, base: URL | null): void {
  live.agent?.destroy();
  live.base = base;
  live.agent = base ? new http.Agent({ keepAlive: true }) : null;
  live.generation++;
  for (const w of live.waiters.splice(0)) w();
}

interface ServeKillReport {
  round: number;
  scenario: 'serve-kill';
  writers: number;
  kills: Array<{
    n: number;
    /** ms the killed server had been listening. */
    upMs: number;
    /** Writes acknowledged by the killed server. */
    acknowledged: number;
    exit: string;
    /** SIGKILL → the next server's "Cairn API on" line (null after the last kill). */
    restartMs: number | null;
  }>;
  restart: { n: number; medianMs: number; maxMs: number; p90Ms: number } | null;
  /** The last start, after the writers stopped (from the last SIGKILL, writers' drain included). */
  finalStartMs: number;
  writes: {
    attempted: number;
    acknowledged: number;
    /** Posted but not acknowledged with a 201, by outcome (status code or connection error). */
    unacknowledged: Record<string, number>;
    poolExhausted: boolean;
    writeSeconds: number;
  };
  verify: {
    acknowledgedFound: number;
    acknowledgedMissing: number;
    missingSample: string[];
    /** Ids returned more than once by memories/get, over every id posted. */
    duplicated: number;
    /** Memories whose stored text differs from the text posted. */
    textMismatch: number;
    unacknowledgedFound: number;
    unacknowledgedPosted: number;
    /** acknowledged found + unacknowledged found: the distinct posted ids that exist. */
    distinctExisting: number;
    statsStored: number | null;
    statsMatches: boolean;
  };
  convergence: {
    /** Stats settled, the vector leg served, and stats still settled after it. */
    converged: boolean;
    /** Seconds from the last server listening to /v1/stats showing embedded == indexed == stored. */
    afterS: number | null;
    /** Seconds from the last server listening to a vector-only search answered without a degraded leg. */
    vectorReadyS: number | null;
    vectorProbes: number;
    /** Why the vector leg was degraded before then (the first answer's reasons). */
    degradedReason: string | null;
    /** Distinct /v1/stats readings while the vector leg was degraded. */
    statsWhileDegraded: Array<{
      stored: number;
      embedded: number;
      indexed: number;
      pending: number;
      failed: number;
    }>;
    first: { stored: number; embedded: number; indexed: number; pending: number; failed: number } | null;
    last: { stored: number; embedded: number; indexed: number; pending: number; failed: number } | null;
  };
  search: Probes & { waitedForDegradedS: number };
  stop: { graceful: boolean; how: string };
  check: CheckResult;
  sql: SqlCounts;
  failures: string[];
  logs: { dir: string; warnOrWorse: LogLine[] };
}

async function runServeKill(
  round: number,
  opts: FaultOptions,
  pool: readonly Memory[],
): Promise<ServeKillReport> {
  const work = mkdtempSync(join(os.tmpdir(), 'cairn-faults-embedded-'));
  leftovers.dirs.add(work);
  const dataDir = join(work, 'data');
  mkdirSync(dataDir);
  const logDir = opts.logDir ? join(opts.logDir, `${opts.scenario}-round${round}`) : join(work, 'logs');
  mkdirSync(logDir, { recursive: true });
  const env = cliEnv();
  const live: Live = { generation: 0, base: null, agent: null, waiters: [] };
  let server: CliProcess | null = null;
  let serverCount = 0;
  const stopWriters = { stop: false };
  let writersDone: Promise<unknown> | null = null;
  const startServer = async () => {
    serverCount++;
    const s = new CliProcess(
      `serve-${serverCount}`,
      opts.cli,
      [
        'serve',
        '--no-auth',
        '--port',
        '0',
        '--host',
        '127.0.0.1',
        '--rate-limit',
        String(RATE_LIMIT_PER_MINUTE),
        '--data-dir',
        dataDir,
      ],
      env,
      join(logDir, 'serve.log'),
      false,
    );
    server = s;
    const line = await s.waitForLine((l) => l.includes('Cairn API on '), SERVER_READY_MS, '"Cairn API on"');
    const m = /Cairn API on (http:\/\/[^\s]+:\d+)/.exec(line);
    if (!m) throw new Error(`${s.label}: no URL in "${line}"`);
    return { server: s, base: new URL(m[1]!), listeningAt: now() };
  };
  try {
    // The writers: each takes the next memory of the pool and posts it alone, to whichever server is live.
    const acked: number[] = [];
    const unacked: number[] = [];
    const outcomes: Record<string, number> = {};
    let next = 0;
    let poolExhausted = false;
    let ackedThisGeneration = 0;
    const writer = async () => {
      while (!stopWriters.stop) {
        if (live.base === null) {
          await waitForChange(live, 1_000);
          continue;
        }
        if (next >= pool.length) {
          poolExhausted = true;
          return;
        }
        const i = next++;
        const m = pool[i]!;
        const { base, agent, generation } = live;
        const body = JSON.stringify({
          namespace: m.namespace,
          id: m.id,
          text: m.text,
          kind: m.kind,
          session: m.session,
          agent: m.agent,
          ts: m.ts,
        });
        try {
          const res = await request(agent!, base, 'POST', '/v1/memories', body);
          const r =
            res.status === 201
              ? (JSON.parse(res.body) as { items: Array<{ id: string; status: string }> })
              : null;
          const item = r?.items[0];
          if (item && item.id === m.id && ['stored', 'updated', 'unchanged'].includes(item.status)) {
            acked.push(i);
            ackedThisGeneration++;
          } else {
            unacked.push(i);
            const k = `http ${res.status}${item ? ` ${item.status}` : ''}`;
            outcomes[k] = (outcomes[k] ?? 0) + 1;
          }
        } catch (err) {
          unacked.push(i);
          const k = errorName(err);
          outcomes[k] = (outcomes[k] ?? 0) + 1;
          // The server is most likely gone: wait for the next one rather than burn ids on a dead port.
          if (live.generation === generation) await waitForChange(live, 500);
        }
      }
    };

    let current = await startServer();
    announce(live, current.base);
    progress(
      `round ${round}: serve pid ${current.server.pid} on ${current.base.origin}, data ${dataDir}; ` +
        `${opts.writers} writers, a SIGKILL every ${opts.killEveryMs} ms, ${opts.kills} times`,
    );
    const writeStart = now();
    writersDone = Promise.all(Array.from({ length: opts.writers }, writer));
    const kills: ServeKillReport['kills'] = [];
    let finalStartMs = 0;
    for (let k = 1; k <= opts.kills; k++) {
      await sleep(Math.max(0, current.listeningAt + opts.killEveryMs - now()));
      const upMs = Math.round(now() - current.listeningAt);
      announce(live, null);
      const killedAt = now();
      current.server.kill('SIGKILL');
      const how = await current.server.exited;
      const ackedHere = ackedThisGeneration;
      ackedThisGeneration = 0;
      if (k < opts.kills) {
        current = await startServer();
        const restartMs = Math.round(current.listeningAt - killedAt);
        announce(live, current.base);
        kills.push({ n: k, upMs, acknowledged: ackedHere, exit: describeExit(how), restartMs });
        progress(
          `round ${round}: kill ${k}/${opts.kills} after ${upMs} ms up (${ackedHere} acknowledged by it, ` +
            `${acked.length} in all); pid ${current.server.pid} listening ${restartMs} ms after the SIGKILL`,
        );
      } else {
        kills.push({ n: k, upMs, acknowledged: ackedHere, exit: describeExit(how), restartMs: null });
        stopWriters.stop = true;
        for (const w of live.waiters.splice(0)) w();
        await writersDone;
        const writeSeconds = secs(now() - writeStart);
        current = await startServer();
        finalStartMs = Math.round(current.listeningAt - killedAt);
        announce(live, current.base);
        progress(
          `round ${round}: kill ${k}/${opts.kills} after ${upMs} ms up; writers stopped after ${writeSeconds} s ` +
            `(${acked.length} acknowledged of ${next} posted); last server pid ${current.server.pid} listening ` +
            `${finalStartMs} ms after the SIGKILL`,
        );
      }
    }
    if (opts.kills === 0) {
      await sleep(opts.killEveryMs);
      stopWriters.stop = true;
      await writersDone;
    }
    const writeSeconds = secs(now() - writeStart);
    const base = current.base;
    const agent = new http.Agent({ keepAlive: true });

    type Counts = NonNullable<ServeKillReport['convergence']['first']>;
    // Convergence on the last server, from the moment it listens: /v1/stats every 250 ms until embedded and
    // indexed reach stored; then a vector-only search every 500 ms until it is answered without a degraded
    // leg (an index that was never saved, or lost to a kill, is rebuilt when first searched), watching
    // /v1/stats meanwhile; then /v1/stats once more.
    const sampled = sampleIndexes(acked.length, opts.sample).map((j) => acked[j]!);
    const lookups = lookupsFor(pool, sampled);
    const convergeStart = current.listeningAt;
    const deadline = convergeStart + opts.convergeS * 1000;
    const readStats = async (): Promise<Counts | null> => {
      const res = await request(agent, base, 'GET', '/v1/stats').catch((err) => ({
        status: 0,
        body: String(err),
      }));
      if (res.status !== 200) return null;
      const ns = (JSON.parse(res.body) as { namespaces: Record<string, Counts> }).namespaces[MAIN_NAMESPACE];
      return ns
        ? {
            stored: ns.stored,
            embedded: ns.embedded,
            indexed: ns.indexed,
            pending: ns.pending,
            failed: ns.failed,
          }
        : null;
    };
    const settled = (c: Counts | null) => c !== null && c.embedded === c.stored && c.indexed === c.stored;
    let first: Counts | null = null;
    let last: Counts | null = null;
    let afterS: number | null = null;
    for (;;) {
      last = await readStats();
      first ??= last;
      if (settled(last)) {
        afterS = secs(now() - convergeStart);
        break;
      }
      if (now() > deadline) break;
      await sleep(250);
    }
    let vectorReadyS: number | null = null;
    let degradedReason: string | null = null;
    let vectorProbes = 0;
    const duringBuild: Counts[] = [];
    const probeQuery = JSON.stringify(wireQuery(lookups.byText[0]!, OWN_TEXT_K, VECTOR_ONLY, OWN_TEXT_POOL));
    for (;;) {
      vectorProbes++;
      const res = await request(agent, base, 'POST', '/v1/search', probeQuery).catch((err) => ({
        status: 0,
        body: String(err),
      }));
      if (res.status === 200) {
        const r = JSON.parse(res.body) as { degraded: string[]; degradedReasons: Record<string, string> };
        if (r.degraded.length === 0) {
          vectorReadyS = secs(now() - convergeStart);
          break;
        }
        degradedReason ??= `${r.degraded.join(',')}: ${Object.values(r.degradedReasons).join('; ')}`;
      } else degradedReason ??= `POST /v1/search → ${res.status} ${res.body.slice(0, 200)}`;
      const c = await readStats();
      if (c && (duringBuild.length === 0 || JSON.stringify(duringBuild.at(-1)) !== JSON.stringify(c)))
        duringBuild.push(c);
      if (now() > deadline) break;
      await sleep(500);
    }
    const final = await readStats();
    if (final) last = final;
    progress(
      `round ${round}: stats stored ${last?.stored} embedded ${last?.embedded} indexed ${last?.indexed}; ` +
        `${afterS === null ? 'stats NOT converged' : `stats converged ${afterS} s`}, ` +
        `${vectorReadyS === null ? 'vector leg NOT ready' : `vector leg served ${vectorReadyS} s`} after the last start` +
        `${degradedReason ? ` (degraded until then: ${degradedReason}; stats meanwhile: ${duringBuild.map((c) => `indexed ${c.indexed}`).join(' → ')})` : ''}`,
    );

    // Read-back: every posted id, acknowledged or not, with memories/get.
    const readBack = async (indexes: readonly number[]) => {
      const seen = new Map<string, number>();
      let mismatch = 0;
      const missing: string[] = [];
      for (let c = 0; c < indexes.length; c += GET_IDS_MAX) {
        const chunk = indexes.slice(c, c + GET_IDS_MAX).map((i) => pool[i]!);
        const res = await request(
          agent,
          base,
          'POST',
          '/v1/memories/get',
          JSON.stringify({ namespace: MAIN_NAMESPACE, ids: chunk.map((m) => m.id) }),
        );
        if (res.status !== 200)
          throw new Error(`POST /v1/memories/get → ${res.status} ${res.body.slice(0, 300)}`);
        const r = JSON.parse(res.body) as {
          memories: Array<{ id: string; text: string }>;
          missing: string[];
          omitted?: string[];
        };
        const sent = new Map(chunk.map((m) => [m.id, m.text]));
        for (const got of r.memories) {
          seen.set(got.id, (seen.get(got.id) ?? 0) + 1);
          if (sent.get(got.id) !== got.text) mismatch++;
        }
        // Found but left out by a token budget: exists (no budget is asked, so this should stay empty).
        for (const id of r.omitted ?? []) seen.set(id, (seen.get(id) ?? 0) + 1);
        missing.push(...r.missing);
      }
      const duplicated = [...seen.values()].filter((n) => n > 1).length;
      return { found: seen.size, missing, duplicated, mismatch };
    };
    const a = await readBack(acked);
    const u = await readBack(unacked);
    progress(
      `round ${round}: acknowledged ${acked.length}: found ${a.found}, missing ${a.missing.length}, ` +
        `duplicated ${a.duplicated}, text mismatches ${a.mismatch}; unacknowledged ${unacked.length}: found ${u.found}`,
    );

    // Probes over HTTP, batched; retried while the server still reports a degraded leg (an index loading).
    const probeStart = now();
    let probes: Probes;
    for (;;) {
      probes = {
        sample: sampled.length,
        ownTextVectorOnly: await searchHttp(
          agent,
          base,
          lookups.byText,
          OWN_TEXT_K,
          VECTOR_ONLY,
          OWN_TEXT_POOL,
        ),
        tokenDefaults: await searchHttp(agent, base, lookups.byToken, SEARCH_K, null),
        tokenVectorOnly: await searchHttp(agent, base, lookups.byToken, SEARCH_K, VECTOR_ONLY),
      };
      const degraded =
        probes.ownTextVectorOnly.degraded + probes.tokenDefaults.degraded + probes.tokenVectorOnly.degraded;
      if (degraded === 0 || now() - probeStart > DEGRADED_RETRY_MS) break;
      progress(`round ${round}: ${degraded} searches answered degraded; trying again in 2 s`);
      await sleep(2_000);
    }
    const waitedForDegradedS = secs(
      now() - probeStart - probes.ownTextVectorOnly.ms - probes.tokenDefaults.ms - probes.tokenVectorOnly.ms,
    );
    agent.destroy();
    announce(live, null);

    const stop = await current.server.stop(SERVER_STOP_MS);
    const check = await runCheck(opts.cli, dataDir, env, logDir);
    const sql = sqlCounts(dataDir);
    const restarts = kills.flatMap((k) => (k.restartMs === null ? [] : [k.restartMs]));
    const rs = restarts.length ? summarize(restarts) : null;
    const statsStored = last?.stored ?? null;
    const distinctExisting = a.found + u.found;
    const report: ServeKillReport = {
      round,
      scenario: 'serve-kill',
      writers: opts.writers,
      kills,
      restart: rs
        ? { n: rs.n, medianMs: Math.round(rs.p50), p90Ms: Math.round(rs.p90), maxMs: Math.round(rs.max) }
        : null,
      finalStartMs,
      writes: {
        attempted: next,
        acknowledged: acked.length,
        unacknowledged: outcomes,
        poolExhausted,
        writeSeconds,
      },
      verify: {
        acknowledgedFound: a.found,
        acknowledgedMissing: a.missing.length,
        missingSample: a.missing.slice(0, 20),
        duplicated: a.duplicated + u.duplicated,
        textMismatch: a.mismatch + u.mismatch,
        unacknowledgedFound: u.found,
        unacknowledgedPosted: unacked.length,
        distinctExisting,
        statsStored,
        statsMatches: statsStored === distinctExisting,
      },
      convergence: {
        converged: afterS !== null && vectorReadyS !== null && settled(last),
        afterS,
        vectorReadyS,
        vectorProbes,
        degradedReason,
        statsWhileDegraded: duringBuild,
        first,
        last,
      },
      search: { ...probes, waitedForDegradedS },
      stop: { graceful: stop.graceful, how: describeExit(stop) },
      check,
      sql,
      failures: [],
      logs: {
        dir: opts.logDir ? logDir : '(removed; pass --log-dir to keep)',
        warnOrWorse: tallyLogs(logDir),
      },
    };
    const f = report.failures;
    if (a.missing.length > 0) f.push(`${a.missing.length} acknowledged writes missing`);
    if (report.verify.duplicated > 0) f.push(`${report.verify.duplicated} ids returned more than once`);
    if (report.verify.textMismatch > 0)
      f.push(`${report.verify.textMismatch} stored texts differ from the posted ones`);
    if (!report.verify.statsMatches)
      f.push(`stats stored ${statsStored} ≠ ${distinctExisting} distinct posted ids that exist`);
    if ('rows' in sql && sql.rows !== distinctExisting)
      f.push(`cairn.db holds ${sql.rows} live rows, ${distinctExisting} distinct posted ids exist`);
    if (afterS === null) f.push(`embedded/indexed did not reach stored within ${opts.convergeS} s`);
    if (vectorReadyS === null)
      f.push(`the vector leg was still degraded ${opts.convergeS} s after the last start`);
    else if (!settled(last))
      f.push(`stats no longer settled once the vector leg served: ${JSON.stringify(last)}`);
    if (!check.ok) f.push(`cairn check: ${check.exit}${check.error ? ` ${check.error}` : ''}`);
    if (!stop.graceful) f.push('the last server did not stop on SIGTERM');
    f.push(...probeFailures(probes, opts.minRank1Share));
    return report;
  } finally {
    stopWriters.stop = true;
    for (const w of live.waiters.splice(0)) w();
    (server as CliProcess | null)?.kill('SIGKILL');
    if (writersDone) await writersDone.catch(() => undefined);
    live.agent?.destroy();
    if (opts.keep) progress(`round ${round}: work folder kept: ${work}`);
    else rmSync(work, { recursive: true, force: true });
    leftovers.dirs.delete(work);
  }
}

/** The lookups through POST /v1/search/batch, 50 queries a call. */
async function searchHttp(
  agent: http.Agent,
  base: URL,
  lookups: ReadonlyArray<{ id: string; query: string }>,
  k: number,
  weights: typeof VECTOR_ONLY | null,
  candidatePool?: number,
): Promise<SearchFigures> {
  const fig = emptyFigures(lookups.length);
  const t = now();
  for (let c = 0; c < lookups.length; c += BATCH_QUERIES_MAX) {
    const chunk = lookups.slice(c, c + BATCH_QUERIES_MAX);
    let res: HttpResult;
    try {
      res = await request(
        agent,
        base,
        'POST',
        '/v1/search/batch',
        JSON.stringify({ queries: chunk.map((l) => wireQuery(l, k, weights, candidatePool)) }),
      );
    } catch (err) {
      res = { status: 0, body: errorName(err) };
    }
    if (res.status !== 200) {
      fig.errors += chunk.length;
      fig.firstError ??= `POST /v1/search/batch → ${res.status} ${res.body.slice(0, 300)}`;
      continue;
    }
    const r = JSON.parse(res.body) as {
      results: Array<
        | { ok: true; result: { hits: Array<{ id: string }>; degraded: string[] } }
        | { ok: false; error: { message: string } }
      >;
    };
    chunk.forEach((l, j) => {
      const one = r.results[j];
      if (one === undefined) {
        fig.errors++;
        fig.firstError ??= 'no result';
        return;
      }
      if (!one.ok) {
        fig.errors++;
        fig.firstError ??= one.error.message;
        return;
      }
      tally(
        fig,
        l.id,
        one.result.hits.map((h) => h.id),
        one.result.degraded.length > 0,
      );
    });
  }
  fig.ms = Math.round(now() - t);
  return fig;
}

// ── ingest-kill and reindex-kill ────────────────────────────────────────────────────────────────────────

interface Attempt {
  n: number;
  /** The kill's trigger: rows stored (ingest-kill) or vectors in the new space (reindex-kill). */
  target: number;
  /** The same count when the run started. */
  atStart: number;
  /** Whether the process was still running at the trigger (false: it ended first, not counted as a kill). */
  killed: boolean;
  /** ms after the start when the SIGKILL was sent (null: not sent). */
  killAtMs: number | null;
  /** The count read last before the SIGKILL. */
  seenAtKill: number | null;
  exit: string;
  ms: number;
  /** The process's last progress line on stderr before it ended. */
  lastProgress: string | null;
  /** What cairn.db held right after (read-only SQL): live rows and vectors per space. */
  after: SqlCounts;
}

interface StatsPoll {
  t: number;
  stored: number | null;
  embedded: number | null;
  indexed: number | null;
  pending: number | null;
  failed: number | null;
  space: string | null;
  error?: string;
}

interface KillRunReport {
  round: number;
  scenario: 'ingest-kill' | 'reindex-kill';
  memories: number;
  /** reindex-kill: the ingest before the kills. */
  setup: { exit: string; seconds: number; summary: string } | null;
  attempts: Attempt[];
  killsLanded: number;
  final: { exit: string; seconds: number; summary: string; stderrTail: string[] };
  spaces: { target: string; active: boolean; progress: unknown; all: unknown } | null;
  polls: StatsPoll[];
  converged: boolean;
  convergedAfterS: number | null;
  end: StatsPoll | null;
  check: CheckResult;
  sql: SqlCounts;
  search: Probes;
  failures: string[];
  logs: { dir: string; warnOrWorse: LogLine[] };
}

async function statsPoll(
  cli: string,
  dataDir: string,
  env: NodeJS.ProcessEnv,
  logDir: string,
  t: number,
): Promise<StatsPoll> {
  const empty = { stored: null, embedded: null, indexed: null, pending: null, failed: null, space: null };
  try {
    const r = await runCli(
      'stats',
      cli,
      ['stats', '--json', '--data-dir', dataDir],
      env,
      join(logDir, 'stats.log'),
    );
    if (r.exit.code !== 0)
      throw new Error(`stats exited with ${describeExit(r.exit)}: ${r.tail.join(' | ')}`);
    const s = JSON.parse(r.stdout) as {
      space: string | null;
      namespaces: Record<
        string,
        { stored: number; embedded: number; indexed: number; pending: number; failed: number }
      >;
    };
    const ns = s.namespaces[MAIN_NAMESPACE];
    return {
      t,
      ...(ns
        ? {
            stored: ns.stored,
            embedded: ns.embedded,
            indexed: ns.indexed,
            pending: ns.pending,
            failed: ns.failed,
          }
        : empty),
      space: s.space,
    } satisfies StatsPoll;
  } catch (err) {
    return { t, ...empty, error: (err as Error).message } satisfies StatsPoll;
  }
}

/** The lookups through one fresh `cairn search --queries FILE --json` process (as cli-runner's cliSearch). */
async function searchCli(
  label: string,
  cli: string,
  dataDir: string,
  env: NodeJS.ProcessEnv,
  workDir: string,
  logDir: string,
  lookups: ReadonlyArray<{ id: string; query: string }>,
  k: number,
  weights: typeof VECTOR_ONLY | null,
  candidatePool?: number,
): Promise<SearchFigures> {
  const file = join(workDir, `queries-${label}.jsonl`);
  writeJsonl(
    file,
    lookups.map((l) => ({ id: l.id, ...wireQuery(l, k, weights, candidatePool) })),
  );
  const fig = emptyFigures(lookups.length);
  let r: Awaited<ReturnType<typeof runCli>>;
  try {
    r = await runCli(
      `search ${label}`,
      cli,
      ['search', '--queries', file, '--json', '--data-dir', dataDir],
      env,
      join(logDir, `search-${label}.log`),
    );
  } catch (err) {
    fig.errors = lookups.length;
    fig.firstError = (err as Error).message;
    return fig;
  }
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
    tally(
      fig,
      id,
      (res.hits ?? []).map((h) => h.id),
      Array.isArray(res.degraded) ? res.degraded.length > 0 : Boolean(res.degraded),
    );
  }
  const unanswered = lookups.filter((l) => !seen.has(l.id)).length;
  if (unanswered > 0) {
    fig.errors += unanswered;
    fig.firstError ??= `${unanswered} queries unanswered (search exited with ${describeExit(r.exit)})`;
  }
  return fig;
}

const PROGRESS_LINE = /^(ingest \[|reindex )/;

/** One count from cairn.db, read-only, beside the process writing it; null while the file does not exist. */
function peek(dataDir: string, sql: string, ...params: unknown[]): number | null {
  const path = join(dataDir, 'cairn.db');
  if (!existsSync(path)) return null;
  try {
    const db = new Database(path, { readonly: true, fileMustExist: true });
    try {
      return (
        (db
          .prepare(sql)
          .pluck()
          .get(...params) as number | undefined) ?? null
      );
    } finally {
      db.close();
    }
  } catch {
    // Not created yet, or mid-migration.
    return null;
  }
}

/** Rows stored in the namespace (what `cairn ingest` has committed so far). */
const liveRows = (dataDir: string) =>
  peek(dataDir, 'SELECT COUNT(*) FROM memories WHERE namespace = ? AND deleted_at IS NULL', MAIN_NAMESPACE);

/** Vectors in spaces not yet active (what `cairn reindex` has filled so far). */
const inactiveSpaceVectors = (dataDir: string) =>
  peek(
    dataDir,
    'SELECT COUNT(*) FROM embeddings WHERE space IN (SELECT id FROM embedding_spaces WHERE active = 0)',
  );

async function runKillScenario(
  round: number,
  opts: FaultOptions,
  memories: readonly Memory[],
): Promise<KillRunReport> {
  const scenario = opts.scenario as KillRunReport['scenario'];
  const work = mkdtempSync(join(os.tmpdir(), 'cairn-faults-embedded-'));
  leftovers.dirs.add(work);
  const dataDir = join(work, 'data');
  mkdirSync(dataDir);
  const logDir = opts.logDir ? join(opts.logDir, `${scenario}-round${round}`) : join(work, 'logs');
  mkdirSync(logDir, { recursive: true });
  const file = join(work, 'memories.jsonl');
  writeJsonl(file, memories);
  const env = cliEnv();
  const rand = seededRandom(opts.seed * 1_000 + round);
  const n = memories.length;
  const ingestArgs = ['ingest', file, '--json', '--data-dir', dataDir];
  const reindexArgs = ['reindex', '--embedder', opts.embedder, '--data-dir', dataDir];
  const command = scenario === 'ingest-kill' ? ingestArgs : reindexArgs;
  const verb = scenario === 'ingest-kill' ? 'ingest' : 'reindex';
  const workUnit = scenario === 'ingest-kill' ? 'rows' : 'new-space vectors';
  const workDone = scenario === 'ingest-kill' ? liveRows : inactiveSpaceVectors;
  const running: CliProcess[] = [];
  const failures: string[] = [];
  try {
    let setup: KillRunReport['setup'] = null;
    if (scenario === 'reindex-kill') {
      // The corpus goes into a 768-d space (the old default), so the reindex into 384-d fills a new one.
      const seedEnv = { ...env, CAIRN_EMBEDDER: 'hash:768' };
      const p = new CliProcess('ingest', opts.cli, ingestArgs, seedEnv, join(logDir, 'ingest.log'), true);
      running.push(p);
      const r = await Promise.race([p.exited, expiry(RUN_TIMEOUT_MS)]);
      if (!r) p.kill('SIGKILL');
      const how = await p.exited;
      setup = {
        exit: describeExit(how),
        seconds: secs(now() - p.startedAt),
        summary: p.stdout.trim().split('\n').pop() ?? '',
      };
      if (how.code !== 0)
        throw new Error(`the setup ingest failed (${setup.exit}): ${p.lastLines(5).join(' | ')}`);
      progress(`round ${round}: ingested ${n} memories in ${setup.seconds} s; now ${command.join(' ')}`);
    } else progress(`round ${round}: ${n} memories; cairn ${command.join(' ')}, killed ${opts.kills} times`);

    // The kills: the same command each time, SIGKILLed at a random point of the work (see killJitterMs).
    const fractions = Array.from({ length: opts.kills }, () => 0.05 + 0.9 * rand()).sort((x, y) => x - y);
    const attempts: Attempt[] = [];
    let killsLanded = 0;
    for (let a = 1; a <= opts.kills; a++) {
      const atStart = workDone(dataDir) ?? 0;
      // At least one batch of new work, so a kill never lands before the run has done anything.
      const target = Math.max(Math.ceil(fractions[a - 1]! * n), atStart + 1);
      const p = new CliProcess(`${verb}-${a}`, opts.cli, command, env, join(logDir, `${verb}.log`), true);
      running.push(p);
      let seen: number | null = null;
      let killAtMs: number | null = null;
      while (p.alive) {
        seen = workDone(dataDir) ?? seen;
        if (seen !== null && seen >= target) {
          await sleep(randomInt(rand, 0, opts.killJitterMs));
          if (p.alive) {
            seen = workDone(dataDir) ?? seen;
            killAtMs = Math.round(now() - p.startedAt);
            p.kill('SIGKILL');
          }
          break;
        }
        await Promise.race([p.exited, sleep(20)]);
      }
      const how = await p.exited;
      const killed = killAtMs !== null && how.signal === 'SIGKILL';
      const ms = Math.round(now() - p.startedAt);
      const lastProgress =
        p
          .lastLines()
          .filter((l) => PROGRESS_LINE.test(l))
          .at(-1) ?? null;
      const attempt: Attempt = {
        n: a,
        target,
        atStart,
        killed,
        killAtMs,
        seenAtKill: killed ? seen : null,
        exit: describeExit(how),
        ms,
        lastProgress,
        after: sqlCounts(dataDir),
      };
      attempts.push(attempt);
      const at = attempt.after;
      const state =
        'rows' in at
          ? `db after: ${at.rows} rows, vectors ${at.spaces.map((s) => `${s.space}${s.active ? '*' : ''} ${s.vectors}`).join(', ')}`
          : `db after: ${at.error}`;
      if (killed) {
        killsLanded++;
        progress(
          `round ${round}: ${verb} ${a} SIGKILLed ${killAtMs} ms after its start, at ${seen} ${workUnit} ` +
            `(target ${target}, ${atStart} at its start; ${lastProgress ?? 'no progress line yet'}); ${state}`,
        );
      } else {
        progress(
          `round ${round}: ${verb} ${a} ended (${attempt.exit}) in ${ms} ms before its kill (target ${target}); ${state}`,
        );
        if (how.code !== 0) {
          failures.push(
            `${verb} run ${a} after a kill failed: ${attempt.exit}: ${p.lastLines(3).join(' | ')}`,
          );
          progress(
            `round ${round}: ${verb} ${a} FAILED:\n${p
              .lastLines(10)
              .map((l) => `  | ${l}`)
              .join('\n')}`,
          );
        }
      }
    }
    if (killsLanded < opts.kills) failures.push(`only ${killsLanded} of ${opts.kills} kills landed mid-run`);

    // The run to completion.
    const p = new CliProcess(`${verb}-final`, opts.cli, command, env, join(logDir, `${verb}.log`), true);
    running.push(p);
    const r = await Promise.race([p.exited, expiry(RUN_TIMEOUT_MS)]);
    if (!r) p.kill('SIGKILL');
    const how = await p.exited;
    const final = {
      exit: r ? describeExit(how) : `hung (killed after ${RUN_TIMEOUT_MS} ms)`,
      seconds: secs(now() - p.startedAt),
      summary: p.stdout.trim().split('\n').pop() ?? '',
      stderrTail: p.lastLines(5),
    };
    progress(`round ${round}: final ${verb} ${final.exit} in ${final.seconds} s: ${final.summary}`);
    if (how.code !== 0)
      failures.push(`the final ${verb} ended with ${final.exit}: ${final.stderrTail.join(' | ')}`);
    if (scenario === 'ingest-kill') {
      try {
        const s = JSON.parse(final.summary) as {
          read: number;
          stored: number;
          unchanged: number;
          rejected: number;
        };
        if (s.read !== n || s.rejected !== 0 || s.stored + s.unchanged !== n)
          failures.push(
            `the final ingest read ${s.read}, stored ${s.stored}, unchanged ${s.unchanged}, rejected ${s.rejected} of ${n}`,
          );
      } catch {
        failures.push(`the final ingest printed no JSON summary: ${final.summary.slice(0, 200)}`);
      }
    }

    // reindex-kill: the new space must be the active one.
    let spaces: KillRunReport['spaces'] = null;
    if (scenario === 'reindex-kill') {
      try {
        const s = await runCli(
          'spaces',
          opts.cli,
          ['spaces', '--json', '--data-dir', dataDir],
          env,
          join(logDir, 'spaces.log'),
        );
        const all = (
          JSON.parse(s.stdout) as {
            spaces: Array<{ id: string; embedder: string | null; active: boolean; progress: unknown }>;
          }
        ).spaces;
        const target = all.find((x) => x.embedder === opts.embedder);
        spaces = {
          target: target?.id ?? `(no space with embedder ${opts.embedder})`,
          active: target?.active ?? false,
          progress: target?.progress ?? null,
          all: all.map((x) => ({ id: x.id, embedder: x.embedder, active: x.active, progress: x.progress })),
        };
        if (!spaces.active)
          failures.push(`the ${opts.embedder} space is not active: ${JSON.stringify(spaces.all)}`);
      } catch (err) {
        failures.push(`cairn spaces failed: ${(err as Error).message}`);
      }
    }

    // Convergence, through fresh `cairn stats --json` processes.
    const polls: StatsPoll[] = [];
    let convergedAfterS: number | null = null;
    const settleStart = now();
    for (;;) {
      const started = now();
      const t = secs(started - settleStart);
      const s = await statsPoll(opts.cli, dataDir, env, logDir, t);
      polls.push(s);
      progress(
        `round ${round}: +${t} s stored ${s.stored} embedded ${s.embedded} indexed ${s.indexed} pending ${s.pending} ` +
          `failed ${s.failed} (space ${s.space})${s.error ? ` error: ${s.error}` : ''}`,
      );
      if (s.stored === n && s.embedded === n && s.indexed === n) {
        convergedAfterS = t;
        break;
      }
      const nextAt = started + opts.pollS * 1000;
      if (nextAt - settleStart > opts.settleS * 1000) break;
      await sleep(Math.max(0, nextAt - now()));
    }
    const end = polls.at(-1) ?? null;
    if (convergedAfterS === null)
      failures.push(
        `stats never showed stored == embedded == indexed == ${n} (last: ${end?.stored}/${end?.embedded}/${end?.indexed})`,
      );
    if (scenario === 'reindex-kill' && spaces && end?.space !== spaces.target)
      failures.push(`stats reports space ${end?.space}, not ${spaces.target}`);

    const check = await runCheck(opts.cli, dataDir, env, logDir);
    if (!check.ok) failures.push(`cairn check: ${check.exit}${check.error ? ` ${check.error}` : ''}`);
    const sql = sqlCounts(dataDir);
    if ('rows' in sql && (sql.rows !== n || sql.distinctIds !== n))
      failures.push(`cairn.db holds ${sql.rows} live rows (${sql.distinctIds} distinct ids), expected ${n}`);

    const lookups = lookupsFor(memories, sampleIndexes(n, opts.sample));
    const search = (
      label: string,
      l: LookupSet['byText'],
      k: number,
      w: typeof VECTOR_ONLY | null,
      pool?: number,
    ) => searchCli(label, opts.cli, dataDir, env, work, logDir, l, k, w, pool);
    const probes: Probes = {
      sample: lookups.byText.length,
      ownTextVectorOnly: await search(
        'own-text-vector-only',
        lookups.byText,
        OWN_TEXT_K,
        VECTOR_ONLY,
        OWN_TEXT_POOL,
      ),
      tokenDefaults: await search('token-defaults', lookups.byToken, SEARCH_K, null),
      tokenVectorOnly: await search('token-vector-only', lookups.byToken, SEARCH_K, VECTOR_ONLY),
    };
    failures.push(...probeFailures(probes, opts.minRank1Share));

    return {
      round,
      scenario,
      memories: n,
      setup,
      attempts,
      killsLanded,
      final,
      spaces,
      polls,
      converged: convergedAfterS !== null,
      convergedAfterS,
      end,
      check,
      sql,
      search: probes,
      failures,
      logs: {
        dir: opts.logDir ? logDir : '(removed; pass --log-dir to keep)',
        warnOrWorse: tallyLogs(logDir),
      },
    };
  } finally {
    for (const p of running) p.kill('SIGKILL');
    await Promise.all(running.map((p) => p.exited));
    if (opts.keep) progress(`round ${round}: work folder kept: ${work}`);
    else rmSync(work, { recursive: true, force: true });
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

const probeLine = (s: Probes) =>
  `rank 1: own text vector-only ${s.ownTextVectorOnly.rank1}/${s.sample}, token defaults ${s.tokenDefaults.rank1}/${s.sample}` +
  ` (token vector-only ${s.tokenVectorOnly.rank1}/${s.sample})`;

function humanLine(r: ServeKillReport | KillRunReport): string {
  const verdict = r.failures.length === 0 ? 'PASS' : `FAIL (${r.failures.join('; ')})`;
  if (r.scenario === 'serve-kill') {
    const v = r.verify;
    const c = r.convergence;
    return (
      `serve-kill round ${r.round}: ${r.kills.length} kills, ${r.writes.attempted} posted, acknowledged ${r.writes.acknowledged}; ` +
      `found ${v.acknowledgedFound}, missing ${v.acknowledgedMissing}, duplicated ${v.duplicated}; ` +
      `unacknowledged found ${v.unacknowledgedFound}/${v.unacknowledgedPosted}; stats stored ${v.statsStored} ` +
      `(${v.statsMatches ? '=' : '≠'} ${v.distinctExisting} distinct existing); ` +
      `${c.afterS === null ? 'stats NOT converged' : `stats converged ${c.afterS} s`}, ${c.vectorReadyS === null ? 'vector leg NOT served' : `vector leg served ${c.vectorReadyS} s`} after the last start; check ${r.check.ok ? 'ok' : r.check.exit}; ` +
      `${probeLine(r.search)}; restart median ${r.restart?.medianMs ?? '–'} ms max ${r.restart?.maxMs ?? '–'} ms: ${verdict}`
    );
  }
  const e = r.end;
  return (
    `${r.scenario} round ${r.round}: ${r.killsLanded} kills landed in ${r.attempts.length} runs, final run ${r.final.exit} in ${r.final.seconds} s; ` +
    `stored ${e?.stored ?? '?'} embedded ${e?.embedded ?? '?'} indexed ${e?.indexed ?? '?'} of ${r.memories}` +
    `${r.converged ? ` (converged at +${r.convergedAfterS} s)` : ' (NOT converged)'}; ` +
    `${r.spaces ? `space ${r.spaces.target} ${r.spaces.active ? 'active' : 'NOT active'}; ` : ''}check ${r.check.ok ? 'ok' : r.check.exit}; ` +
    `${probeLine(r.search)}: ${verdict}`
  );
}

// ── Main ────────────────────────────────────────────────────────────────────────────────────────────────

async function main(): Promise<void> {
  const opts = parseOptions(process.argv.slice(2));
  const revision = revisionOf(opts.cli);
  const size = opts.scenario === 'serve-kill' ? opts.pool : opts.memories;
  const memories = makeCorpus(size, opts.seed);
  progress(
    `${opts.scenario}: ${opts.rounds} round(s), ${opts.kills} kills each, against ${opts.cli} (${revision})`,
  );
  const rounds: Array<ServeKillReport | KillRunReport> = [];
  const failedRounds: Array<{ round: number; error: string }> = [];
  for (let round = 1; round <= opts.rounds; round++) {
    try {
      rounds.push(
        opts.scenario === 'serve-kill'
          ? await runServeKill(round, opts, memories)
          : await runKillScenario(round, opts, memories),
      );
    } catch (err) {
      const error = (err as Error).message;
      failedRounds.push({ round, error });
      progress(`round ${round} failed: ${error}`);
    }
  }
  const summary = {
    date: new Date().toISOString(),
    command: ['node', 'bench/dist/faults-embedded.js', ...process.argv.slice(2)].join(' '),
    cli: opts.cli,
    revision,
    machine: {
      cpu: os.cpus()[0]?.model.trim() ?? 'unknown',
      cores: os.availableParallelism(),
      memoryGiB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
      node: process.version,
      loadAverage: os.loadavg()[0],
    },
    options: opts,
    probes: {
      namespace: MAIN_NAMESPACE,
      searchK: SEARCH_K,
      ownTextK: OWN_TEXT_K,
      ownTextCandidatePool: OWN_TEXT_POOL,
      serveRateLimitPerMinute: RATE_LIMIT_PER_MINUTE,
    },
    passed: failedRounds.length === 0 && rounds.every((r) => r.failures.length === 0),
    rounds,
    failedRounds,
  };
  const json = JSON.stringify(summary, null, 2);
  process.stdout.write(`${json}\n`);
  if (opts.out) writeFileSync(opts.out, `${json}\n`);
  for (const r of rounds) process.stderr.write(`${humanLine(r)}\n`);
  for (const f of failedRounds)
    process.stderr.write(`${opts.scenario} round ${f.round}: FAILED: ${f.error.replace(/\n\s*/g, ' ')}\n`);
  if (!summary.passed) process.exitCode = 1;
}

await main();
