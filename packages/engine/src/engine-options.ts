import type { Embedder, SearchOptions } from '@cairn/core';
import type { LexicalOptions } from '@cairn/store';
import type { HnswParams } from '@cairn/vector';

export type EngineLog = (
  level: 'debug' | 'info' | 'warn' | 'error',
  msg: string,
  data?: Record<string, unknown>,
) => void;

export interface EngineOptions {
  /** The data folder: `cairn.db` (SQLite) and `vectors/` (index files). */
  dataDir: string;
  /**
   * The embedder. `undefined` uses the built-in HashingEmbedder; `null` runs lexical-only (every search is
   * flagged `degraded: ['vector']`). @defaultValue HashingEmbedder
   */
  embedder?: Embedder | null;
  /** Defaults for per-query search options. @defaultValue DEFAULT_SEARCH_OPTIONS */
  search?: Partial<SearchOptions>;
  lexical?: Partial<LexicalOptions>;
  hnsw?: Partial<HnswParams>;
  /** Namespaces with at most this many vectors use exact search. @defaultValue 5_000 */
  exactThreshold?: number;
  /** Searches wait for a vector index being built instead of serving lexical-only. @defaultValue false */
  waitForIndex?: boolean;
  /** Build HNSW graphs on piscina worker threads. @defaultValue true */
  useWorkerThreads?: boolean;
  /** Memories per embedder call. @defaultValue 256 */
  embedBatchSize?: number;
  /**
   * Merge pending vector deltas into their HNSW graph files this often (ms); 0 disables the timer
   * (drain() and close() still merge). @defaultValue 30_000
   */
  persistIntervalMs?: number;
  log?: EngineLog;
}
