// A deterministic corpus of coding-agent memories for the speed benchmark. Nothing is downloaded: words,
// identifiers and sessions come from a seeded generator, so every run with the same seed and size is
// byte-identical and results from two machines are comparable.
import { isStopWord, type MemoryInput } from '@cairn/core';
import { pick, type Random, randomInt, seededRandom, ZipfSampler } from './seeded-random.js';

/**
 * Real words, most frequent first: they take the top Zipf ranks, so "user", "error", "file", "test" and
 * "function" each appear in a large share of memories, as they do in real agent transcripts.
 */
const COMMON_WORDS =
  `user error file test function code change run build fix type config value data update issue
call return request server module package import string check add need use work make new line name path output
input version branch commit command script log message response client api endpoint route handler query database
table column schema migration index key cache session token auth login password permission role account service
worker queue job task event listener callback promise async await loop array object map list set field property
method class interface component prop state hook render page view template style layout button form modal input
dependency install lint format compile bundle deploy release environment variable secret docker container image
port host network timeout retry limit memory leak performance slow fast latency throughput benchmark profile trace
debug breakpoint stack frame exception warning failure crash bug regression patch refactor rename move delete remove
create read write open close parse serialize validate sanitize encode decode hash encrypt sign verify upload download
stream buffer chunk batch record row document search filter sort page cursor offset count total result match score
rank vector embedding model prompt agent tool context window summary note fact observation decision plan step goal
review comment approve merge conflict rebase pull push tag ci pipeline workflow action runner cron schedule trigger
webhook notification email payment invoice order customer product price cart checkout inventory report export csv
json yaml markdown html css sql graphql rest grpc http https socket redis postgres sqlite mongo kafka s3 bucket
lambda cluster node pod replica shard partition lock transaction commit rollback snapshot backup restore monitor
alert metric dashboard latency error_rate uptime incident outage rollout canary feature flag experiment cohort
analytics tracking consent privacy gdpr audit compliance license readme docs changelog typo wording example sample
fixture mock stub spy snapshot coverage flaky timeout assertion expect describe suite spec unit integration e2e
browser chrome playwright cypress jest vitest mocha pytest cargo rustc tsc node deno bun npm pnpm yarn pip poetry
venv python rust golang java kotlin swift typescript javascript react vue svelte angular next nuxt vite webpack
esbuild babel eslint prettier biome turbo monorepo workspace folder directory symlink permissions chmod ssh key
certificate tls proxy cors header cookie csrf xss injection escape unicode utf8 locale timezone date timestamp
duration interval delay debounce throttle backoff jitter idempotent duplicate race deadlock mutex semaphore thread
process signal exit status code stdout stderr terminal shell bash zsh alias path env dotenv override default option`
    .split(/\s+/)
    .filter((w) => /^[a-z][a-z0-9]*$/.test(w) && !isStopWord(w));

const VERBS =
  `get set parse load save handle create update delete fetch build validate resolve render format compute
apply flush open close read write init sync merge emit dispatch register normalize serialize retry schedule encode
decode find list count map filter reduce start stop reset refresh check ensure`.split(/\s+/);

const NOUNS =
  `user session config token request response cache query index file path error event message queue worker
job schema record memory namespace vector embedding search result option handler route client server connection
stream buffer batch store model payload header cookie auth permission role account order invoice price product cart
item list map node tree graph edge timer retry limit page cursor metric report task plan`.split(/\s+/);

const CLASS_SUFFIXES =
  `Manager Service Handler Store Client Router Error Config Provider Factory Builder Adapter Controller
Validator Parser Cache Queue Worker Context Registry`.split(/\s+/);

const DIRS = [
  'src',
  'lib',
  'app',
  'packages/core/src',
  'packages/api/src',
  'apps/web/src',
  'test',
  'scripts',
];
const SUBDIRS =
  `auth api routes db models utils hooks components services store jobs middleware cli core workers
billing search ingest config`.split(/\s+/);
const EXTENSIONS = ['.ts', '.ts', '.ts', '.tsx', '.js', '.json', '.sql', '.yml', '.py', '.md', '.test.ts'];
const ERROR_CODES = `ECONNREFUSED ENOENT EADDRINUSE ETIMEDOUT EACCES TS2345 TS2322 TS7006 ERR_MODULE_NOT_FOUND
SQLITE_BUSY ERR_REQUIRE_ESM E401 E404 OOMKilled SIGTERM`.split(/\s+/);

