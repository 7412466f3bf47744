import {
  type HitExplain,
  importanceFactor,
  type LexicalCandidate,
  type ResolvedSearch,
  rrfTerm,
  type ScoringFields,
  type VectorCandidate,
} from '@cairn/core';

export interface FusedCandidate extends HitExplain {
  key: number;
  memory: ScoringFields;
}

/**
 * Weighted RRF over the legs, times the importance factor: each candidate's relevance before age, with
 * recency 1 (see apply-recency.ts for age). Candidates whose memory is not live (superseded, deleted, or
 * outside the namespace) are dropped here, before any score is computed. Unsorted.
 *
 * Candidates a leg scored exactly alike share the better rank ("1, 2, 2, 4"): the same text stored twice is
 * equally relevant, and only age (or, at the very end, the sort) may separate the two.
 */
export function fuseCandidates(
  lexical: readonly LexicalCandidate[],
  vector: readonly VectorCandidate[],
  live: ReadonlyMap<number, ScoringFields>,
  opts: Pick<ResolvedSearch, 'weights' | 'rrfK' | 'importanceWeight'>,
): FusedCandidate[] {
  const byKey = new Map<number, { lex?: LexicalCandidate; vec?: VectorCandidate }>();
  for (const c of sharedRanks(lexical, (x) => x.bm25)) byKey.set(c.key, { lex: c });
  for (const c of sharedRanks(vector, (x) => x.cosine)) {
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
    const importance = importanceFactor(memory.importance, opts.importanceWeight);
    fused.push({
      key,
      memory,
      bm25Rank: lex?.rank ?? null,
      vecRank: vec?.rank ?? null,
      bm25: lex?.bm25 ?? null,
      bm25Session: lex ? (lex.session ?? 0) : null,
      cosine: vec?.cosine ?? null,
      recency: 1,
      rrf,
      score: rrf * importance,
      parts: { lexical: lexicalPart, vector: vectorPart, agent: 1, session: 0, recency: 1, importance },
    });
  }
  return fused;
}

/** A leg's candidates (in rank order) with exact score ties given the better rank of the two. */
function sharedRanks<C extends { rank: number }>(list: readonly C[], score: (c: C) => number): C[] {
  const out: C[] = [];
  for (let i = 0; i < list.length; i++) {
    const c = list[i]!;
    const prev = out[i - 1];
    out.push(prev && score(list[i - 1]!) === score(c) && prev.rank < c.rank ? { ...c, rank: prev.rank } : c);
  }
  return out;
}

/** Best first; ties go to the newer memory, then to the lower key, so order is deterministic. */
export function sortFused(fused: FusedCandidate[]): FusedCandidate[] {
  return fused.sort((a, b) => b.score - a.score || b.memory.ts - a.memory.ts || a.key - b.key);
}
