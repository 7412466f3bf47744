import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Lease } from '../src/distributed/shard-lease.js';
import { eventually, sleep, useRedisServer } from './helpers.js';

const TTL_MS = 300;

describe('Lease against a real Redis', () => {
  const server = useRedisServer();
  // Two connections: two worker processes competing for one shard.
  let redisA: Redis;
  let redisB: Redis;
  beforeAll(() => {
    redisA = new Redis(server.url);
    redisB = new Redis(server.url);
  });
  afterAll(() => {
    redisA.disconnect();
    redisB.disconnect();
  });

  const pair = (ttlMs = TTL_MS) => {
    const key = `test-${randomUUID()}:lease:index-0`;
    return { key, a: new Lease(redisA, key, ttlMs), b: new Lease(redisB, key, ttlMs) };
  };

  it('lets only one holder acquire at a time', async () => {
    const { key, a, b } = pair(10_000);
    expect(a.token).not.toBe(b.token);
    expect(await a.acquire()).toBe(true);
    expect(a.held).toBe(true);
    expect(await b.acquire()).toBe(false);
    expect(b.held).toBe(false);
    expect(await redisA.get(key)).toBe(a.token);
    // Acquiring again while holding renews rather than failing.
    expect(await a.acquire()).toBe(true);
    expect(await b.acquire()).toBe(false);
  });

  it('sets the key to expire after the TTL', async () => {
    const { key, a } = pair(10_000);
    await a.acquire();
    const pttl = await redisA.pttl(key);
    expect(pttl).toBeGreaterThan(0);
    expect(pttl).toBeLessThanOrEqual(10_000);
  });

  it('renew extends the expiry, so the lease outlives its original deadline', async () => {
    const { key, a, b } = pair(10_000);
    expect(await a.acquire()).toBe(true);
    // The lease is about to lapse: 50 ms left.
    await redisA.pexpire(key, 50);
    expect(await a.renew()).toBe(true);
    expect(await redisA.pttl(key)).toBeGreaterThan(50);
    // Well past the old deadline it is still a's.
    await sleep(150);
    expect(await b.acquire()).toBe(false);
    expect(await redisB.get(key)).toBe(a.token);
  });

  it('release lets the other acquire', async () => {
    const { key, a, b } = pair(10_000);
    expect(await a.acquire()).toBe(true);
    await a.release();
    expect(a.held).toBe(false);
    expect(await redisA.exists(key)).toBe(0);
    expect(await b.acquire()).toBe(true);
    expect(await a.acquire()).toBe(false);
  });

  it('is taken over by the other once its TTL lapses without renewal', async () => {
    const { key, a, b } = pair();
    expect(await a.acquire()).toBe(true);
    // No renewal: the other gets it once the TTL has lapsed (polled, whatever the machine's load).
    await eventually(() => b.acquire());
    expect(await redisB.get(key)).toBe(b.token);
    // The old holder finds out on its next renewal, and cannot take it back.
    expect(await a.renew()).toBe(false);
    expect(a.held).toBe(false);
    expect(await a.acquire()).toBe(false);
  });

  it('an old holder whose lease expired cannot release or renew the new holder’s lease', async () => {
    const { key, a, b } = pair();
    expect(await a.acquire()).toBe(true);
    await eventually(() => b.acquire());
    // `a` still believes it holds the lease: its release must not delete b's.
    expect(a.held).toBe(true);
    await a.release();
    expect(await redisA.get(key)).toBe(b.token);
    expect(await b.renew()).toBe(true);
  });

  it('release of a lease never held does nothing', async () => {
    const { key, a, b } = pair(10_000);
    expect(await b.acquire()).toBe(true);
    await a.release();
    expect(await redisA.get(key)).toBe(b.token);
  });

  it('a holder whose lease lapsed untaken retakes it on its next acquire', async () => {
    const { a } = pair();
    expect(await a.acquire()).toBe(true);
    await sleep(TTL_MS * 2);
    expect(await a.acquire()).toBe(true);
  });

  it('is valid only until the expiry its last renewal bought, even while `held` still says true', async () => {
    const { a } = pair();
    expect(await a.acquire()).toBe(true);
    expect(a.valid).toBe(true);
    await sleep(TTL_MS);
    // No renewal reached Redis (as in an outage): the flag lags, validity does not.
    expect(a.held).toBe(true);
    expect(a.valid).toBe(false);
  });
});
