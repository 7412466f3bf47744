/**
 * Greedy selection with Maximal Marginal Relevance (Carbonell & Goldstein 1998) and near-duplicate
 * suppression. Items arrive sorted by relevance; `similarity(i, j)` returns the cosine of two items or
 * null when either has no vector (such pairs are treated as unrelated).
 */
export interface DiversifyOptions {
  /** How many items to select. */
  k: number;
  /** 1 keeps relevance order (MMR off); lower values trade relevance for diversity. */
  lambda: number;
  /** An item whose similarity to an already-selected item is at or above this is dropped. >1 turns it off. */
  duplicateThreshold: number;
}

export interface DiversifyResult {
  /** Indices into the input, in selected order. */
  selected: number[];
  /** Index of a dropped item → index of the selected item it duplicated. */
  duplicates: Map<number, number>;
}

export function diversify(
  relevance: readonly number[],
  similarity: (i: number, j: number) => number | null,
  opts: DiversifyOptions,
  /**
   * MMR's redundancy penalty, when it differs from `similarity` (which alone decides duplicates): tag
   * overlap makes two memories redundant on a page, never copies of each other. It is handed the pair's
   * similarity, already computed. @defaultValue similarity
   */
  redundancy: (i: number, j: number, similarity: number | null) => number | null = similarity,
): DiversifyResult {
  const selected: number[] = [];
  const duplicates = new Map<number, number>();
  if (opts.lambda >= 1) {
    // Pure relevance order: take items in order, skipping near-duplicates. Only the items up to the k-th
    // kept one are ever compared, so a lazy similarity function loads few vectors.
    for (let i = 0; i < relevance.length && selected.length < opts.k; i++) {
      const dupOf = selected.find((j) => {
        const s = similarity(i, j);
        return s !== null && s >= opts.duplicateThreshold;
      });
      if (dupOf === undefined) selected.push(i);
      else duplicates.set(i, dupOf);
    }
    return { selected, duplicates };
  }
  const remaining = new Set(relevance.map((_, i) => i));
  const maxRel = relevance.length > 0 ? Math.max(...relevance) : 1;
  // Relevance is scaled to [0, 1] to be comparable with cosine; a subnormal maximum would overflow.
  const norm = maxRel > 0 && Number.isFinite(1 / maxRel) ? 1 / maxRel : 1;
  // Each item's redundancy with the page so far, brought up to date against the one item selected last:
  // recomputed against the whole page each round, a k of 100 over a pool of 1,000 took 2.5 s of the
  // serving thread (k² × pool similarities; now k × pool).
  const maxSim = new Float64Array(relevance.length);
  let last = -1;
  while (selected.length < opts.k && remaining.size > 0) {
    let best = -1;
    let bestValue = Number.NEGATIVE_INFINITY;
    for (const i of remaining) {
      if (last >= 0) {
        const s = similarity(i, last);
        // The first selected item it copies, in selection order, as when the page was compared whole.
        if (s !== null && s >= opts.duplicateThreshold) {
          duplicates.set(i, last);
          remaining.delete(i);
          continue;
        }
        const r = redundancy === similarity ? s : redundancy(i, last, s);
        if (r !== null && r > maxSim[i]!) maxSim[i] = r;
      }
      const value = opts.lambda * relevance[i]! * norm - (1 - opts.lambda) * maxSim[i]!;
      // Ties keep input order, so lambda = 1 reproduces the relevance ranking exactly.
      if (value > bestValue) {
        bestValue = value;
        best = i;
      }
    }
    if (best < 0) break;
    selected.push(best);
    remaining.delete(best);
    last = best;
  }
  return { selected, duplicates };
}

/** Jaccard overlap of two tag sets: |A ∩ B| / |A ∪ B|, 0 when both are empty. */
export function tagJaccard(a: readonly string[], b: readonly string[]): number {
  if (a.length === 0 || b.length === 0) return 0;
  const small = a.length <= b.length ? new Set(a) : new Set(b);
  const other = a.length <= b.length ? new Set(b) : new Set(a);
  let shared = 0;
  for (const t of small) if (other.has(t)) shared += 1;
  return shared / (small.size + other.size - shared);
}

/**
 * MMR's redundancy of two items, after Memsense: `max(cosine, tagWeight · tag Jaccard)`, so two memories
 * filed under the same tags count as redundant even when their words differ. Null (unrelated) when
 * neither a cosine nor a tag overlap is known. With `tagWeight` ≤ 1 a tag overlap alone stays below any
 * duplicate threshold near 1. The router passes it to `diversify` as the redundancy alone, so tags
 * diversify the page and never drop a hit as a copy, whatever the threshold.
 */
export function tagAwareRedundancy(
  cosine: number | null,
  tagsA: readonly string[],
  tagsB: readonly string[],
  tagWeight: number,
): number | null {
  const tags = tagWeight > 0 ? tagWeight * tagJaccard(tagsA, tagsB) : 0;
  if (cosine === null) return tags > 0 ? tags : null;
  return Math.max(cosine, tags);
}
