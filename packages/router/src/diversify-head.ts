import { diversify, dot, type MemorySource, tagAwareRedundancy, type VectorLeg } from '@cairn/core';
import type { FusedCandidate } from './fuse-candidates.js';

/**
 * MMR and near-duplicate suppression need vectors; only the head of the fused list is considered
 * (k × 4), since anything further down cannot reach the page. Without a vector leg the order stands.
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
) {
  const headSize = Math.min(fused.length, opts.k * 4);
  const mmr = opts.mmrLambda < 1;
  // Tags count toward redundancy only in MMR, and need no vector leg.
  const byTags = mmr && opts.mmrTagWeight > 0;
  const needVectors = !!vectorLeg && (mmr || opts.duplicateThreshold <= 1);
  if (!(needVectors || byTags) || headSize < 2) {
    return {
      selected: fused.slice(0, opts.k).map((_, i) => i),
      duplicates: new Map<number, number>(),
      headRecords: null,
    };
  }
  const head = fused.slice(0, headSize);
  // Vectors are read lazily, a few at a time: with MMR off only the head up to the k-th kept hit is compared.
  const vectors = new Map<number, Float32Array | null>();
  const vectorAt = (i: number) => {
    const key = head[i]!.key;
    if (!needVectors) return null;
    if (!vectors.has(key)) {
      const batch = head
        .slice(i, i + opts.k + 2)
        .map((c) => c.key)
        .filter((k) => !vectors.has(k));
      const got = vectorLeg!.vectorsFor(opts.namespace, batch);
      for (const k of batch) vectors.set(k, got.get(k) ?? null);
    }
    return vectors.get(key) ?? null;
  };
  // The head's tags, read once when tags count; the page reuses these records.
  const headRecords = byTags
    ? memories.liveByKeys(
        opts.namespace,
        head.map((c) => c.key),
      )
    : null;
  const tagsAt = (i: number) => headRecords?.get(head[i]!.key)?.tags ?? [];
  const cosine = (i: number, j: number) => {
    const a = vectorAt(i);
    const b = vectorAt(j);
    return a && b ? dot(a, b) : null;
  };
  const picked = diversify(
    head.map((c) => c.score),
    cosine,
    { k: opts.k, lambda: opts.mmrLambda, duplicateThreshold: opts.duplicateThreshold },
    byTags ? (i, j, s) => tagAwareRedundancy(s, tagsAt(i), tagsAt(j), opts.mmrTagWeight) : cosine,
  );
  return { ...picked, headRecords };
}
