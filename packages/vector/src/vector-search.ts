import { hasFilters, type SearchFilters, type VectorCandidate, type VectorLegResult } from '@cairn/core';
import { ExactMatrix } from './exact-matrix.js';
import { type NamespaceState, nearest, sizeOf } from './namespace-state.js';
import {
  FILTERED_OVERSAMPLE,
  filteredFetch,
  MAX_EXACT_FILTERED,
  MIN_FILTERED_CANDIDATES,
  UNFILTERED_OVERSAMPLE,
  WIDE_OVERSAMPLE,
} from './search-sizing.js';
import type { KeyFilter } from './sources.js';

/** One vector-leg query over one namespace. */
export interface VectorQuery {
  namespace: string;
  vector: Float32Array;
  filters: SearchFilters;
  limit: number;
}

/** What a search needs besides the namespace's loaded index. */
export interface VectorSearchContext {
  dimensions: number;
  /** Liveness and filters, answered by the record store. */
  keys: KeyFilter;
  /** Stored vectors of a few keys, for an exact scan of a selective filter's memories. */
  vectorsFor(namespace: string, keys: readonly number[]): Map<number, Float32Array>;
}

/**
 * Plans and runs one query against a loaded namespace: an exact scan when a filter leaves few memories,
 * otherwise the graph (or exact matrix) with over-fetching, dead and filtered keys dropped afterwards, and
 * one wider search, or an exact scan, when too few candidates survive. Synchronous: it runs between two
 * awaits of the caller, so no merge can swap the graph under it.
 */
export function searchLoaded(
  idx: NamespaceState,
  req: VectorQuery,
  ctx: VectorSearchContext,
): VectorLegResult {
  const filtered = hasFilters(req.filters);
  const size = sizeOf(idx);
  // Session and time filters are indexed: when few memories pass, scan their vectors exactly. Not when
  // kinds, agents or tags narrow a time window further: listing what passes then reads every row of the
  // window (~16 ms for kind + two months of a 100k namespace, on a small machine), while the graph search
  // usually finds enough; the exact scan below stays the fallback when it does not.
  const f = req.filters;
  const unindexed = Boolean(
    f.kinds?.length || f.agents?.length || f.tags?.length || f.slots?.length || f.asOf !== undefined,
  );
  const timeOnly = (f.since !== undefined || f.until !== undefined) && !unindexed;
  // Whether the filter is already known to pass more memories than an exact scan takes; an estimate
  // well above that spares listing them (a thousand index entries read to learn "too many").
  const rate = filtered && idx.kind === 'hnsw' ? (ctx.keys.passRate?.(req.namespace, f) ?? null) : null;
  let manyPass = rate !== null && rate * size > 2 * MAX_EXACT_FILTERED;
  if ((f.sessions?.length || timeOnly) && idx.kind === 'hnsw' && !manyPass) {
    const keys = ctx.keys.keysMatching(req.namespace, req.filters, MAX_EXACT_FILTERED + 1);
    manyPass = keys.length > MAX_EXACT_FILTERED;
    if (!manyPass) {
      const hits = exactOver(ctx, req.namespace, keys, req.vector, req.limit);
      return { status: 'ok', candidates: hits.map((h, i) => ({ ...h, rank: i + 1 })), exact: true };
    }
  }
  let fetch = Math.min(
    size,
    Math.ceil(req.limit * (filtered ? FILTERED_OVERSAMPLE : UNFILTERED_OVERSAMPLE)) + 8,
  );
  const enough = idx.kind === 'exact' ? req.limit : Math.min(req.limit, MIN_FILTERED_CANDIDATES);
  if (rate !== null) fetch = filteredFetch(req.limit, rate, fetch, enough, size);
  let raw = nearest(idx, req.vector, fetch);
  if (!filtered) {
    // Every key of this index belongs to the namespace, but superseded and deleted memories keep their
    // vectors (an undo brings a merged one back). A dup storm merged by consolidation leaves hundreds of
    // dead copies at the live one's cosine, which would fill the top list and crowd it out: so dead keys
    // are skipped here (the key catalog answers from memory) and the search widens when they were many.
    let live = ctx.keys.allowedKeys(
      req.namespace,
      raw.map((r) => r.key),
      {},
    );
    if (crowdedByDead(raw, live, req.limit) && fetch < size) {
      fetch = idx.kind === 'exact' ? size : Math.min(size, fetch * WIDE_OVERSAMPLE);
      raw = nearest(idx, req.vector, fetch);
      live = ctx.keys.allowedKeys(
        req.namespace,
        raw.map((r) => r.key),
        {},
      );
    }
    const absorbers = absorbersAmong(ctx.keys, req.namespace, raw, live);
    return {
      status: 'ok',
      candidates: liveCandidates(raw, live, absorbers, req.limit),
      exact: idx.kind === 'exact',
    };
  }
  let allowed = ctx.keys.allowedKeys(
    req.namespace,
    raw.map((r) => r.key),
    req.filters,
  );
  let exact = idx.kind === 'exact';
  // Exact namespaces are cheap to rescan, so they always fill the page. HNSW widens only when the filter
  // left almost nothing (fewer than `enough`): a filtered page needs a few good vector candidates, not a
  // full pool, and a wide HNSW search costs more than the rest of the query.
  if (allowed.size < enough && fetch < size) {
    // The filter removed too much of the top list. A small allowed set is scanned exactly; otherwise a
    // much wider approximate search usually finds enough (HNSW cost grows slowly with k).
    const keys = manyPass ? [] : ctx.keys.keysMatching(req.namespace, req.filters, MAX_EXACT_FILTERED + 1);
    if (!manyPass && keys.length <= MAX_EXACT_FILTERED) {
      raw = exactOver(ctx, req.namespace, keys, req.vector, req.limit);
      allowed = new Set(raw.map((r) => r.key));
      exact = true;
    } else {
      fetch = Math.min(size, fetch * WIDE_OVERSAMPLE);
      raw = nearest(idx, req.vector, fetch);
      allowed = ctx.keys.allowedKeys(
        req.namespace,
        raw.map((r) => r.key),
        req.filters,
      );
    }
  }
  const candidates: VectorCandidate[] = [];
  for (const r of raw) {
    if (!allowed.has(r.key)) continue;
    candidates.push({ key: r.key, cosine: r.cosine, rank: candidates.length + 1 });
    if (candidates.length >= req.limit) break;
  }
  return { status: 'ok', candidates, exact };
}

