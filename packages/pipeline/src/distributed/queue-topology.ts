import { createHash } from 'node:crypto';
import { CairnError, settleWithin, withDefaults } from '@cairn/core';
import { Queue, type QueueOptions } from 'bullmq';
import { Redis } from 'ioredis';
import { CAPPED_BACKOFF, JOB_CATALOG, type JobName } from './job-catalog.js';

export interface QueueTopologyOptions {
  /** Redis URL, e.g. `redis://127.0.0.1:6379/0`. */
  redisUrl: string;
  /** Key prefix of every queue: two deployments (or two tests) on one Redis never see each other. @defaultValue 'cairn' */
  prefix: string;
  /**
   * Index shards. A namespace's vectors are written by the one worker holding its shard's lease, so this
   * bounds how many processes can index in parallel. Every process of a deployment must agree on it.
   * @defaultValue 4
   */
  shards: number;
}

export const DEFAULT_QUEUE_TOPOLOGY: Readonly<Omit<QueueTopologyOptions, 'redisUrl'>> = Object.freeze({
  prefix: 'cairn',
  shards: 4,
});

/** The shard that owns a namespace: a stable hash, so every process routes a namespace the same way. */
export function shardOf(namespace: string, shards: number): number {
  return createHash('sha256').update(namespace).digest().readUInt32BE(0) % shards;
}

/** Where a deployment records its shard count (see `agreeOnShards`). */
export function shardCountKey(prefix: string): string {
  return `${prefix}:shards`;
}

/**
 * Every process of a deployment routes a namespace to `shardOf(namespace, shards)`, so all must agree on
 * `shards`. A worker started with another CAIRN_SHARDS was accepted, took the shards its own count gave it
 * and handed the others over to nobody: their queues grew for good while /readyz said ok. The first process
 * to connect records the count (atomically); any process with another count is refused.
 */
async function agreeOnShards(conn: Redis, prefix: string, shards: number): Promise<void> {
  const key = shardCountKey(prefix);
  if ((await conn.set(key, String(shards), 'NX')) === 'OK') return;
  const recorded = Number(await conn.get(key));
  if (recorded === shards) return;
  throw new CairnError(
    'INVALID_INPUT',
    `this deployment (queue prefix "${prefix}") routes namespaces over ${recorded} index shards and this process was given ${shards}: every process of a deployment must agree, so set CAIRN_SHARDS=${recorded} here, or give this process its own CAIRN_QUEUE_PREFIX. To change the count, stop every process of the deployment, delete the Redis key ${key} and start them all with the new one.`,
    { field: 'shards' },
  );
}

function checkShards(shards: number): void {
  if (!Number.isInteger(shards) || shards < 1 || shards > 1024)
    throw new CairnError('INVALID_INPUT', `shards must be an integer from 1 to 1024, not ${shards}`, {
      field: 'shards',
    });
}

/** Queue names: `capture`, `embed`, and one `index-<shard>` per shard. */
export function queueName(name: JobName, shard?: number): string {
  return name === 'index' ? `index-${shard ?? 0}` : name;
}

/**
 * The Redis connection rules BullMQ needs, in one place. Workers block on Redis and must retry forever
 * (`maxRetriesPerRequest: null`); producers fail fast so an ingest against a dead Redis errors instead of
 * hanging.
 */
export function redisConnection(url: string, role: 'worker' | 'producer'): Redis {
  const conn = new Redis(url, {
    maxRetriesPerRequest: role === 'worker' ? null : 1,
    enableOfflineQueue: role === 'worker',
    lazyConnect: role === 'producer',
    // Reconnect with a capped backoff (ms); a Redis restart is survived by every worker.
    retryStrategy: (times) => Math.min(times * 200, 2_000),
  });
  // Connection errors surface through the commands that fail (and BullMQ's own 'error' events); without a
  // listener ioredis would also print each reconnect attempt as an unhandled error.
  conn.on('error', () => {});
  return conn;
}

const redact = (url: string) => url.replace(/\/\/[^@/]*@/, '//***@');

/** Errors ioredis raises when Redis does not answer, as opposed to a failed command or a bug. */
const CONNECTION_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'ENOTFOUND',
  'EHOSTUNREACH',
]);

/**
 * Runs reads against Redis, answering BACKEND_UNAVAILABLE (naming the URL) when Redis does not answer
 * (refused, closed, out of retries) instead of ioredis's own error, which would surface as INTERNAL. Any
 * other error passes through as it is.
 */
