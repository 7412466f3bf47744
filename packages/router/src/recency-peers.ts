import { codeParts, isQueryStopWord, type KeyedMemory, tokenize } from '@cairn/core';
import { stemmer } from 'stemmer';
import type { FusedCandidate } from './fuse-candidates.js';

/**
 * The close calls of a search, the only memories age may reorder (a named time's window, by contrast,
 * counts for every candidate: apply-recency.ts): the contenders (below) that cover as
 * much of the query's words as the best of them (within `margin`). Coverage is the
 * idf-weighted share of the query's (stemmed, stop-word-free) words that a memory contains: "CI provider"
 * is covered by every memory that states the CI provider, long or short, however often it repeats a word,
 * and only a little by a turn that says "CI" in passing. BM25 would not do: its length and term-frequency
 * parts make two statements of one fact differ by half, as much as a statement and a passing mention.
 * When no contender shares a word with the query (a semantic leg's finds), coverage cannot tell them
 * apart, and the contenders within the margin of the best cosine are the peers.
 */
export function findRecencyPeers(
  fused: readonly FusedCandidate[],
  query: string,
  records: ReadonlyMap<number, KeyedMemory>,
  idf: (words: readonly string[]) => ReadonlyMap<string, number>,
  opts: { margin: number; depth: number; weight: number },
): Set<number> {
  const contenders = recencyContenders(fused, opts.depth, opts.weight);
  const peers = new Set<number>();
  if (contenders.length < 2) return peers;
  const words = queryWords(query);
  const weights = idf([...words.values()]);
  const weightOf = new Map<string, number>();
  for (const [stem, word] of words) weightOf.set(stem, Math.max(weights.get(word) ?? 1, 1e-6));
  const total = [...weightOf.values()].reduce((a, b) => a + b, 0);
  const heads = new Set([...weightOf.keys()].map((stem) => stem.slice(0, 2)));
  const coverage = new Map<number, number>();
  let best = 0;
  for (const c of contenders) {
    const m = records.get(c.key);
    if (!m || total === 0) continue;
    let covered = 0;
    for (const stem of stemsFound(m, weightOf, heads)) covered += weightOf.get(stem)!;
    coverage.set(c.key, covered / total);
    best = Math.max(best, covered / total);
  }
  if (best > 0) {
    for (const [key, cov] of coverage) if (cov >= best * (1 - opts.margin)) peers.add(key);
    return peers;
  }
  const cosines = contenders.filter((c) => c.cosine !== null).map((c) => c.cosine!);
  if (cosines.length === 0) return peers;
  const top = Math.max(...cosines);
  const low = Math.min(...fused.filter((c) => c.cosine !== null).map((c) => c.cosine!));
  const floor = top - (top - low) * opts.margin;
  for (const c of contenders) if (c.cosine !== null && c.cosine >= floor) peers.add(c.key);
  return peers;
}

/**
 * The candidates that can be peers: some leg ranks them in its top `depth`, and their relevance before age
 * is within `1 − weight` of the best's, so that age could lift them to the top. The rest keep their
 * relevance order (their factor is `1 − w` alike), and their texts are never read.
 */
export function recencyContenders(
  fused: readonly FusedCandidate[],
  depth: number,
  weight: number,
): FusedCandidate[] {
  let best = 0;
  for (const c of fused) best = Math.max(best, c.score);
  const floor = best * (1 - weight);
  return fused.filter(
    (c) =>
      c.score >= floor &&
      ((c.bm25Rank !== null && c.bm25Rank <= depth) || (c.vecRank !== null && c.vecRank <= depth)),
  );
}

/** The query's searchable words, stemmed (stem → one surface form, for the idf lookup). */
function queryWords(query: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const w of [...tokenize(query), ...tokenize(codeParts(query))]) {
    if (isQueryStopWord(w)) continue;
    const s = stem(w);
    if (!out.has(s)) out.set(s, w);
  }
  return out;
}

/**
 * Which of the query's stems a memory contains. Porter only rewrites a word's ending, so a word whose first
 * two letters (`heads`) start no query stem cannot stem to one: most of a memory's words are never stemmed.
 */
function stemsFound(
  m: KeyedMemory,
  queryStems: ReadonlyMap<string, number>,
  heads: ReadonlySet<string>,
): Set<string> {
  const text = m.title ? `${m.title} ${m.text}` : m.text;
  const found = new Set<string>();
  const check = (words: readonly string[]) => {
    for (const w of words) {
      if (!heads.has(w.slice(0, 2))) continue;
      const s = stem(w);
      if (queryStems.has(s)) found.add(s);
    }
  };
  check(tokenize(text));
  // Splitting identifiers is most of the cost, and prose has none to split.
  if (COMPOUND.test(text)) check(tokenize(codeParts(text)));
  return found;
}

/** A token codeParts would split: snake_case, camelCase, or letters beside digits. */
const COMPOUND = /_|\p{Ll}\p{Lu}|\p{Lu}{2}\p{Ll}|\p{L}\p{N}|\p{N}\p{L}/u;

/** Words → stems, memoised: a namespace's vocabulary repeats. Cleared when full, so bounded. */
const STEM_CACHE_MAX = 100_000;
const stems = new Map<string, string>();

function stem(word: string): string {
  let s = stems.get(word);
  if (s === undefined) {
    if (stems.size >= STEM_CACHE_MAX) stems.clear();
    s = stemmer(word);
    stems.set(word, s);
  }
  return s;
}
