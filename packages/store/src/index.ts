// This file is the public API of @cairn/store; named exports only.

export {
  CATALOG_CHUNK_TASK,
  type CatalogChunk,
  type CatalogChunkReader,
  readCatalogChunk,
} from './catalog-chunk.js';
export type { CompiledFilter } from './catalog-columns.js';
export {
  type ChangeStamps,
  type ConsolidationCandidate,
  ConsolidationStore,
  type DuplicateMember,
  type MergePair,
  type MergeRecord,
} from './consolidation-store.js';
export type { DiskUsage } from './disk-space.js';
export {
  EmbeddingSpaces,
  MAX_FAILED_SHARE_TO_ACTIVATE,
  type SpaceInfo,
  type SpaceProgress,
} from './embedding-spaces.js';
export { EmbeddingStore, type StoredEmbedding } from './embedding-store.js';
export { type ExclusiveGuard, exclusiveGuardFree, tryExclusiveGuard } from './exclusive-guard.js';
export { liveFilterSql, type SqlFragment } from './filter-sql.js';
export {
  DEFAULT_FTS_QUERY_OPTIONS,
  type FtsQueryOptions,
  type FtsQueryPlan,
  planFtsQuery,
  renderFtsQuery,
} from './fts-query.js';
export {
  checkDatabaseFile,
  checkIntegrity,
  damagedDatabaseError,
  type IntegrityReport,
  isDatabaseDamage,
} from './integrity.js';
export { type RecordedIntegrity, readRecordedIntegrity, recordIntegrity } from './integrity-record.js';
export {
  keptCountsDrift,
  type NamespaceRowCounts,
  recountKeptCounts,
  type SpaceVectorCounts,
} from './kept-counts.js';
export { keptCountsDriftOfFile, recountKeptCountsOfFile } from './kept-counts-file.js';
export { DEFAULT_KEY_CATALOG_OPTIONS, KeyCatalog, type KeyCatalogOptions } from './key-catalog.js';
export { DEFAULT_LEXICAL_OPTIONS, type LexicalOptions, LexicalSearch } from './lexical-search.js';
export type { UpkeepReport } from './lexical-upkeep.js';
export {
  MemoryStore,
  type MemoryStoreOptions,
  type NamespaceCounts,
  type TimelineResult,
} from './memory-store.js';
export type { HiddenMemory, TakesHidden } from './memory-writer.js';
export { MIGRATIONS, type Migration, migrate } from './migrations.js';
export { DEFAULT_MMAP_BYTES, type OpenDatabaseOptions, openDatabase } from './open-database.js';
export { RouteEmbeddings } from './route-embeddings.js';
export { DEFAULT_ROUTE_SEARCH_OPTIONS, RouteSearch, type RouteSearchOptions } from './route-search.js';
export { routeToken } from './route-writer.js';
export { scopeToken } from './scope-token.js';
export {
  DEFAULT_SESSION_CONTEXT_OPTIONS,
  SessionContext,
  type SessionContextOptions,
} from './session-context.js';
export { StatementCache } from './statement-cache.js';
export { TermPostingsCache } from './term-postings.js';
export { DEFAULT_TERM_POSTINGS_OPTIONS, type TermPostingsOptions } from './term-postings-options.js';
export {
  type ScoredMatches,
  TERM_SCORE_TASK,
  type TermScoreRequest,
  type TermScorer,
} from './term-scoring.js';
export { type NamespaceMembers, TermStatistics } from './term-statistics.js';
export {
  blobToVector,
  VECTOR_STORAGES,
  type VectorStorage,
  vectorToBlob,
} from './vector-blob.js';
export {
  type CheckpointConnection,
  type CheckpointResult,
  openCheckpointConnection,
} from './wal-checkpoint.js';
export type { WriteResult, WriteStatus } from './write-result.js';
