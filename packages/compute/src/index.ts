// This file is the public API of @cairn/compute; named exports only.
export {
  COSINE_TOP_K_TASK,
  ComputePool,
  type ComputePoolOptions,
  DEFAULT_COMPUTE_POOL_OPTIONS,
  workerExecArgv,
} from './compute-pool.js';
export type { CosineTopKRequest, CosineTopKResult } from './tasks/cosine-top-k.js';
