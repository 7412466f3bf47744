import type { EmbeddingSpace } from '@cairn/core';
import { LRUCache } from 'lru-cache';
import type { NamespaceState } from './namespace-state.js';
import type { EmbeddingSource } from './sources.js';

/**
 * Stored vectors read by key for a namespace's searches and background jobs (MMR, completion, consolidation):
 * from its loaded exact matrix or delta, else a cache of graph namespaces' vectors, else SQLite. The cache
 * must hear of every vector written, deleted or replaced (`forget`, `clear`).
 */
export class StoredVectors {
  private readonly cache: LRUCache<number, { namespace: string; vector: Float32Array }> | null;

  /** @param cacheEntries vectors the cache holds; 0: none (see `vectorCacheEntries`) */
  constructor(
    private readonly embeddings: EmbeddingSource,
    private readonly space: EmbeddingSpace,
    cacheEntries: number,
  ) {
    this.cache = cacheEntries > 0 ? new LRUCache({ max: cacheEntries }) : null;
  }

  /**
   * The stored vectors of `keys` in `namespace` (keys without one are left out). `keep: false` does not put
   * what it read from SQLite in the cache: a search's completed vector list reads ~50 vectors it mostly
   * never meets again, and cached they evicted the heads that are read again and again, and doubled the
   * server's full collections (each cached array lives long enough to be promoted, then dies in the old
   * generation).
   */
  read(
    namespace: string,
    keys: readonly number[],
    ready: NamespaceState | undefined,
    opts: { keep?: boolean } = {},
  ): Map<number, Float32Array> {
    if (!ready) return this.embeddings.byKeys(this.space.id, namespace, keys);
    const out = new Map<number, Float32Array>();
    const missing: number[] = [];
    const held = ready.kind === 'exact' ? ready.matrix : ready.delta;
    for (const key of keys) {
      // The namespace is checked, as SQLite's lookup does: a foreign key gets nothing, cached or not.
      const cached = this.cache?.get(key);
      const v = held.get(key) ?? (cached?.namespace === namespace ? cached.vector : undefined);
      if (v) out.set(key, v);
      else missing.push(key);
    }
    if (missing.length === 0) return out;
    for (const [key, v] of this.embeddings.byKeys(this.space.id, namespace, missing)) {
      out.set(key, v);
      // Only graph vectors are cached: an exact namespace's are all in its matrix already.
      if (ready.kind === 'hnsw' && opts.keep !== false) this.cache?.set(key, { namespace, vector: v });
    }
    return out;
  }

  /** A key's vector was written, replaced or deleted. */
  forget(key: number): void {
    this.cache?.delete(key);
  }

  /** Which vectors changed is not known (a reader mapped a newer generation): trust none. */
  clear(): void {
    this.cache?.clear();
  }
}
