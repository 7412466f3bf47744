/** HNSW graph parameters, shared by the in-process index and the off-thread builder. */
export interface HnswParams {
  /** Edges per node (M). Higher improves recall and memory. @defaultValue 16 */
  connectivity: number;
  /** Beam width while inserting (efConstruction). @defaultValue 128 */
  expansionAdd: number;
  /** Beam width while searching (ef). @defaultValue 128 (recall ≥ 0.99 on 100k × 384 in bench/) */
  expansionSearch: number;
}

export const DEFAULT_HNSW_PARAMS: Readonly<HnswParams> = Object.freeze({
  connectivity: 16,
  expansionAdd: 128,
  expansionSearch: 128,
});

/** A request to build an index file off the serving thread. Buffers are shared, never copied. */
export interface IndexBuildRequest {
  /** Memory keys, one per vector. */
  keys: BigUint64Array;
  /** Row-major vectors, `keys.length × dimensions`. */
  vectors: Float32Array;
  dimensions: number;
  params: HnswParams;
  /** Where the finished index is written (atomically: temp file, then rename). */
  path: string;
}

/** Builds and saves an HNSW index file; implemented by @cairn/compute's worker pool, or in-process. */
export interface IndexBuilder {
  build(req: IndexBuildRequest): Promise<{ count: number }>;
}
