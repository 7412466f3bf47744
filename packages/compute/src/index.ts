// This file is the public API of @cairn/compute; named exports only.
export {
  ComputePool,
  type ComputePoolOptions,
  DEFAULT_COMPUTE_POOL_OPTIONS,
  SHARD_TOP_K_TASK,
  workerExecArgv,
} from './compute-pool.js';
export { exactTopKOnPool, type PooledScanOptions } from './pooled-exact-search.js';
export { instantiateScanKernels, SCAN_KERNELS_WASM, type ScanKernels } from './scan-kernels.js';
export type { ShardLayout, ShardQuantization } from './shard-layout.js';
export { ShardScanner } from './shard-scanner.js';
export type { ShardTopKRequest } from './tasks/shard-top-k.js';
export { mergeTopK, type TopK, TopKHeap } from './top-k-heap.js';
export { DEFAULT_VECTOR_SHARD_OPTIONS, VectorShard, type VectorShardOptions } from './vector-shard.js';
export type { WasmMemory } from './wasm-runtime.js';
