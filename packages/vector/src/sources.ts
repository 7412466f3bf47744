import type { SearchFilters } from '@cairn/core';

/** What the vector leg reads from the record store. @cairn/store's MemoryStore satisfies both. */
export interface EmbeddingSource {
  /** Stored vectors of a namespace in seq order, after `afterSeq`. Each vector must be an own copy. */
  iterate(
    spaceId: string,
    namespace: string,
    afterSeq?: number,
  ): Iterable<{ key: number; seq: number; vector: Float32Array }>;
  byKeys(spaceId: string, namespace: string, keys: readonly number[]): Map<number, Float32Array>;
  count(spaceId: string, namespace: string): number;
}

export interface KeyFilter {
  /** The subset of `keys` that are live memories of `namespace` passing `filters`. */
  allowedKeys(namespace: string, keys: readonly number[], filters: SearchFilters): Set<number>;
  /** Keys of live memories in `namespace` passing `filters`, at most `limit`. */
  keysMatching(namespace: string, filters: SearchFilters, limit: number): number[];
  /**
   * The estimated share of the namespace's live memories that pass `filters` (0–1), or null when it
   * cannot be estimated cheaply; sizes filtered graph searches.
   */
  passRate?(namespace: string, filters: SearchFilters): number | null;
}

/** Structured log lines; apps wire pino or similar. */
export type LogFn = (
  level: 'debug' | 'info' | 'warn' | 'error',
  msg: string,
  data?: Record<string, unknown>,
) => void;
