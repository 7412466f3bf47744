// This file is the public API of @cairn/api-contract; named exports only.
export { type ApiLimits, DEFAULT_API_LIMITS, type ServerLimits } from './api-limits.js';
export {
  ContextRequestSchema,
  ContextResponseSchema,
  GetRequestSchema,
  GetResponseSchema,
  type IndexEntry,
  IndexEntrySchema,
  MaxTokensSchema,
  TimelineQuerySchema,
  TimelineResponseSchema,
  TokenUsageSchema,
} from './disclosure-schemas.js';
export { type ErrorBody, ErrorBodySchema, httpStatusOf } from './error-body.js';
export type {
  BatchSearchRequest,
  BatchSearchResponse,
  ContextRequest,
  ContextResponse,
  DeleteResponse,
  FederatedSearchRequest,
  FederatedSearchResponse,
  GetRequest,
  GetResponse,
  MemoryApi,
  StatsResponse,
  TimelineQuery,
  TimelineResponse,
} from './memory-api.js';
export {
  DeleteResponseSchema,
  type MemoryRecordOut,
  MemoryRecordSchema,
  type MemoryWrite,
  MemoryWriteSchema,
  WaitSchema,
  WriteBatchSchema,
  WriteOneSchema,
  type WriteRequest,
  WriteRequestSchema,
  type WriteResponse,
  WriteResponseSchema,
  WriteStatusSchema,
} from './memory-schemas.js';
export {
  BatchSearchRequestSchema,
  BatchSearchResponseSchema,
  EmptyReasonSchema,
  FederatedSearchRequestSchema,
  FederatedSearchResponseSchema,
  HitExplainSchema,
  type SearchHitOut,
  SearchHitSchema,
  SearchRelevanceSchema,
  type SearchRequestBody,
  SearchRequestSchema,
  type SearchResponseOut,
  SearchResponseSchema,
} from './search-schemas.js';
export { HealthResponseSchema, NamespaceStatsSchema, StatsResponseSchema } from './stats-schemas.js';