export async function whileRedisAnswers<T>(topology: QueueTopology, read: () => Promise<T>): Promise<T> {
  // Known lost (the connection is retrying, or gave up): said at once. A read sent now waited for a
  // reconnect that may never come (a /metrics scrape hung until its client gave up).
  const status = topology.connection.status;
  if (status === 'reconnecting' || status === 'close' || status === 'end')
    throw new CairnError(
      'BACKEND_UNAVAILABLE',
      `Redis at ${redact(topology.opts.redisUrl)} is unreachable: the connection is ${status === 'reconnecting' ? 'reconnecting' : 'closed'}`,
      { backend: 'redis' },
    );
  try {
    return await read();
  } catch (err) {
    const e = err as { name?: string; code?: string; message?: string };
    const gone =
      e?.name === 'MaxRetriesPerRequestError' ||
      CONNECTION_CODES.has(e?.code ?? '') ||
      /Stream isn't writeable|Connection is closed/.test(e?.message ?? '');
    if (!gone) throw err;
    throw new CairnError(
      'BACKEND_UNAVAILABLE',
      `Redis at ${redact(topology.opts.redisUrl)} is unreachable: ${e.message}`,
      { backend: 'redis' },
      { cause: err },
    );
  }
}

/** Throws BACKEND_UNAVAILABLE naming the URL when Redis does not answer a PING within `timeoutMs`. */
export async function assertRedisReachable(conn: Redis, url: string, timeoutMs = 3_000): Promise<void> {
  const redacted = redact(url);
  try {
    if (conn.status === 'wait') await conn.connect();
    await Promise.race([
      conn.ping(),
      new Promise((_, rej) =>
        setTimeout(() => rej(new Error(`no answer in ${timeoutMs} ms`)), timeoutMs).unref(),
      ),
    ]);
  } catch (err) {
    throw new CairnError(
      'BACKEND_UNAVAILABLE',
      `Redis at ${redacted} is unreachable: ${(err as Error).message}`,
      { backend: 'redis' },
      { cause: err },
    );
  }
}

/** Default job options from the catalog: capped exponential retries, bounded history in Redis. */
export function jobOptions(name: JobName): QueueOptions['defaultJobOptions'] {
  return {
    attempts: JOB_CATALOG[name].retry.attempts,
    backoff: { type: CAPPED_BACKOFF },
    // Completed jobs carry their payload: keep only a short tail so Redis memory tracks the backlog.
    removeOnComplete: { count: 100, age: 3_600 },
    // Failed jobs are the dead-letter view: keep them until someone retries or purges them.
    removeOnFail: false,
  };
}

/** Every queue of a deployment, opened lazily and closed together. */
export class QueueTopology {
  readonly opts: QueueTopologyOptions;
  private readonly queues = new Map<string, Queue>();

  /** Connects and checks Redis first, so a dead Redis is named at once rather than on the first job. */
  static async connect(
    opts: Partial<QueueTopologyOptions> & Pick<QueueTopologyOptions, 'redisUrl'>,
  ): Promise<QueueTopology> {
    // Validate before connecting: a refused option must not leave a reconnecting socket behind.
    checkShards(opts.shards ?? DEFAULT_QUEUE_TOPOLOGY.shards);
    const conn = redisConnection(opts.redisUrl, 'producer');
    try {
      await assertRedisReachable(conn, opts.redisUrl);
      await agreeOnShards(
        conn,
        opts.prefix ?? DEFAULT_QUEUE_TOPOLOGY.prefix,
        opts.shards ?? DEFAULT_QUEUE_TOPOLOGY.shards,
      );
    } catch (err) {
      conn.disconnect();
      throw err;
    }
    return new QueueTopology(opts, conn);
  }

  private constructor(
    opts: Partial<QueueTopologyOptions> & Pick<QueueTopologyOptions, 'redisUrl'>,
    readonly connection: Redis,
  ) {
    this.opts = withDefaults({ ...DEFAULT_QUEUE_TOPOLOGY, redisUrl: opts.redisUrl }, opts);
  }

  queue(name: JobName, shard?: number): Queue {
    const qn = queueName(name, shard);
    let q = this.queues.get(qn);
    if (!q) {
      q = new Queue(qn, {
        connection: this.connection,
        prefix: this.opts.prefix,
        defaultJobOptions: jobOptions(name),
      });
      this.queues.set(qn, q);
    }
    return q;
  }

  /** Every queue name with its job name: capture, embed, index-0 … index-(shards-1). */
  all(): Array<{ name: JobName; queue: Queue }> {
    const out: Array<{ name: JobName; queue: Queue }> = [
      { name: 'capture', queue: this.queue('capture') },
      { name: 'embed', queue: this.queue('embed') },
    ];
    for (let s = 0; s < this.opts.shards; s++) out.push({ name: 'index', queue: this.queue('index', s) });
    return out;
  }

  /**
   * Closes every queue, waiting at most `deadlineMs` for Redis (down, it would hold the close forever; and
   * then there is nothing to wait for).
   */
  async close(deadlineMs = 2_000): Promise<void> {
    const wait = this.connection.status === 'ready' ? deadlineMs : 0;
    await settleWithin(Promise.all([...this.queues.values()].map((q) => q.close())), wait);
    this.queues.clear();
    this.connection.disconnect();
  }
}
