// This file is the public API of @cairn/engine; named exports only.
export { CairnEngine } from './cairn-engine.js';
export {
  type ConsolidationOptions,
  type ConsolidationReport,
  Consolidator,
  DEFAULT_CONSOLIDATION_OPTIONS,
  type NeighborIndex,
} from './consolidator.js';
export { DataFolderLock, type LockHolder } from './data-folder-lock.js';
export type { EngineLog, EngineOptions } from './engine-options.js';
export type { EngineStats, NamespaceStats } from './namespace-stats.js';
export { type PruneReport, prune } from './pruner.js';
export type { SpaceBuildStatus } from './space-builder.js';
export { embedderOfSpace, specOf } from './space-embedder.js';
export type { SpaceView } from './space-supervisor.js';
export { StoreHealth, type StoreHealthStatus } from './store-health.js';
export {
  DEFAULT_WRITER_WAIT_OPTIONS,
  type WriterWaitOptions,
  type WriterWaitResult,
  whenWriterEmbedded,
} from './writer-wait.js';
