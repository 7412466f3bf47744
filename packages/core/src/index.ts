// This file is the public API of @cairn/core; named exports only.

export {
  DEFAULT_DECAY,
  type DecaySpec,
  type ResolvedDecay,
  recencyFactor,
  resolveDecay,
} from './decay.js';
export { withDefaults } from './defaults.js';
export {
  assertDimensions,
  assertEmbedder,
  type Embedder,
  type EmbeddingSpace,
  embeddingSpaceOf,
  isTermWeighted,
  type TermWeightedEmbedder,
} from './embedder.js';
export { CairnError, CairnErrorCode, type CairnErrorData, isCairnError } from './errors.js';
export { asFactMemory, FACT_LIMITS, type FactFields, factId } from './facts.js';
export type {
  KeyedMemory,
  LexicalCandidate,
  LexicalLeg,
  LexicalLegResult,
  MemorySource,
  PendingMemory,
  PendingRoute,
  QueryCoverage,
  Reranker,
  RouteLeg,
  RouteList,
  ScoringFields,
  VectorCandidate,
  VectorLeg,
  VectorLegResult,
} from './legs.js';
export { DEFAULT_INPUT_LIMITS, type InputLimits } from './limits.js';
export {
  BUILTIN_KINDS,
  contentHash,
  DEFAULT_IMPORTANCE,
  generatedId,
  MAX_FIELDS,
  type MemoryInput,
  MemoryInputSchema,
  type MemoryRecord,
  NAMESPACE_PATTERN,
  NamespaceSchema,
  type NormalizedMemory,
  normalizeMemory,
  ROUTE_NAME_PATTERN,
  sortedFields,
  TEXT_ROUTE,
  zodToCairnError,
} from './memory.js';
export {
  type DiversifyOptions,
  type DiversifyResult,
  diversify,
  tagAwareRedundancy,
  tagJaccard,
} from './mmr.js';
export {
  namesSlotOrKind,
  type PrunePolicy,
  PrunePolicyFields,
  PrunePolicySchema,
  type PrunePolicyWire,
  parsePrunePolicy,
} from './prune-policy.js';
export {
  blendFactor,
  blendWeight,
  DEFAULT_RECENCY_OPTIONS,
  NO_TEMPORAL_INTENT,
  type PeerSpan,
  type RecencyOptions,
  type TemporalIntent,
  timeAffinity,
} from './recency-blend.js';
export { confidenceFactor, importanceFactor, rrfTerm } from './rrf.js';
export {
  type Boost,
  DEFAULT_SEARCH_OPTIONS,
  type ExplainLevel,
  hasFilters,
  type LegWeights,
  parseDecay,
  parseSearchRequest,
  type ResolvedSearch,
  resolveSearch,
  routeWeightOf,
  type SearchFilters,
  SearchFiltersSchema,
  type SearchOptions,
  type SearchRequest,
  SearchRequestSchema,
  type SearchRequestWire,
  searchDefaultsFor,
} from './search-options.js';
export type {
  CandidateFate,
  CandidateTrace,
  EmptyReason,
  HitExplain,
  NeighborEntry,
  RecencySettings,
  SearchHit,
  SearchRelevance,
  SearchResponse,
} from './search-result.js';
export { settleWithin, valueWithin } from './settle-within.js';
export { isQueryStopWord, isStopWord, STOP_WORDS } from './stop-words.js';
export { codeParts, identifierParts, rawTokens, tokenize } from './text-terms.js';
export { MS_PER_DAY, parseDuration, parseTimeBound, parseTimestamp } from './time.js';
export { cosine, dot, l2Normalize } from './vector-math.js';
export { hasLoneSurrogate, loneSurrogateMessage, WellFormedString } from './well-formed-string.js';
