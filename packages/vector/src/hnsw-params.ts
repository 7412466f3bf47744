/** HNSW graph parameters, shared by the in-process index and the off-thread builder. */
export interface HnswParams {
  /** Edges per node (M). Higher improves recall and memory. @defaultValue 16 */
  connectivity: number;
  /** Beam width while inserting (efConstruction). 64 builds ~1.7× faster than 128 at 768-d for ~0.02 less recall@10. @defaultValue 64 */
  expansionAdd: number;
  /** Beam width while searching (ef). @defaultValue 128 */
  expansionSearch: number;
  /**
   * How vectors are stored in the graph. f16 halves memory and builds ~1.7× faster than f32 at 768-d with
   * the same recall on hashed vectors (bench/RESULTS.md); i8 is faster still but loses recall. @defaultValue 'f16'
   */
  quantization: 'f32' | 'f16' | 'i8';
}

/** Bytes per stored scalar, by quantization (the index file's vector block uses it). */
export const BYTES_PER_SCALAR: Readonly<Record<HnswParams['quantization'], number>> = Object.freeze({
  f32: 4,
  f16: 2,
  i8: 1,
});

export const DEFAULT_HNSW_PARAMS: Readonly<HnswParams> = Object.freeze({
  connectivity: 16,
  expansionAdd: 64,
  expansionSearch: 128,
  quantization: 'f16',
});

/** A request to build an index file off the serving thread. Buffers are shared, never copied. */
export interface IndexBuildRequest {
  /**
   * An existing index file to start from (a merge); the keys below replace or extend it. Absent: build
   * from scratch (a rebuild).
   */
  basePath?: string;
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
