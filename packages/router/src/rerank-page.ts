import type { KeyedMemory, QueryCoverage, Reranker, SearchResponse } from '@cairn/core';
import { coverageShares } from './relevance.js';

/** What the page's reranking asked for, resolved: by whom, how deep, how long it may take. */
export interface RerankPlan {
  mode: 'deterministic' | 'model';
  depth: number;
  timeoutMs: number;
  reranker: Reranker | null;
}

/** A reordered page: positions into the candidates given, best first, and each one's rerank score. */
export interface RerankOutcome {
  order: number[];
  scores: Map<number, number> | null;
  info: NonNullable<SearchResponse['rerank']>;
}

/** How a memory reads to a reranker: its title and text, as a person would see it. */
function textOf(m: KeyedMemory): string {
  return m.title ? `${m.title}\n${m.text}` : m.text;
}

/**
 * Reorders the first hits (`keys`, in fused order) by the plan:
 * - `deterministic`: by the share of the query each memory says (idf-weighted, names weighted up; the
 *   relevance signal's weights), the fused order breaking ties, so the same inputs always give the same page;
 * - `model`: by the reranker's scores. An error, or no answer within `timeoutMs`, leaves the fused order,
 *   and `info` says why: a slow cross-encoder never fails a search.
 */
export async function rerankPage(
  query: string,
  keys: readonly number[],
  records: ReadonlyMap<number, KeyedMemory>,
  plan: RerankPlan,
  coverage: (keys: readonly number[]) => QueryCoverage,
): Promise<RerankOutcome> {
  const t0 = performance.now();
  const fused = keys.map((_, i) => i);
  const tookMs = () => Math.round((performance.now() - t0) * 100) / 100;
  const byScore = (scores: number[]) => fused.slice().sort((a, b) => scores[b]! - scores[a]! || a - b);
  if (plan.mode === 'deterministic') {
    const shares = coverageShares(query, coverage(keys), keys);
    const scores = keys.map((k) => shares.get(k) ?? 0);
    return {
      order: byScore(scores),
      scores: new Map(keys.map((k, i) => [k, scores[i]!])),
      info: { by: 'deterministic', applied: true, depth: keys.length, tookMs: tookMs() },
    };
  }
  const reranker = plan.reranker!;
  const fallback = (reason: string): RerankOutcome => ({
    order: fused,
    scores: null,
    info: { by: reranker.id, applied: false, reason, depth: keys.length, tookMs: tookMs() },
  });
  const texts = keys.map((k) => {
    const m = records.get(k);
    return m ? textOf(m) : '';
  });
  const signal = AbortSignal.timeout(plan.timeoutMs);
  try {
    const scores = await Promise.race([
      reranker.rerank(query, texts, signal),
      // The reranker should honour the signal; this bounds the wait even when it does not.
      new Promise<never>((_, reject) =>
        signal.addEventListener('abort', () => reject(new Error('timeout')), { once: true }),
      ),
    ]);
    if (scores.length !== keys.length || scores.some((s) => !Number.isFinite(s)))
      return fallback(`the reranker answered ${scores.length} scores for ${keys.length} texts`);
    return {
      order: byScore(scores),
      scores: new Map(keys.map((k, i) => [k, scores[i]!])),
      info: { by: reranker.id, applied: true, depth: keys.length, tookMs: tookMs() },
    };
  } catch (err) {
    if (signal.aborted)
      return fallback(`the reranker did not answer within ${plan.timeoutMs} ms; fused order kept`);
    return fallback(`the reranker failed: ${(err as Error).message}; fused order kept`);
  }
}
