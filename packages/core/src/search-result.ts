import type { RecencyOptions, TemporalIntent } from './recency-blend.js';
import type { ExplainLevel, LegWeights, SearchFilters } from './search-options.js';

/** Why each hit ranked where it did. Ranks are 1-based and null when that leg did not return the hit. */
export interface HitExplain {
  bm25Rank: number | null;
  vecRank: number | null;
  /** The lexical leg's bm25() (lower is better), null when the lexical leg did not return it. */
  bm25: number | null;
  /** The share of `bm25` that came from the memory's session's match (0: none; null: no lexical rank). */
  bm25Session: number | null;
  cosine: number | null;
  /**
   * The recency multiplier exactly as applied, in (0, 1]: `1 − w + w · t` in `'auto'` mode, with `w` and the
   * peers' span in `trace.settings.recency` (`explain: 'full'`); `exp(-age / tau)` with a caller-given decay; 1 with decay off.
   */
  recency: number;
  /** Weighted RRF sum over the legs (and the named-field routes). */
  rrf: number;
  /**
   * The routes that found it: `text` (its own words, either main leg) and the names of its fields whose
   * route ranked it (multi-route recall). Absent when the namespace has no fields.
   */
  routes?: string[];
  /** Final score = (rrf × agent + session) × recency × importance × confidence × boost. */
  score: number;
  /**
   * Set when a reranker reordered the page: its score for this hit, and the rank fusion had given it
   * (1-based). The hit's place in the response is the reranker's; `score` stays the fused one.
   */
  rerank?: { score: number; fusedRank: number };
  /**
   * Each leg's share of rrf; `agent`, the factor applied when the query names the memory's agent (else 1);
   * `session`, the support added from another strong candidate of its session (else 0); then the
   * multipliers for age and importance.
   */
  parts: {
    lexical: number;
    vector: number;
    /** The named-field routes' share of rrf (0 without fields). */
    routes: number;
    agent: number;
    session: number;
    recency: number;
    importance: number;
    /** The stated confidence's factor, `1 − w · (1 − confidence)`; 1 when none was stated. */
    confidence: number;
    /** The product of the query's boosts this memory matched (1: none). */
    boost: number;
  };
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
  /**
   * The memory's named fields (see MemoryRecord.fields), read with the hit: a full record brings them, so
   * they count in what fetching it costs. Absent when it has none.
   */
  fields?: Record<string, string>;
  /**
   * How many near-duplicates the consolidation job merged into this memory (superseded by it, chains
   * included); absent when none. `explain: 'full'` lists them under `explain.superseded`.
   */
  dupCount?: number;
  /** With the `neighbors` option: the memories around this hit in its session (none without a session). */
  neighbors?: { before: NeighborEntry[]; after: NeighborEntry[] };
}

/** A memory shown beside a hit: enough to read it; its id leads to the full record. */
export interface NeighborEntry {
  id: string;
  kind: string;
  /** Epoch ms. */
  ts: number;
  title: string | null;
  text: string;
}