/**
 * Function words in rough English frequency order (all in core's STOP_WORDS). They make up about a third
 * of the tokens of agent prose and are what natural-language queries are full of.
 */
const FUNCTION_WORDS =
  `the to a and in of is it for that with on was this we i be not but as at from by are have so
when after before now then there which what should can do did has will if into all any also just about because
been were would could our they you my its how why where while than`.split(/\s+/);

const ONSETS = `b br c ch cl d dr f fl g gr h j k l m n p pl pr r s sh sk st t th tr v w z qu sp`.split(
  /\s+/,
);
const NUCLEI = ['a', 'e', 'i', 'o', 'u', 'ai', 'ea', 'ou', 'io', 'y'];
const CODAS = ['', '', 'n', 'r', 's', 'l', 't', 'nd', 'st', 'ck', 'm', 'x', 'ng'];

const KINDS_IN_SESSION: ReadonlyArray<readonly [string, number]> = [
  ['turn', 0.5],
  ['observation', 0.32],
  ['fact', 0.1],
  ['prompt', 0.08],
];
const AGENTS = ['claude-code', 'cursor', 'aider', 'codex'];
const TAGS = ['bug', 'refactor', 'ci', 'perf', 'docs', 'security', 'infra', 'tests'];
const OBSERVATION_LEADS = ['Ran', 'Read', 'Edited', 'Searched', 'Opened', 'Listed', 'Created', 'Deleted'];

export interface CorpusOptions {
  /** Memories in the main namespace. @defaultValue 100_000 */
  mainDocs: number;
  /** Seed of every random choice. @defaultValue 42 */
  seed: number;
  /** Distinct content words; the tail beyond COMMON_WORDS is pronounceable pseudo-words. @defaultValue 4_000 */
  vocabularySize: number;
  /** Distinct code identifiers and paths. @defaultValue 6_000 */
  identifierCount: number;
  /** Zipf exponent of content words and identifiers. @defaultValue 1.0 */
  zipfS: number;
  /** Memories per session, drawn uniformly from this range (mean 20). @defaultValue [12, 28] */
  sessionSize: readonly [number, number];
  /** Timestamps span this many days before `endTs`. @defaultValue 180 */
  spanDays: number;
  /** Newest timestamp (epoch ms); fixed so the corpus does not depend on the clock. @defaultValue 2026-06-30 */
  endTs: number;
  /** Other tenants, each holding this share of `mainDocs` (at least 500 memories). @defaultValue 0.02 */
  smallNamespaceShare: number;
}

export const DEFAULT_CORPUS_OPTIONS: Readonly<CorpusOptions> = Object.freeze({
  mainDocs: 100_000,
  seed: 42,
  vocabularySize: 4_000,
  identifierCount: 6_000,
  zipfS: 1.0,
  sessionSize: Object.freeze([12, 28] as const),
  spanDays: 180,
  endTs: Date.UTC(2026, 5, 30),
  smallNamespaceShare: 0.02,
});

export const MAIN_NAMESPACE = 'acme/platform';
export const SMALL_NAMESPACES = ['acme/web', 't:42', 'oss/cairn-docs'] as const;

/** A session as the query generator sees it. */
export interface SessionInfo {
  namespace: string;
  id: string;
  startTs: number;
  endTs: number;
  /** Index of its first memory in `memories`. */
  first: number;
  count: number;
}

export interface SyntheticCorpus {
  options: CorpusOptions;
  /** Every memory, in time order, ready for `engine.ingest`. Each carries an explicit id. */
  memories: Array<
    MemoryInput & { id: string; namespace: string; session: string; ts: number; text: string; kind: string }
  >;
  sessions: SessionInfo[];
  namespaces: Array<{ namespace: string; memories: number }>;
  /** Content vocabulary, most frequent first. */
  words: string[];
  /** Identifiers and paths, most frequent first. */
  identifiers: string[];
  wordSampler: ZipfSampler;
  identifierSampler: ZipfSampler;
  /** Share of main-namespace memories containing each of the first few words, measured on the corpus. */
  commonWordShare: Array<{ word: string; share: number }>;
  meanWords: number;
}

const MS_PER_MINUTE = 60_000;
const MS_PER_DAY = 86_400_000;

/** Pronounceable pseudo-words fill the rare tail of the vocabulary (names, jargon, typos of real text). */
function pseudoWords(rand: Random, count: number, taken: Set<string>): string[] {
  const out: string[] = [];
  while (out.length < count) {
    const syllables = randomInt(rand, 2, 3);
    let w = '';
    for (let i = 0; i < syllables; i++)
      w += pick(rand, ONSETS) + pick(rand, NUCLEI) + (i === syllables - 1 ? pick(rand, CODAS) : '');
    if (w.length < 4 || taken.has(w) || isStopWord(w)) continue;
    taken.add(w);
    out.push(w);
  }
  return out;
}

