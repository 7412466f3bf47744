import { withDefaults } from '@cairn/core';
import { LRUCache } from 'lru-cache';
import type { VectorCache } from '../embed-stage.js';

export interface EmbeddingCacheOptions {
  /** Vectors kept; at 384-d float32 (the built-in default) that is 1.5 KiB each, so 50k ≈ 75 MiB; 768-d doubles it. @defaultValue 50_000 */
  maxEntries: number;
  /** A vector is forgotten this long after it was stored (ms). @defaultValue 3_600_000 */
  ttlMs: number;
}

export const DEFAULT_EMBEDDING_CACHE_OPTIONS: Readonly<EmbeddingCacheOptions> = Object.freeze({
  maxEntries: 50_000,
  ttlMs: 3_600_000,
});

/**
 * An embed worker's LRU + TTL cache of vectors by (embedding space, content hash): agents re-send the same
 * observation often, and a duplicate must never cost a second embedder call. At the limit the least
 * recently used vector is evicted.
 */
export class EmbeddingCache {
  private readonly lru: LRUCache<string, Float32Array>;
  hits = 0;
  misses = 0;

  constructor(opts: Partial<EmbeddingCacheOptions> = {}) {
    const o = withDefaults(DEFAULT_EMBEDDING_CACHE_OPTIONS, opts);
    this.lru = new LRUCache({ max: o.maxEntries, ttl: o.ttlMs });
  }

  /**
   * The cache view for one embedding space, as the embed stage consumes it. Keyed by the space id (model
   * id and dimensions), not the model id alone: one model can back spaces of different dimensions.
   */
  forSpace(spaceId: string): VectorCache {
    return {
      lookup: (hashes) => {
        const out = new Map<string, Float32Array>();
        for (const h of hashes) {
          const v = this.lru.get(`${spaceId}\u0000${h}`);
          if (v) {
            out.set(h, v);
            this.hits++;
          } else this.misses++;
        }
        return out;
      },
      remember: (hash, vector) => {
        this.lru.set(`${spaceId}\u0000${hash}`, vector);
      },
    };
  }

  get size(): number {
    return this.lru.size;
  }
}