/** The recency rule a search used, so every hit's `recency` can be recomputed from the explain. */
export interface RecencySettings {
  mode: 'auto' | 'off' | 'fixed';
  /** 'auto' only: the blend weight w, from the reach in ranks and rrfK. */
  weight: number | null;
  /** 'auto' only: the reach in force (tie-break, or intent when the query has temporal intent). */
  reach: number | null;
  options: RecencyOptions | null;
  /** 'auto' only: what the query said about time. */
  intent: TemporalIntent | null;
  /**
   * 'auto' only: the time span (epoch ms) of the peers, the close calls of the best candidate, over which
   * `t` runs from 0 to 1 (every other candidate has `t = 0`); null when nothing was fused. With a named time
   * (`intent.kind` 'window') `t` is each candidate's distance from the window instead, peer or not.
   */
  peers: { newest: number; oldest: number; count: number } | null;
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
  /**
   * Set when a blank query with filters was answered as a listing: the memories passing the filters,
   * newest first from `offset`, unranked (each hit's score is 0 and its explain names no leg).
   */
  listing?: { offset: number };
  explain: {
    /** The FTS5 expression that ran. */
    lexicalQuery: string | null;
    droppedTerms: string[];
    /** How the lexical leg ranked (see LexicalLegResult.plan). */
    lexicalPlan: { mode: 'full' | 'recent' | 'terms'; estimatedMatches?: number; budget: number } | null;
    /** Embedding space of the vector leg, if it ran. */
    space: string | null;
    vectorExact: boolean | null;
    /**
     * When the vector leg answered from a graph (approximate): how many of the lexical leg's candidates
     * the graph had not returned were scored exactly against the query and entered the vector list. Null
     * when the list was exact or not completed.
     */
    vectorFromLexical: number | null;
    /** Why a degraded leg could not answer. */
    degradedReasons: Record<string, string>;
    settings: {
      k: number;
      candidatePool: number;
      weights: LegWeights;
      rrfK: number;
      /** Weight of the session context in the lexical leg. */
      contextWeight: number;
      /** The boost of a memory whose agent the query names. */
      agentBoost: number;
      /** The share of its session's match a memory gains in the lexical leg. */
      sessionMatch: number;
      /** The share of a session's best other candidate that a candidate gains. */
      sessionSupport: number;
      /** Each named-field route's weight relative to its leg, and the per-route overrides. */
      routeWeight: number;
      routeWeights: Record<string, number>;
      routeFusion: 'best' | 'sum';
      /** The named-field routes searched (empty when the namespace has no fields). */
      routes: string[];
      /** Session neighbours attached before and after each hit. */
      neighbors: number;
      /** Per-kind half-lives in force (ms, or 'off'). */
      kindHalfLives: Record<string, number | 'off'>;
      /** The half-life of the recency curve in use; null with decay off. */
      halfLifeMs: number | null;
      tauMs: number | null;
      now: number;
      /** How age entered the score (see the DecaySpec modes). */
      recency: RecencySettings;
      importanceWeight: number;
      confidenceWeight: number;
      mmrLambda: number;
      mmrTagWeight: number;
      duplicateThreshold: number;
      rerank: 'auto' | 'off' | 'deterministic' | 'model';
      rerankDepth: number;
      boosts: ReadonlyArray<{ tag?: string; kind?: string; agent?: string; path?: string; factor: number }>;
      /** Vector candidates below this cosine were not fused. */
      minCosine: number;
      filters: SearchFilters;
      explain: ExplainLevel;
    };
    /** Only with explain 'full': every fused candidate. */
    candidates?: CandidateTrace[];
    /**
     * Only with explain 'full': the memories the consolidation job merged into the hits (they no longer
     * appear in search), directly or through a chain (as `dupCount` counts them), each with the hit that
     * absorbed it and the cosine of its merge; at most 20 per hit, newest merge first.
     */
    superseded?: Array<{ id: string; supersededBy: string; cosine: number }>;
  };
  /**
   * Set when reranking was asked for (`rerank` not off): who reranked, whether it was applied, and if not,
   * why (the reranker failed or was slower than `rerankTimeoutMs`: the fused order stands).
   */
  rerank?: { by: string; applied: boolean; reason?: string; depth: number; tookMs: number };
  /**
   * How well the best hits answer the query, so a caller can tell "nothing relevant" from "weak matches".
   * Absent when the lexical leg could not say (degraded).
   */
  relevance?: SearchRelevance;
  tookMs: { lexical: number; vector: number; fusion: number; total: number };
}

/**
 * The relevance signal: the share of the query's words, weighted by their rarity (idf) and with names
 * weighted up, that the best of the first hits says in its own words. Not a probability: a ranking of how
 * answerable a query is, with two thresholds measured on LoCoMo (bench/RESULTS.md).
 */
export interface SearchRelevance {
  /** In [0, 1]. */
  score: number;
  /** `relevant` at or above the upper threshold, `none` below the lower one (or with no hits), else `weak`. */
  level: 'relevant' | 'weak' | 'none';
  /** Query words that none of the first hits says: what the memory does not seem to hold. */
  missing: string[];
}
