import type { ExplainLevel, LegWeights, SearchFilters } from './search-options.js';

/** Why each hit ranked where it did. Ranks are 1-based and null when that leg did not return the hit. */
export interface HitExplain {
  bm25Rank: number | null;
  vecRank: number | null;
  /** Raw bm25() (lower is better), null when the lexical leg did not return it. */
  bm25: number | null;
  cosine: number | null;
  /** Recency factor in (0, 1]; 1 when decay is off. */
  recency: number;
  /** Weighted RRF sum over the legs. */
  rrf: number;
  /** Final score = rrf × recency × importance factor. */
  score: number;
  /** Each leg's share of rrf, and the multipliers applied to it. */
  parts: { lexical: number; vector: number; recency: number; importance: number };
}

export interface SearchHit extends HitExplain {
  id: string;
  namespace: string;
  kind: string;
  title: string | null;
  text: string;
  session: string | null;
  agent: string | null;
  /** Epoch ms. */
  ts: number;
  tags: string[];
  importance: number;
}

export type CandidateFate = 'hit' | 'duplicate' | 'diversity' | 'below_k';

/** One row of the `explain: 'full'` candidate table. */
export interface CandidateTrace extends HitExplain {
  id: string;
  /** 1-based position in the response, or null when not returned. */
  position: number | null;
  fate: CandidateFate;
  /** For fate `duplicate`: the hit it duplicated. */
  duplicateOf?: string;
}

export type EmptyReason = 'no_match' | 'empty_namespace' | 'filtered_out' | 'blank_query';

export interface SearchResponse {
  namespace: string;
  query: string;
  hits: SearchHit[];
  /** Legs that could not answer; the others still served. */
  degraded: Array<'lexical' | 'vector'>;
  /** Set only when `hits` is empty: why. */
  empty?: { reason: EmptyReason; message: string };
  explain: {
    /** The FTS5 expression that ran. */
    lexicalQuery: string | null;
    droppedTerms: string[];
    /** How the lexical leg ranked (see LexicalLegResult.plan). */
    lexicalPlan: { mode: 'full' | 'recent' | 'terms'; estimatedMatches: number; budget: number } | null;
    /** Embedding space of the vector leg, if it ran. */
    space: string | null;
    vectorExact: boolean | null;
    /** Why a degraded leg could not answer. */
    degradedReasons: Record<string, string>;
    settings: {
      k: number;
      candidatePool: number;
      weights: LegWeights;
      rrfK: number;
      halfLifeMs: number | null;
      tauMs: number | null;
      now: number;
      importanceWeight: number;
      mmrLambda: number;
      duplicateThreshold: number;
      /** Vector candidates below this cosine were not fused. */
      minCosine: number;
      filters: SearchFilters;
      explain: ExplainLevel;
    };
    /** Only with explain 'full': every fused candidate. */
    candidates?: CandidateTrace[];
  };
  tookMs: { lexical: number; vector: number; fusion: number; total: number };
}
