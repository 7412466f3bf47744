// Worker-thread task: exact top-k of a batch of queries over one range of a shard's rows, scanned in place
// in the shard's shared memory (no copy), with the SIMD kernels.
import type { ShardLayout } from '../shard-layout.js';
import { ShardScanner } from '../shard-scanner.js';
import type { TopK } from '../top-k-heap.js';
import type { WasmMemory } from '../wasm-runtime.js';

export interface ShardTopKRequest {
  /** The shard's shared memory (posting a shared memory shares it). */
  memory: WasmMemory;
  layout: ShardLayout;
  queries: Float32Array[];
  k: number;
  /** First row of the range. */
  from: number;
  /** One past its last row. */
  to: number;
}

export default function shardTopK(req: ShardTopKRequest): TopK[] {
  // Binding the kernels to the memory each call costs microseconds and holds nothing between calls, so a
  // worker never keeps a dropped shard's memory alive.
  return new ShardScanner(req.memory, req.layout).topK(req.queries, req.k, req.from, req.to);
}
