import type { ComputePool } from './compute-pool.js';
import { SHARD_TOP_K_TASK } from './compute-pool.js';
import type { ShardTopKRequest } from './tasks/shard-top-k.js';
import { mergeTopK, type TopK } from './top-k-heap.js';
import type { VectorShard } from './vector-shard.js';

export interface PooledScanOptions {
  /** Ranges the rows are split into, one pool task each. @defaultValue the pool's maxThreads */
  parts: number;
  /** @defaultValue 0 */
  from: number;
  /** @defaultValue the shard's row count when called */
  to: number;
}

/** Below this many rows a part is not worth a task: a round trip costs about what 4,000 rows of scan do. */
const MIN_ROWS_PER_PART = 16_384;

/**
 * Exact top-k of each query over a shard, split into contiguous row ranges scanned at once by the pool's
 * threads in the shard's shared memory, then merged (a bounded heap over the parts' sorted lists). The
 * result is what one scan over all the rows would return, ties included. The serving thread only posts
 * the queries and merges k × parts pairs.
 */
export async function exactTopKOnPool(
  pool: ComputePool,
  shard: VectorShard,
  queries: readonly Float32Array[],
  k: number,
  opts: Partial<PooledScanOptions> = {},
): Promise<TopK[]> {
  const from = opts.from ?? 0;
  const to = opts.to ?? shard.rows;
  const rows = Math.max(0, to - from);
  const parts = Math.max(1, Math.min(opts.parts ?? pool.maxThreads, Math.ceil(rows / MIN_ROWS_PER_PART)));
  const per = Math.ceil(rows / parts);
  const tasks: Array<Promise<TopK[]>> = [];
  for (let p = 0; p < parts; p++) {
    const req: ShardTopKRequest = {
      memory: shard.memory,
      layout: shard.layout,
      queries: [...queries],
      k,
      from: from + p * per,
      to: Math.min(to, from + (p + 1) * per),
    };
    tasks.push(pool.run<TopK[]>(SHARD_TOP_K_TASK, req));
  }
  const results = await Promise.all(tasks);
  if (results.length === 1) return results[0]!;
  return queries.map((_, q) =>
    mergeTopK(
      results.map((r) => r[q]!),
      k,
    ),
  );
}
