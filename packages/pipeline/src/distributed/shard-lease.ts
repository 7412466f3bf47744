import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';

// Renew only while we still hold it; release only our own lease (a lease that expired and was taken by
// another worker must not be deleted by the old holder).
const RENEW = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end`;
const RELEASE = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end`;

/**
 * A Redis lease that makes one process the only writer of a resource (an index shard, the reconcile
 * sweep). It expires `ttlMs` after its holder stops renewing, so a killed worker's shard is taken over by
 * another within about one TTL.
 */
export class Lease {
  readonly token = randomUUID();
  held = false;
  /** Until when the last successful acquire or renew guarantees the lease (epoch ms). */
  private validUntil = 0;

  constructor(
    private readonly redis: Redis,
    readonly key: string,
    private readonly ttlMs: number,
  ) {}

  /** Takes the lease if it is free (or already ours); true when held. */
  async acquire(): Promise<boolean> {
    // A lapsed lease nobody took is retaken at once rather than on the next claim cycle.
    if (this.held && (await this.renew())) return true;
    const start = Date.now();
    const r = await this.redis.set(this.key, this.token, 'PX', this.ttlMs, 'NX');
    this.held = r === 'OK';
    if (this.held) this.validUntil = start + this.ttlMs;
    return this.held;
  }

  async renew(): Promise<boolean> {
    const start = Date.now();
    const r = (await this.redis.eval(RENEW, 1, this.key, this.token, String(this.ttlMs))) as number;
    this.held = r === 1;
    if (this.held) this.validUntil = start + this.ttlMs;
    return this.held;
  }

  /**
   * Held, and not yet past the expiry the last renewal bought (less a margin for clock drift between
   * here and Redis). `held` alone can stay true through a Redis outage, after another worker took over.
   */
  get valid(): boolean {
    return this.held && Date.now() < this.validUntil - Math.min(1_000, this.ttlMs / 5);
  }

  async release(): Promise<void> {
    if (!this.held) return;
    this.held = false;
    this.validUntil = 0;
    await this.redis.eval(RELEASE, 1, this.key, this.token).catch(() => {});
  }
}
