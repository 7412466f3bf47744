import {
  confidenceFactor,
  type HitExplain,
  importanceFactor,
  type LexicalCandidate,
  type ResolvedSearch,
  type RouteList,
  routeWeightOf,
  rrfTerm,
  type ScoringFields,
  TEXT_ROUTE,
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
  opts: Pick<
    ResolvedSearch,
    | 'weights'
    | 'rrfK'
    | 'importanceWeight'
    | 'confidenceWeight'
    | 'routeWeight'
    | 'routeWeights'
    | 'routeFusion'
  >,
  routeLists: readonly RouteList[] = [],
): FusedCandidate[] {
  type Entry = {
    lex?: LexicalCandidate;
    vec?: VectorCandidate;
    /** Per leg: the best (`best`) or the sum (`sum`) of the field routes' weighted RRF terms. */
    routeLex: number;
    routeVec: number;
    routes?: Set<string>;
  };
  const byKey = new Map<number, Entry>();
  const entry = (key: number) => {
    const found = byKey.get(key);
    if (found) return found;
    const e: Entry = { routeLex: 0, routeVec: 0 };
    byKey.set(key, e);
    return e;
  };
  for (const c of sharedRanks(lexical, (x) => x.bm25)) entry(c.key).lex = c;
  for (const c of sharedRanks(vector, (x) => x.cosine)) entry(c.key).vec = c;
  // Multi-route recall: a memory found by several routes is one candidate, listing the routes that found
  // it. With `best`, each leg counts the memory at its best weighted rank over its routes (its own text
  // included); with `sum`, every route's term is added.
  for (const list of routeLists) {
    const lexicalList = list.leg === 'lexical';
    const weight =
      (lexicalList ? opts.weights.lexical : opts.weights.vector) * routeWeightOf(opts, list.route);
    if (weight <= 0) continue;
    for (const c of list.candidates) {
      const e = entry(c.key);
      const term = rrfTerm(weight, opts.rrfK, c.rank);
      if (opts.routeFusion === 'sum') {
        if (lexicalList) e.routeLex += term;
        else e.routeVec += term;
      } else if (lexicalList) e.routeLex = Math.max(e.routeLex, term);
      else e.routeVec = Math.max(e.routeVec, term);
      if (!e.routes) e.routes = new Set();
      e.routes.add(list.route);
    }
  }
  const withRoutes = routeLists.length > 0;
  const fused: FusedCandidate[] = [];
  for (const [key, { lex, vec, routeLex, routeVec, routes }] of byKey) {
    const memory = live.get(key);
    if (!memory) continue;
    const lexicalPart = rrfTerm(opts.weights.lexical, opts.rrfK, lex?.rank ?? null);
    const vectorPart = rrfTerm(opts.weights.vector, opts.rrfK, vec?.rank ?? null);
    // The routes' share: what they add over the memory's own text in each leg.
    const routesPart =
      opts.routeFusion === 'sum'
        ? routeLex + routeVec
        : Math.max(0, routeLex - lexicalPart) + Math.max(0, routeVec - vectorPart);
    const rrf = lexicalPart + vectorPart + routesPart;
    if (rrf <= 0) continue;
    const importance = importanceFactor(memory.importance, opts.importanceWeight);
    const confidence = confidenceFactor(memory.confidence, opts.confidenceWeight);
    const found: FusedCandidate = {
      key,
      memory,
      bm25Rank: lex?.rank ?? null,
      vecRank: vec?.rank ?? null,
      bm25: lex?.bm25 ?? null,
      bm25Session: lex ? (lex.session ?? 0) : null,
      cosine: vec?.cosine ?? null,
      recency: 1,
      rrf,
      score: rrf * importance * confidence,
      parts: {
        lexical: lexicalPart,
        vector: vectorPart,
        routes: routesPart,
        agent: 1,
        session: 0,
        recency: 1,
        importance,
        confidence,
        boost: 1,
      },
    };
    if (withRoutes) {
      const names = lex || vec ? [TEXT_ROUTE] : [];
      if (routes) names.push(...[...routes].sort());
      found.routes = names;
    }
    fused.push(found);
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

/** A candidate's relevance before age and importance: its legs' RRF, times the agent factor, plus support. */
export function relevance(c: FusedCandidate): number {
  return c.rrf * c.parts.agent + c.parts.session;
}

/**
 * Recomputes a candidate's score after one of its parts changed: relevance × recency × importance ×
 * confidence × boost.
 */
export function rescore(c: FusedCandidate): void {
  c.score = relevance(c) * c.parts.recency * c.parts.importance * c.parts.confidence * c.parts.boost;
}

/** Best first; ties go to the newer memory, then to the lower key, so order is deterministic. */
export function sortFused(fused: FusedCandidate[]): FusedCandidate[] {
  return fused.sort((a, b) => b.score - a.score || b.memory.ts - a.memory.ts || a.key - b.key);
}