/** Exact top-`limit` over the stored vectors of just these keys (a filter's small allowed set). */
function exactOver(
  ctx: VectorSearchContext,
  namespace: string,
  keys: readonly number[],
  vector: Float32Array,
  limit: number,
): Array<{ key: number; cosine: number }> {
  const matrix = new ExactMatrix(ctx.dimensions, keys.length);
  for (const [k, v] of ctx.vectorsFor(namespace, keys)) matrix.upsert(k, v);
  return matrix.search(vector, limit);
}

/** Dead keys (deleted or merged) left fewer live ones than the page needs: a search widens. */
export function crowdedByDead(
  raw: ReadonlyArray<{ key: number }>,
  live: ReadonlySet<number>,
  limit: number,
): boolean {
  let n = 0;
  for (const r of raw) if (live.has(r.key)) n++;
  return n < Math.min(limit, raw.length);
}

/** The memories the dead keys among `raw` were merged into (consolidation), by dead key. */
export function absorbersAmong(
  keys: KeyFilter,
  namespace: string,
  raw: ReadonlyArray<{ key: number }>,
  live: ReadonlySet<number>,
): Map<number, number> | undefined {
  const dead = raw.filter((r) => !live.has(r.key)).map((r) => r.key);
  return dead.length > 0 ? keys.absorbersOf?.(namespace, dead) : undefined;
}

/**
 * An unfiltered answer's candidates: live keys, and a dead copy standing for the memory it was merged into
 * (an HNSW graph holding hundreds of identical vectors may not reach the live one at all), each once, the
 * first `limit`.
 */
export function liveCandidates(
  raw: ReadonlyArray<{ key: number; cosine: number }>,
  live: ReadonlySet<number>,
  absorbers: ReadonlyMap<number, number> | undefined,
  limit: number,
): VectorCandidate[] {
  const candidates: VectorCandidate[] = [];
  const taken = new Set<number>();
  for (const r of raw) {
    const key = live.has(r.key) ? r.key : absorbers?.get(r.key);
    if (key === undefined || taken.has(key)) continue;
    taken.add(key);
    candidates.push({ key, cosine: r.cosine, rank: candidates.length + 1 });
    if (candidates.length >= limit) break;
  }
  return candidates;
}
