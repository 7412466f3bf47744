import {
  type HitExplain,
  importanceFactor,
  type LexicalCandidate,
  type ResolvedSearch,
  recencyFactor,
  rrfTerm,
  type ScoringFields,
  type VectorCandidate,
} from '@cairn/core';

export interface FusedCandidate extends HitExplain {
  key: number;
  memory: ScoringFields;
}

/**
 * Weighted RRF over the legs, then recency and importance as multipliers. Candidates whose memory is not
 * live (superseded, deleted, or outside the namespace) are dropped here, before any score is computed.
 * Sorted best first; ties go to the newer memory, then to the lower key, so order is deterministic.
 */
export function fuseCandidates(
  lexical: readonly LexicalCandidate[],
  vector: readonly VectorCandidate[],
  live: ReadonlyMap<number, ScoringFields>,
  opts: Pick<ResolvedSearch, 'weights' | 'rrfK' | 'decay' | 'now' | 'importanceWeight'>,
): FusedCandidate[] {
  const byKey = new Map<number, { lex?: LexicalCandidate; vec?: VectorCandidate }>();
  for (const c of lexical) byKey.set(c.key, { lex: c });
  for (const c of vector) {
    const e = byKey.get(c.key);
    if (e) e.vec = c;
    else byKey.set(c.key, { vec: c });
  }
  const fused: FusedCandidate[] = [];
  for (const [key, { lex, vec }] of byKey) {
    const memory = live.get(key);
    if (!memory) continue;
    const lexicalPart = rrfTerm(opts.weights.lexical, opts.rrfK, lex?.rank ?? null);
    const vectorPart = rrfTerm(opts.weights.vector, opts.rrfK, vec?.rank ?? null);
    const rrf = lexicalPart + vectorPart;
    if (rrf <= 0) continue;
    const recency = recencyFactor(opts.now, memory.ts, opts.decay);
    const importance = importanceFactor(memory.importance, opts.importanceWeight);
    fused.push({
      key,
      memory,
      bm25Rank: lex?.rank ?? null,
      vecRank: vec?.rank ?? null,
      bm25: lex?.bm25 ?? null,
      cosine: vec?.cosine ?? null,
      recency,
      rrf,
      score: rrf * recency * importance,
      parts: { lexical: lexicalPart, vector: vectorPart, recency, importance },
    });
  }
  return fused.sort((a, b) => b.score - a.score || b.memory.ts - a.memory.ts || a.key - b.key);
}
