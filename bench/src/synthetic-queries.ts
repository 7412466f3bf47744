// The query mix of the speed benchmark. Shares follow what coding agents send to a memory tool: mostly a
// few topical words, then identifiers and paths, then chatty questions, a few one-word probes and filtered
// lookups. Queries are built from the corpus itself so most of them have real matches.
import { isStopWord, type SearchFilters, type SearchRequest } from '@cairn/core';
import { pick, type Random, randomInt, seededRandom } from './seeded-random.js';
import type { SyntheticCorpus } from './synthetic-corpus.js';

export const QUERY_CLASSES = ['content', 'code', 'question', 'common', 'filtered'] as const;
export type QueryClass = (typeof QUERY_CLASSES)[number];

/** Share of each class in the mix; they sum to 1. */
export const QUERY_MIX: Readonly<Record<QueryClass, number>> = Object.freeze({
  content: 0.4,
  code: 0.2,
  question: 0.2,
  common: 0.1,
  filtered: 0.1,
});

export const QUERY_CLASS_LABEL: Readonly<Record<QueryClass, string>> = Object.freeze({
  content: '2–4 content words',
  code: 'identifier / path',
  question: 'natural-language question',
  common: 'single very common word',
  filtered: 'filtered (kind / session / time)',
});

export interface BenchQuery {
  cls: QueryClass;
  namespace: string;
  query: string;
  filters?: SearchFilters;
}

const QUESTION_TEMPLATES: ReadonlyArray<(w: string, v: string, id: string) => string> = [
  (w) => `what did the user say about the ${w} error in the test file`,
  (w, _v, id) => `how did we fix the ${w} issue in ${id}?`,
  (w, v) => `why is the ${w} test failing again after the ${v} change`,
  (_w, _v, id) => `where is the function ${id} defined and what does it do`,
  (w, v) => `what was the error when the user ran the ${w} build with ${v}`,
  (w, v) => `did the assistant change the ${w} file before or after the ${v} test was fixed`,
  (w, v) => `what do we know about ${w} and ${v}`,
  (w) => `can you remind me what the user wanted to do with the ${w} in this project`,
  (w, _v, id) => `is there a note about the ${w} problem that was in ${id} last week`,
];

const COMMON_PROBES = 8;

/** Plain lower-case content words of a memory's text (no identifiers, no stop words). */
function contentWordsOf(text: string): string[] {
  return [...new Set(text.split(/\s+/).map((t) => t.replace(/[.?:`]+$/g, '').replace(/^`/, '')))].filter(
    (t) => /^[a-z][a-z0-9]+$/.test(t) && !isStopWord(t),
  );
}

function identifiersOf(text: string): string[] {
  return text
    .split(/\s+/)
    .map((t) => t.replace(/[.?:`]+$/g, '').replace(/^`/, ''))
    .filter(
      (t) =>
        /[A-Z_/]/.test(t) &&
        !/^(User|Assistant|Session|Ran|Read|Edited|Searched|Opened|Listed|Created|Deleted)$/.test(t),
    );
}

function sampleDistinct(rand: Random, items: readonly string[], n: number): string[] {
  const pool = [...items];
  const out: string[] = [];
  while (out.length < n && pool.length > 0) out.push(pool.splice(Math.floor(rand() * pool.length), 1)[0]!);
  return out;
}

function contentQuery(rand: Random, corpus: SyntheticCorpus, source: Source): string {
  const want = randomInt(rand, 2, 4);
  const words = sampleDistinct(rand, contentWordsOf(source.text), want);
  while (words.length < want) words.push(corpus.words[corpus.wordSampler.sample(rand)]!);
  return words.join(' ');
}

function codeQuery(rand: Random, corpus: SyntheticCorpus, source: Source): string {
  const own = identifiersOf(source.text);
  const id =
    own.length > 0 && rand() < 0.6
      ? pick(rand, own)
      : corpus.identifiers[corpus.identifierSampler.sample(rand)]!;
  if (rand() < 0.3) {
    const w = contentWordsOf(source.text);
    return `${id} ${w.length > 0 ? pick(rand, w) : 'error'}`;
  }
  return id;
}

function questionQuery(rand: Random, corpus: SyntheticCorpus, source: Source): string {
  const words = contentWordsOf(source.text);
  const w = words.length > 0 ? pick(rand, words) : corpus.words[corpus.wordSampler.sample(rand)]!;
  const v = words.length > 1 ? pick(rand, words) : corpus.words[corpus.wordSampler.sample(rand)]!;
  const ids = identifiersOf(source.text);
  const id = ids.length > 0 ? pick(rand, ids) : corpus.identifiers[corpus.identifierSampler.sample(rand)]!;
  return pick(rand, QUESTION_TEMPLATES)(w, v, id);
}

function filteredQuery(rand: Random, corpus: SyntheticCorpus, source: Source): BenchQuery {
  const query = contentQuery(rand, corpus, source);
  const u = rand();
  const filters: SearchFilters = {};
  const DAY = 86_400_000;
  if (u < 0.3) filters.kinds = [source.kind];
  else if (u < 0.6) filters.sessions = [source.session];
  else if (u < 0.85) {
    // A one- to four-week window holding the source memory ("what happened around then").
    const width = randomInt(rand, 7, 28) * DAY;
    filters.since = source.ts - Math.floor(rand() * width);
    filters.until = filters.since + width;
  } else {
    filters.kinds = [source.kind === 'turn' ? 'observation' : source.kind];
    filters.since = source.ts - 60 * DAY;
  }
  return { cls: 'filtered', namespace: source.namespace, query, filters };
}

/**
 * `count` queries against `namespaces` (the main namespace by default), classes interleaved in a seeded
 * order with exact shares, so any prefix of the list is itself close to the mix.
 */
export function makeQueries(
  corpus: SyntheticCorpus,
  count: number,
  seed: number,
  namespaces?: readonly string[],
): BenchQuery[] {
  const rand = seededRandom(seed);
  const targets = new Set(namespaces ?? [corpus.namespaces[0]!.namespace]);
  const sources = corpus.memories.filter((m) => targets.has(m.namespace));
  const classes: QueryClass[] = [];
  for (const cls of QUERY_CLASSES)
    for (let i = 0; i < Math.round(count * QUERY_MIX[cls]); i++) classes.push(cls);
  while (classes.length < count) classes.push('content');
  classes.length = count;
  for (let i = classes.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [classes[i], classes[j]] = [classes[j]!, classes[i]!];
  }
  return classes.map((cls) => {
    const source = pick(rand, sources);
    if (cls === 'filtered') return filteredQuery(rand, corpus, source);
    const query = QUERY_TEXT[cls](rand, corpus, source);
    return { cls, namespace: source.namespace, query };
  });
}

type Source = SyntheticCorpus['memories'][number];

const QUERY_TEXT: Readonly<
  Record<Exclude<QueryClass, 'filtered'>, (rand: Random, corpus: SyntheticCorpus, source: Source) => string>
> = {
  content: contentQuery,
  code: codeQuery,
  question: questionQuery,
  common: (rand, corpus) => corpus.words[Math.floor(rand() * COMMON_PROBES)]!,
};

export function toRequest(q: BenchQuery, extra: Partial<SearchRequest> = {}): SearchRequest {
  const req: SearchRequest = { namespace: q.namespace, query: q.query, k: 5, ...extra };
  if (q.filters) req.filters = q.filters;
  return req;
}
