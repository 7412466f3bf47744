import { type Embedder, withDefaults } from '@cairn/core';
import { LRUCache } from 'lru-cache';

export interface QueryVectorCacheOptions {
  /** Query vectors kept. @defaultValue 2_000 */
  max: number;
  /** How long a query vector is reused (ms): a model redeployed under the same name is picked up after it. @defaultValue 600_000 */
  ttlMs: number;
}

export const DEFAULT_QUERY_VECTOR_CACHE_OPTIONS: Readonly<QueryVectorCacheOptions> = Object.freeze({
  max: 2_000,
  ttlMs: 600_000,
});

/**
 * Query vectors of a remote embedder, by embedding space and query text: the same question asked again
 * (an agent re-asking, a dashboard refreshing, a batch of identical queries) costs no embedder call, no
 * latency and no money. Concurrent misses on one text share one call. A term-weighted embedder (the
 * built-in one) is not cached: its query vectors follow the namespace's word statistics and cost
 * microseconds.
 */
export class QueryVectorCache {
  private readonly cache: LRUCache<string, Promise<Float32Array>>;

  constructor(opts: Partial<QueryVectorCacheOptions> = {}) {
    const o = withDefaults(DEFAULT_QUERY_VECTOR_CACHE_OPTIONS, opts);
    this.cache = new LRUCache({ max: o.max, ttl: o.ttlMs });
  }

  /** The query's vector from the cache, or from one embedder call that later askers share. */
  embed(embedder: Embedder, spaceId: string, query: string): Promise<Float32Array> {
    const key = `${spaceId}\u0000${query}`;
    const cached = this.cache.get(key);
    if (cached) return cached;
    const pending = embedder.embed([query]).then(([v]) => {
      // An embedder that answers nothing must not leave "no vector" cached for the next ten minutes.
      if (!v) throw new Error(`embedder ${embedder.modelId} returned no vector for the query`);
      return v;
    });
    this.cache.set(key, pending);
    // A failed call is not remembered: the next search asks the embedder again.
    pending.catch(() => {
      if (this.cache.get(key) === pending) this.cache.delete(key);
    });
    return pending;
  }
}
