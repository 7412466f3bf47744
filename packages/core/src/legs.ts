import type { EmbeddingSpace } from './embedder.js';
import type { MemoryRecord } from './memory.js';
import type { SearchFilters } from './search-options.js';

/**
 * The contracts the query router fuses over. Adapters implement them; the router knows none by name.
 * `key` is the store's stable integer key for a memory (its SQLite rowid), shared by both legs.
 */
export interface LexicalCandidate {
  key: number;
  /** 1-based rank within the lexical leg. */
  rank: number;
  /** The leg's bm25() score, session match included; lower is better in SQLite's convention. */
  bm25: number;
  /** The share of `bm25` that came from the memory's session's match (absent: none). */
  session?: number;
}

export interface LexicalLegResult {
  candidates: LexicalCandidate[];
  /** The FTS5 MATCH expression that ran, or null when the query held no searchable term. */
  ftsQuery: string | null;
  /** Query terms pruned as stop words or as too frequent to discriminate. */
  droppedTerms: string[];
  /**
   * How the leg ranked: `terms` sums each term's cached bm25 contributions (every match, up to `budget` of
   * the newest per term; unfiltered queries); `full` scores every match with bm25; `recent` (when the terms
   * match more rows than the scoring budget) scores only the most recently stored `budget` matches, so
   * latency stays bounded. `estimatedMatches` is exact for `terms`; it is absent when the namespace's
   * terms are counted over the whole folder (it holds half of it or more): a count over every namespace
   * told one tenant, a word at a time, what another tenant's memories say.
   */
  plan?: { mode: 'full' | 'recent' | 'terms'; estimatedMatches?: number; budget: number };
}

export interface LexicalLeg {
  searchLexical(req: {
    namespace: string;
    query: string;
    filters: SearchFilters;
    limit: number;
    /** Weight of the session context a turn is indexed by; absent: the leg's own default. */
    contextWeight?: number;
    /** Share of its session's match a memory gains; absent: the leg's own default. */
    sessionWeight?: number;
  }): LexicalLegResult;
  /**
   * Readies what `searchLexical` of the same query will need (its terms' scores), off the calling thread
   * where the leg can; `searchLexical` stays correct without it. Optional.
   */
  prepare?(req: { namespace: string; query: string; contextWeight?: number }): Promise<void>;
  /**
   * Inverse document frequency of each term within the namespace (BM25's idf), for weighting the query
   * side of a term-weighted embedder. Optional: legs without corpus statistics leave it out.
   */
  termIdf?(namespace: string, terms: readonly string[]): Map<string, number>;
  /**
   * Which of the query's words each of `keys` says in its own words (title, text, identifier parts; not
   * the session context it is also indexed by), with each word's idf in the namespace. The relevance
   * signal is built from it. Optional: legs without it leave responses without a relevance signal.
   */
  queryCoverage?(namespace: string, query: string, keys: readonly number[]): QueryCoverage;
}

export interface QueryCoverage {
  /** The query's searchable single words (lower-cased, stop words dropped) and their idf. */
  words: Array<{ word: string; idf: number }>;
  /** Per key asked: the words it contains. */
  matched: Map<number, Set<string>>;
}

export interface VectorCandidate {
  key: number;
  rank: number;
  cosine: number;
}

export type VectorLegResult =
  | {
      status: 'ok';
      candidates: VectorCandidate[];
      exact: boolean;
      /**
       * Set when many of the namespace's live memories have no vector yet (stored, not embedded: a
       * `cairn ingest --no-embed`, an embedder that fails): the candidates come from the rest only.
       */
      unembedded?: { missing: number; live: number };
    }
  | { status: 'unavailable'; reason: string };

/**
 * Nearest neighbours among one namespace's vectors. With filters, every candidate is a live memory that
 * passes them. Without filters, candidates may include memories superseded or deleted since they were
 * indexed (checking costs a SQLite round trip per query); the router's liveness check drops them.
 */
export interface VectorLeg {
  readonly space: EmbeddingSpace;
  searchVector(req: {
    namespace: string;
    vector: Float32Array;
    filters: SearchFilters;
    limit: number;
  }): Promise<VectorLegResult>;
  /**
   * Stored vectors for the given keys (those without one are absent), for dedup, MMR and exact re-scoring.
   * `keep: false` reads without keeping what it read in the leg's cache (a read of many keys met once).
   */
  vectorsFor(
    namespace: string,
    keys: readonly number[],
    opts?: { keep?: boolean },
  ): Map<number, Float32Array>;
}

