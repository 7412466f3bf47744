// Worker-thread task for the scan benchmark: usearch's exact search over a matrix the worker holds.
// usearch's native exactSearch refuses SharedArrayBuffer-backed arrays ("Invalid argument", usearch 2.26),
// so the worker copies the shared matrix once into memory of its own and keeps it for later calls.
import { exactSearch, MetricKind } from 'usearch';

let held: { shard: string; matrix: Float32Array | Int8Array } | null = null;

export default function exactScan(req: {
  /** Names the matrix: a SharedArrayBuffer arrives as a new object on every call, so identity cannot. */
  shard: string;
  matrix: Float32Array | Int8Array;
  queries: Float32Array | Int8Array;
  dimensions: number;
  k: number;
}): number {
  if (!held || held.shard !== req.shard) {
    const own =
      req.matrix instanceof Int8Array
        ? new Int8Array(req.matrix.length)
        : new Float32Array(req.matrix.length);
    own.set(req.matrix);
    held = { shard: req.shard, matrix: own };
  }
  const m = exactSearch(held.matrix, req.queries, req.dimensions, req.k, MetricKind.Cos, 1) as {
    keys: BigUint64Array;
  };
  return m.keys.length;
}
