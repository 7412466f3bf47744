import {
  type DiversifyResult,
  diversify,
  dot,
  type KeyedMemory,
  type MemorySource,
  tagAwareRedundancy,
  type VectorLeg,
} from '@cairn/core';
import type { FusedCandidate } from './fuse-candidates.js';

/**
 * The head first looked at, in multiples of k: a full page almost always comes from it, and MMR, which
 * weighs every head candidate against every pick, stays at O(k² · 4).
 */
const HEAD_PER_K = 4;

/** How much a head that could not fill the page grows by each time (×4: a few rounds reach the pool). */
const HEAD_GROWTH = 4;

/**
 * The most a grown head holds. Each round weighs the whole head again (MMR on: 456 ms at 10,000 fused
 * candidates with routes, a review measured); a burst of copies deeper than this waits for the
 * consolidation job, which merges it.
 */
const MAX_GROWN_HEAD = 1_600;

/**
 * MMR and near-duplicate suppression need vectors; only the head of the fused list is considered (k × 4),
 * since a full page comes from it. When near-duplicates leave the page short there (a burst of copies
 * written before the consolidation job merged them), the head grows, ×4 at a time, until the page is full
 * or the fused list ends: the copies must not hide distinct matches ranked below them. The walk is bounded
 * by the fused list, at most `candidatePool` per leg. A page the first head fills is chosen exactly as
 * before. Without a vector leg the order stands.
 */
export function diversifyHead(
  fused: FusedCandidate[],
  opts: {
    k: number;
    namespace: string;
    mmrLambda: number;
    mmrTagWeight: number;
    duplicateThreshold: number;
  },
  vectorLeg: VectorLeg | null,
  memories: MemorySource,
): DiversifyResult & { headRecords: Map<number, KeyedMemory> | null } {
  const firstHead = Math.min(fused.length, opts.k * HEAD_PER_K);
  const mmr = opts.mmrLambda < 1;
  // Tags count toward redundancy only in MMR, and need no vector leg.
  const byTags = mmr && opts.mmrTagWeight > 0;
  const needVectors = !!vectorLeg && (mmr || opts.duplicateThreshold <= 1);
  if (!(needVectors || byTags) || firstHead < 2) {
    return {
      selected: fused.slice(0, opts.k).map((_, i) => i),
      duplicates: new Map<number, number>(),
      headRecords: null,
    };
  }
  // Vectors are read lazily, a few at a time: with MMR off only the head up to the k-th kept hit is compared.
  // Past the first head (a page short of distinct hits), batches grow with the distance walked, so a long
  // run of copies costs a few reads, not one per k.
  const vectors = new Map<number, Float32Array | null>();
  const vectorAt = (i: number) => {
    const key = fused[i]!.key;
    if (!needVectors) return null;
    if (!vectors.has(key)) {
      const batchSize = i < firstHead ? opts.k + 2 : Math.max(opts.k + 2, i - firstHead + 1);
      const batch = fused
        .slice(i, i + batchSize)
        .map((c) => c.key)
        .filter((k) => !vectors.has(k));
      const got = vectorLeg!.vectorsFor(opts.namespace, batch);
      for (const k of batch) vectors.set(k, got.get(k) ?? null);
    }
    return vectors.get(key) ?? null;
  };
  // The head's tags, read once when tags count (and for what a grown head adds); the page reuses these records.
  const headRecords = byTags ? new Map<number, KeyedMemory>() : null;
  const readTags = (from: number, to: number) => {
    if (!headRecords) return;
    const got = memories.liveByKeys(
      opts.namespace,
      fused.slice(from, to).map((c) => c.key),
    );
    for (const [key, m] of got) headRecords.set(key, m);
  };
  const tagsAt = (i: number) => headRecords?.get(fused[i]!.key)?.tags ?? [];
  const cosine = (i: number, j: number) => {
    const a = vectorAt(i);
    const b = vectorAt(j);
    return a && b ? dot(a, b) : null;
  };
  const redundancy = byTags
    ? (i: number, j: number, s: number | null) =>
        tagAwareRedundancy(s, tagsAt(i), tagsAt(j), opts.mmrTagWeight)
    : cosine;
  const limit = Math.min(fused.length, Math.max(firstHead, MAX_GROWN_HEAD));
  let headSize = firstHead;
  readTags(0, headSize);
  for (;;) {
    // Relevance order is kept by the head, so a grown head picks what the smaller one picked, then more
    // (MMR on: the whole grown head is weighed again).
    const picked = diversify(
      fused.slice(0, headSize).map((c) => c.score),
      cosine,
      { k: opts.k, lambda: opts.mmrLambda, duplicateThreshold: opts.duplicateThreshold },
      redundancy,
    );
    if (picked.selected.length >= opts.k || headSize >= limit) return { ...picked, headRecords };
    const grown = Math.min(limit, headSize * HEAD_GROWTH);
    readTags(headSize, grown);
    headSize = grown;
  }
}