const cap = (w: string) => w.charAt(0).toUpperCase() + w.slice(1);

function identifierPool(rand: Random, count: number): string[] {
  const seen = new Set<string>();
  const out: string[] = [];
  const push = (id: string) => {
    if (!seen.has(id)) {
      seen.add(id);
      out.push(id);
    }
  };
  // Error codes are few and recur constantly, so they take spread-out top ranks.
  for (const code of ERROR_CODES) push(code);
  let guard = 0;
  while (out.length < count && guard++ < count * 50) {
    const u = rand();
    const noun = () => pick(rand, NOUNS);
    if (u < 0.35) push(pick(rand, VERBS) + cap(noun()) + (rand() < 0.4 ? cap(noun()) : ''));
    else if (u < 0.55) push(cap(noun()) + (rand() < 0.5 ? cap(noun()) : '') + pick(rand, CLASS_SUFFIXES));
    else if (u < 0.7) push(`${pick(rand, VERBS)}_${noun()}${rand() < 0.5 ? `_${noun()}` : ''}`);
    else if (u < 0.95) {
      const file = rand() < 0.5 ? `${noun()}-${noun()}` : `${pick(rand, VERBS)}-${noun()}`;
      push(`${pick(rand, DIRS)}/${pick(rand, SUBDIRS)}/${file}${pick(rand, EXTENSIONS)}`);
    } else
      push(`${noun().toUpperCase()}_${pick(rand, ['LIMIT', 'TIMEOUT_MS', 'MAX', 'URL', 'TTL', 'SIZE'])}`);
  }
  // Shuffle so the error codes are not all at the very top (Fisher–Yates on ranks 0..63).
  for (let i = Math.min(63, out.length - 1); i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

interface Topic {
  words: string[];
  identifiers: string[];
}

/** Text of `length` tokens: function words, content words (a third from the session topic) and identifiers. */
function tokens(rand: Random, corpus: WordSource, topic: Topic, length: number): string[] {
  const out: string[] = [];
  for (let i = 0; i < length; i++) {
    const u = rand();
    let t: string;
    if (u < 0.36) t = FUNCTION_WORDS[corpus.functionSampler.sample(rand)]!;
    else if (u < 0.46) {
      t =
        rand() < 0.5
          ? pick(rand, topic.identifiers)
          : corpus.identifiers[corpus.identifierSampler.sample(rand)]!;
      if (rand() < 0.3) t = `\`${t}\``;
    } else t = rand() < 0.3 ? pick(rand, topic.words) : corpus.words[corpus.wordSampler.sample(rand)]!;
    // Sentence ends every dozen tokens or so; punctuation exercises the tokenizer, not the ranking.
    if (rand() < 0.08) t += rand() < 0.85 ? '.' : rand() < 0.5 ? '?' : ':';
    out.push(t);
  }
  return out;
}

interface WordSource {
  words: string[];
  identifiers: string[];
  wordSampler: ZipfSampler;
  identifierSampler: ZipfSampler;
  functionSampler: ZipfSampler;
}

function memoryText(
  rand: Random,
  g: WordSource,
  topic: Topic,
  kind: string,
  length: number,
): { text: string; title?: string } {
  const body = tokens(rand, g, topic, length);
  switch (kind) {
    case 'turn':
      return { text: `${rand() < 0.5 ? 'User:' : 'Assistant:'} ${body.join(' ')}` };
    case 'observation':
      return { text: `${pick(rand, OBSERVATION_LEADS)} ${pick(rand, topic.identifiers)}: ${body.join(' ')}` };
    case 'fact':
      return {
        title: `${cap(pick(rand, topic.words))} ${pick(rand, topic.words)} ${pick(rand, topic.identifiers)}`,
        text: body.join(' '),
      };
    case 'summary':
      return { title: `Session summary: ${topic.words.slice(0, 3).join(', ')}`, text: body.join(' ') };
    default:
      return { text: body.join(' ') };
  }
}

function sessionKind(rand: Random): string {
  let u = rand();
  for (const [kind, share] of KINDS_IN_SESSION) {
    u -= share;
    if (u < 0) return kind;
  }
  return 'turn';
}

/** Generates the whole corpus in memory (about 30 MB of strings for 100k memories). */
export function generateCorpus(opts: Partial<CorpusOptions> = {}): SyntheticCorpus {
  const o: CorpusOptions = { ...DEFAULT_CORPUS_OPTIONS, ...opts };
  const rand = seededRandom(o.seed);
  const taken = new Set(COMMON_WORDS);
  const words = [...new Set(COMMON_WORDS)];
  words.push(...pseudoWords(rand, Math.max(0, o.vocabularySize - words.length), taken));
  const identifiers = identifierPool(rand, o.identifierCount);
  const g: WordSource = {
    words,
    identifiers,
    wordSampler: new ZipfSampler(words.length, o.zipfS),
    identifierSampler: new ZipfSampler(identifiers.length, o.zipfS),
    functionSampler: new ZipfSampler(FUNCTION_WORDS.length, 0.9),
  };

  const smallDocs = Math.max(500, Math.round(o.mainDocs * o.smallNamespaceShare));
  const plan = [
    { namespace: MAIN_NAMESPACE, docs: o.mainDocs },
    ...SMALL_NAMESPACES.map((namespace) => ({ namespace, docs: smallDocs })),
  ];
  const start = o.endTs - o.spanDays * MS_PER_DAY;

  // Sessions first (namespace, size, start time), then memories in global time order.
  const drafts: Array<{ namespace: string; id: string; size: number; startTs: number; agent: string }> = [];
  for (const { namespace, docs } of plan) {
    let left = docs;
    let n = 0;
    while (left > 0) {
      const size = Math.min(left, randomInt(rand, o.sessionSize[0], o.sessionSize[1]));
      // Leave room at the end of the span so a session never runs past endTs (at most 28 × 6 min).
      const startTs = start + Math.floor(rand() * (o.spanDays * MS_PER_DAY - 4 * 60 * MS_PER_MINUTE));
      drafts.push({
        namespace,
        id: `${namespace.replace(/[^a-z0-9]/gi, '')}-s${n++}`,
        size,
        startTs,
        agent: pick(rand, AGENTS),
      });
      left -= size;
    }
  }
  drafts.sort((a, b) => a.startTs - b.startTs || a.id.localeCompare(b.id));

  const memories: SyntheticCorpus['memories'] = [];
  const sessions: SessionInfo[] = [];
  let wordTotal = 0;
  for (const d of drafts) {
    const topic: Topic = {
      // Topic words sit in the middle of the frequency range: specific enough to find a session by.
      words: Array.from({ length: 6 }, () => words[randomInt(rand, 30, Math.min(words.length - 1, 1500))]!),
      identifiers: Array.from({ length: 3 }, () => identifiers[g.identifierSampler.sample(rand)]!),
    };
    const first = memories.length;
    let ts = d.startTs;
    for (let i = 0; i < d.size; i++) {
      const kind = i === d.size - 1 && d.size > 1 ? 'summary' : sessionKind(rand);
      // 10–59 words, skewed short (mean ≈ 29): most turns are a sentence or two, a few are paragraphs.
      const length = 10 + Math.floor(50 * rand() ** 1.6);
      const { text, title } = memoryText(rand, g, topic, kind, length);
      wordTotal += length;
      const m: SyntheticCorpus['memories'][number] = {
        id: `${d.id}-m${i}`,
        namespace: d.namespace,
        kind,
        text,
        session: d.id,
        agent: d.agent,
        ts,
      };
      if (title) m.title = title;
      if (rand() < 0.15) m.tags = [pick(rand, TAGS)];
      if (kind === 'fact' || kind === 'summary') m.importance = 0.7;
      memories.push(m);
      ts += randomInt(rand, 20, 360) * 1000;
    }
    sessions.push({ namespace: d.namespace, id: d.id, startTs: d.startTs, endTs: ts, first, count: d.size });
  }

  const main = memories.filter((m) => m.namespace === MAIN_NAMESPACE);
  const commonWordShare = words.slice(0, 8).map((word) => {
    const re = new RegExp(`\\b${word}\\b`, 'i');
    return { word, share: main.filter((m) => re.test(m.text)).length / Math.max(1, main.length) };
  });
  return {
    options: o,
    memories,
    sessions,
    namespaces: plan.map((p) => ({ namespace: p.namespace, memories: p.docs })),
    words,
    identifiers,
    wordSampler: g.wordSampler,
    identifierSampler: g.identifierSampler,
    commonWordShare,
    meanWords: wordTotal / Math.max(1, memories.length),
  };
}
