import { codeParts, isStopWord, type KeyedMemory, tokenize } from '@cairn/core';
import { stemmer } from 'stemmer';
import type { FusedCandidate } from './fuse-candidates.js';

/**
 * The close calls of a search, the only memories age may reorder: candidates that some leg ranks in its
 * top `depth` and that cover as much of the query's words as the best of them (within `margin`). Coverage is the
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
  opts: { margin: number; depth: number },
): Set<number> {
  const contenders = fused.filter(
    (c) =>
      (c.bm25Rank !== null && c.bm25Rank <= opts.depth) || (c.vecRank !== null && c.vecRank <= opts.depth),
  );
  const peers = new Set<number>();
  if (contenders.length === 0) return peers;
  const words = queryWords(query);
  const weights = idf([...words.values()]);
  const weightOf = new Map<string, number>();
  for (const [stem, word] of words) weightOf.set(stem, Math.max(weights.get(word) ?? 1, 1e-6));
  const total = [...weightOf.values()].reduce((a, b) => a + b, 0);
  const coverage = new Map<number, number>();
  let best = 0;
  for (const c of contenders) {
    const m = records.get(c.key);
    if (!m || total === 0) continue;
    const stems = memoryStems(m);
    let covered = 0;
    for (const [stem, w] of weightOf) if (stems.has(stem)) covered += w;
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

/** The query's searchable words, stemmed (stem → one surface form, for the idf lookup). */
function queryWords(query: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const w of [...tokenize(query), ...tokenize(codeParts(query))]) {
    if (isStopWord(w)) continue;
    const s = stemmer(w);
    if (!out.has(s)) out.set(s, w);
  }
  return out;
}

function memoryStems(m: KeyedMemory): Set<string> {
  const text = m.title ? `${m.title} ${m.text}` : m.text;
  const out = new Set<string>();
  for (const w of [...tokenize(text), ...tokenize(codeParts(text))]) out.add(stemmer(w));
  return out;
}
