import { describe, expect, it } from 'vitest';
import { DEFAULT_EMBEDDING_CACHE_OPTIONS, EmbeddingCache } from '../src/distributed/embedding-cache.js';
import { sleep } from './helpers.js';

const vec = (...xs: number[]) => Float32Array.from(xs);

describe('EmbeddingCache', () => {
  it('defaults to 50k entries kept for an hour', () => {
    expect(DEFAULT_EMBEDDING_CACHE_OPTIONS).toEqual({ maxEntries: 50_000, ttlMs: 3_600_000 });
  });

  it('returns what was remembered for the same space and content hash', () => {
    const cache = new EmbeddingCache();
    const space = cache.forSpace('hash-v1:8');
    space.remember!('h1', vec(1, 2));
    const found = space.lookup(['h1']);
    expect([...found.keys()]).toEqual(['h1']);
    expect(found.get('h1')).toEqual(vec(1, 2));
    // A second view of the same space shares the entries.
    expect(cache.forSpace('hash-v1:8').lookup(['h1']).get('h1')).toEqual(vec(1, 2));
  });

  it('never mixes up the same content hash under two spaces', () => {
    const cache = new EmbeddingCache();
    // One model backing two spaces of different dimensions: the vectors must stay apart.
    const small = cache.forSpace('model-x:2');
    const large = cache.forSpace('model-x:4');
    small.remember!('same-hash', vec(1, 1));
    expect(large.lookup(['same-hash']).size).toBe(0);
    large.remember!('same-hash', vec(2, 2, 2, 2));
    expect(small.lookup(['same-hash']).get('same-hash')).toEqual(vec(1, 1));
    expect(large.lookup(['same-hash']).get('same-hash')).toEqual(vec(2, 2, 2, 2));
    expect(cache.forSpace('model-y:2').lookup(['same-hash']).size).toBe(0);
    expect(cache.size).toBe(2);
  });

  it('counts a hit per found hash and a miss per absent one', () => {
    const cache = new EmbeddingCache();
    const space = cache.forSpace('s');
    space.remember!('a', vec(1));
    space.remember!('b', vec(2));
    const found = space.lookup(['a', 'x', 'b', 'y', 'z']);
    expect([...found.keys()].sort()).toEqual(['a', 'b']);
    expect(cache.hits).toBe(2);
    expect(cache.misses).toBe(3);
    space.lookup([]);
    cache.forSpace('other').lookup(['a']);
    expect(cache.hits).toBe(2);
    expect(cache.misses).toBe(4);
  });

  it('evicts the least recently used vector at maxEntries', () => {
    const cache = new EmbeddingCache({ maxEntries: 3 });
    const space = cache.forSpace('s');
    space.remember!('h1', vec(1));
    space.remember!('h2', vec(2));
    space.remember!('h3', vec(3));
    // Reading h1 makes h2 the least recently used.
    expect(space.lookup(['h1']).size).toBe(1);
    space.remember!('h4', vec(4));
    expect(cache.size).toBe(3);
    const found = space.lookup(['h1', 'h2', 'h3', 'h4']);
    expect([...found.keys()].sort()).toEqual(['h1', 'h3', 'h4']);
  });

  it('shares maxEntries across spaces', () => {
    const cache = new EmbeddingCache({ maxEntries: 2 });
    cache.forSpace('a').remember!('h', vec(1));
    cache.forSpace('b').remember!('h', vec(2));
    cache.forSpace('c').remember!('h', vec(3));
    expect(cache.size).toBe(2);
    expect(cache.forSpace('a').lookup(['h']).size).toBe(0);
    expect(cache.forSpace('c').lookup(['h']).get('h')).toEqual(vec(3));
  });

  it('forgets a vector once its TTL has passed', async () => {
    const cache = new EmbeddingCache({ ttlMs: 50 });
    const space = cache.forSpace('s');
    space.remember!('old', vec(1));
    await sleep(200);
    space.remember!('fresh', vec(2));
    const found = space.lookup(['old', 'fresh']);
    expect([...found.keys()]).toEqual(['fresh']);
    expect(cache.misses).toBe(1);
    expect(cache.hits).toBe(1);
  });
});
