// This file is the public API of @cairn/router; named exports only.
export { applyRecency, type RecencyPlan } from './apply-recency.js';
export { explainEmpty } from './empty-reason.js';
export { type FusedCandidate, fuseCandidates, relevance, rescore, sortFused } from './fuse-candidates.js';
export { HybridRouter, type HybridRouterComponents } from './hybrid-router.js';
export { applyNamedAgent } from './named-agent.js';
export {
  DEFAULT_QUERY_VECTOR_CACHE_OPTIONS,
  QueryVectorCache,
  type QueryVectorCacheOptions,
} from './query-vector-cache.js';
export { findRecencyPeers, recencyContenders } from './recency-peers.js';
export { planRecency, queriesOf, recencySettings } from './recency-plan.js';
export { DEFAULT_RELEVANCE_OPTIONS, queryNames, type RelevanceOptions, relevanceOf } from './relevance.js';
export { applySessionSupport } from './session-support.js';
export {
  detectTemporalIntent,
  temporalParserWarm,
  warmTemporalParser,
  withoutTemporalCue,
} from './temporal-intent.js';
export { completeVectorList, GRAPH_RESCORE_DEPTH, type VectorCompletion } from './vector-completion.js';