/** One route's ranked candidates in one leg: the memories whose named field `route` matched. */
export interface RouteList {
  route: string;
  leg: 'lexical' | 'vector';
  /** Parent memories' keys, best first, with dense 1-based ranks. */
  candidates: Array<{ key: number; rank: number }>;
}

/**
 * Multi-route recall: memories' named fields, each indexed and searched as a route of its own, lexically
 * and by vector. Candidates are the parent memories' keys, so fusion dedups a memory found by several
 * routes to one candidate. Every candidate is a memory of the namespace passing the filters (liveness
 * is the router's check, as for the main legs).
 */
export interface RouteLeg {
  /** The routes (field names) the namespace's memories carry; empty when none has a field. */
  routesOf(namespace: string): string[];
  searchRoutes(req: {
    namespace: string;
    query: string;
    /** The query's vector in `space`; absent: lexical routes only. */
    vector?: Float32Array;
    space?: EmbeddingSpace;
    /** Vector candidates below this cosine are left out (the main vector leg's floor). */
    minCosine?: number;
    /** False: no lexical route lists (the lexical leg is weighted 0). @defaultValue true */
    lexical?: boolean;
    routes: readonly string[];
    filters: SearchFilters;
    limit: number;
  }): RouteList[];
}

/**
 * A reranker: scores texts against a query, higher is better (a cross-encoder or an LLM behind an
 * endpoint). The router reorders the first `rerankDepth` hits by it; on an error or past its deadline
 * (`signal`), the fused order stands and the response says why.
 */
export interface Reranker {
  /** Names it in explains (`tei:http://…`, `cohere:rerank-v3.5`). */
  readonly id: string;
  /** One score per text, in the texts' order. */
  rerank(query: string, texts: readonly string[], signal: AbortSignal): Promise<number[]>;
}

/** A live memory with its store key. */
export interface KeyedMemory extends MemoryRecord {
  key: number;
}

/** What fusion needs of a candidate: enough to score it and name it, without its text. */
export interface ScoringFields {
  key: number;
  id: string;
  ts: number;
  kind: string;
  importance: number;
  /** Null when the writer stated none (scores as certain). */
  confidence: number | null;
  session: string | null;
  agent: string | null;
}

export interface MemorySource {
  /** Live memories (neither superseded nor deleted) among `keys`, within `namespace` only. */
  liveByKeys(namespace: string, keys: readonly number[]): Map<number, KeyedMemory>;
  /** The scoring fields of the live memories among `keys` (cheaper than full records). */
  scoringByKeys(namespace: string, keys: readonly number[]): Map<number, ScoringFields>;
  /**
   * Whether any live memory of the namespace passes `filters` (none: every memory). Asked when a search
   * found nothing, to say why; an existence check, so an empty page never costs a count of the namespace.
   */
  hasMatching(namespace: string, filters: SearchFilters): boolean;
  /**
   * The live memories of the namespace passing `filters`, newest first, `offset` skipped: a listing (a
   * blank query with filters). Optional: sources without it answer a blank query with nothing.
   */
  list?(namespace: string, filters: SearchFilters, limit: number, offset: number): KeyedMemory[];
  /**
   * Consolidation (the near-duplicate job): for each of `keys`, how many memories were merged into it
   * (`dupCount`, chains included) and, when `absorbed` is set, the ones merged into it directly (at most
   * that many each). Keys without any are left out. Optional: sources without it report none.
   */
  consolidatedInto?(
    namespace: string,
    keys: readonly number[],
    absorbed?: number,
  ): Map<number, { dupCount: number; absorbed: Array<{ id: string; cosine: number }> }>;
  /**
   * The live memories just before and after `anchor` in its session (same namespace and session, by ts then
   * key), oldest first. Optional: sources without it return hits without neighbours.
   */
  sessionNeighbors?(
    namespace: string,
    anchor: { key: number; session: string; ts: number },
    before: number,
    after: number,
  ): { before: KeyedMemory[]; after: KeyedMemory[] };
}

/** A memory whose text has not been embedded in an embedding space yet (the embed stage's input). */
export interface PendingMemory {
  key: number;
  namespace: string;
  kind: string;
  title: string | null;
  text: string;
  contentHash: string;
  /** The memory's change sequence number; its embedding records it as `seq`. */
  changeSeq: number;
}

/** A named-field route whose text has not been embedded in an embedding space yet. */
export interface PendingRoute {
  /** The route row's id (`memory_routes.id`): only ever grows, so it doubles as the route cursor. */
  id: number;
  /** The parent memory's key. */
  key: number;
  namespace: string;
  route: string;
  text: string;
}
