import type { EmbeddingSpace, NormalizedMemory, PendingMemory, PendingRoute } from '@cairn/core';

export type { PendingMemory, PendingRoute };

/**
 * What the stages need from storage, as contracts: @cairn/store and @cairn/vector satisfy them, and a
 * distributed transport can hand the same stage functions other implementations.
 */
export interface RecordSink {
  /** `receipt`: a queued job's name for the batch; a second write under it writes nothing (a retry). */
  write(
    batch: readonly NormalizedMemory[],
    opts?: { receipt?: string },
  ): Array<{ id: string; namespace: string; status: 'stored' | 'updated' | 'unchanged'; key: number }>;
}

export interface EmbeddedVector {
  key: number;
  namespace: string;
  /** When the vector was stored (the store's write clock); vector indexes catch up by it. */
  writeSeq: number;
  vector: Float32Array;
}

export interface EmbeddingSink {
  pending(spaceId: string, limit: number): PendingMemory[];
  vectorsByContentHash(space: EmbeddingSpace, hashes: readonly string[]): Map<string, Float32Array>;
  /** Stores vectors; `cursor`, when given, advances the space's embedded-up-to mark in the same transaction. */
  put(
    space: EmbeddingSpace,
    items: ReadonlyArray<{ memory: PendingMemory; vector: Float32Array }>,
    cursor?: number,
  ): EmbeddedVector[];
  recordFailures(
    spaceId: string,
    failures: ReadonlyArray<{ key: number; error: string }>,
    cursor?: number,
  ): void;
}

/** Where the named fields' route vectors are read from and stored (see embedPendingRoutes). */
export interface RouteEmbeddingSink {
  pendingRoutes(spaceId: string, limit: number): PendingRoute[];
  /** Stores the vectors and advances the space's route cursor to `cursor` in one transaction. */
  putRoutes(
    space: EmbeddingSpace,
    items: ReadonlyArray<{ route: PendingRoute; vector: Float32Array }>,
    cursor: number,
  ): number;
}

/** What the distributed capture and reconcile steps read back from the store to enqueue embedding. */
export interface PendingSource {
  /** These memories as the embed stage needs them, skipping any that already have a current vector in `spaceId`. */
  unembedded(spaceId: string, keys: readonly number[]): PendingMemory[];
  /**
   * Live memories of the space with no current vector and no recorded failure, changed before
   * `changedBefore` (ms), oldest change first; at most `limit`.
   */
  missing(spaceId: string, changedBefore: number, limit: number): PendingMemory[];
}

export interface IndexSink {
  /**
   * `space` is the space the vectors were stored in: a sink serving another one (the engine switched
   * spaces while a pass was in flight) ignores them.
   */
  apply(entries: readonly EmbeddedVector[], space: EmbeddingSpace): void;
}
