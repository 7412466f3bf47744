import { renameSync } from 'node:fs';
import { Index, MetricKind, ScalarKind } from 'usearch';
import type { HnswParams, IndexBuilder, IndexBuildRequest } from './hnsw-params.js';

/** Creates an empty cosine HNSW index with the given parameters. */
export function createHnswIndex(dimensions: number, params: HnswParams): Index {
  return new Index({
    dimensions,
    metric: MetricKind.Cos,
    quantization: { f32: ScalarKind.F32, f16: ScalarKind.F16, i8: ScalarKind.I8 }[params.quantization],
    connectivity: params.connectivity,
    expansion_add: params.expansionAdd,
    expansion_search: params.expansionSearch,
    multi: false,
  });
}

/**
 * Adds vectors in chunks so one call never holds a huge native batch. Single-threaded on purpose: usearch
 * 2.26's multi-threaded batch add leaves a few nodes unreachable (a stored vector then cannot be found
 * even by itself), which packages/vector/test/index-builder.test.ts demonstrates.
 */
export function addInChunks(
  index: Index,
  keys: BigUint64Array,
  vectors: Float32Array,
  dimensions: number,
  chunk = 8192,
): void {
  for (let i = 0; i < keys.length; i += chunk) {
    const end = Math.min(keys.length, i + chunk);
    // slice (a copy), not subarray: native code must see offset-0 buffers.
    index.add(keys.slice(i, end), vectors.slice(i * dimensions, end * dimensions), 1);
  }
}

/** Saves atomically: a crash mid-save leaves the previous file intact. */
export function saveIndexAtomically(index: Index, path: string): void {
  const tmp = `${path}.tmp-${process.pid}`;
  index.save(tmp);
  renameSync(tmp, path);
}

/** Builds (or merges into a copy of `basePath`) on the calling thread. Used when no worker pool is wired. */
export const inProcessIndexBuilder: IndexBuilder = {
  async build(req: IndexBuildRequest) {
    const index = createHnswIndex(req.dimensions, req.params);
    if (req.basePath) {
      index.load(req.basePath);
      // Updated memories: drop their old vectors first (usearch refuses a duplicate key).
      for (const k of req.keys) if (index.contains(k)) index.remove(k);
    }
    addInChunks(index, req.keys, req.vectors, req.dimensions);
    saveIndexAtomically(index, req.path);
    return { count: index.size() };
  },
};
