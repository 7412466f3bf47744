/** HNSW graph parameters, shared by the in-process index and the off-thread builder. */
export interface HnswParams {
  /** Edges per node (M). Higher improves recall and memory. @defaultValue 16 */
  connectivity: number;
  /**
   * Beam width while inserting (efConstruction). A better graph is cheaper to search: at 100k × 768-d
   * (hashed vectors, i8, k 68), 128 instead of 64 took recall@10 from 0.84 at ef 128 to 0.89 at ef 64,
   * with searches ~1.4× faster, for builds and merges ~2× slower (they run off the serving thread);
   * 192 reached 0.93 for builds ~3× slower (bench/RESULTS.md, `bench/dist/hnsw-tuning.js`). @defaultValue 128
   */
  expansionAdd: number;
  /** Beam width while searching (ef); usearch widens it to k when k is larger. @defaultValue 64 */
  expansionSearch: number;
  /**
   * How vectors are stored in the graph. Vectors are L2-normalised, so i8 (each component × 127) loses
   * little: at 100k × 768-d it searched ~1.4× faster than f16 and built ~1.5× faster, at a quarter of f32's
   * memory, with the same recall@10 on hashed and on dense clustered vectors; on dense vectors its deeper
   * recall drops (recall@68 0.92 vs 0.99) and its cosines are off by ~0.005 (bench/RESULTS.md). f16 when a
   * dense embedder's deep candidates or exact cosines matter more. @defaultValue 'i8'
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
  expansionAdd: 128,
  expansionSearch: 64,
  quantization: 'i8',
});

/** A request to build an index file off the serving thread. Buffers are shared, never copied. */
export interface IndexBuildRequest {
  /**
   * An existing index file to start from (a merge); the keys below replace or extend it. Absent: build
   * from scratch (a rebuild).
   */
  basePath?: string;
  /** Memory keys, one per vector (empty with `read`). */
  keys: BigUint64Array;
  /** Keys to take out of the base graph (deleted memories); a merge only. */
  removeKeys?: BigUint64Array;
  /** Row-major vectors, `keys.length × dimensions` (empty with `read`). */
  vectors: Float32Array;
  /**
   * Read the keys and vectors where the build runs, instead of passing them (see `OffThreadRead`); the
   * build then answers with the watermark of what it read.
   */
  read?: OffThreadRead;
  dimensions: number;
  params: HnswParams;
  /** Where the finished index is written (atomically: temp file, then rename). */
  path: string;
  /**
   * Native threads the inserts use once the graph is past its sequential prefix (see addInChunks); at most
   * the machine's cores. Not a graph parameter: the same graph results, so it is not in the sidecar.
   * @defaultValue 1
   */
  threads?: number;
  /**
   * A counter (a SharedArrayBuffer's Int32Array, element 0) the build raises as its inserts go in, so the
   * thread that asked can tell how far a long merge has come (`cairn ingest`'s wait for its index).
   */
  added?: Int32Array;
}

/**
 * A module a worker thread imports to read a namespace's vectors itself (see
 * `EmbeddingSource.offThreadReader`): its default export takes `args` and returns the keys, the vectors and
 * the highest write_seq it read.
 */
export interface OffThreadRead {
  module: string;
  args: Record<string, unknown>;
}

/** What a build made: the graph's size, and with `read`, the watermark of the vectors it read. */
export interface IndexBuildResult {
  count: number;
  watermark?: number;
}

/** Keys to look up in a saved graph file (an index audit's checklist). */
export interface GraphKeyLookup {
  /** The graph file, mapped read-only for the look-up. */
  path: string;
  dimensions: number;
  params: HnswParams;
  /**
   * The keys, or where the thread reads them itself: a module whose default export takes `args` and returns
   * them as a Float64Array (see `EmbeddingSource.offThreadKeyReader`).
   */
  keys: Float64Array | OffThreadRead;
}

/**
 * Many vectors' nearest neighbours in a saved graph file, searched where builds run: a background job's batch
 * (the consolidation's near-duplicate pass), whose searches would otherwise take turns with queries on the
 * serving thread.
 */
export interface GraphNeighborQuery {
  /** The graph file, mapped read-only for the search. */
  path: string;
  dimensions: number;
  params: HnswParams;
  /** Row-major query vectors, `n × dimensions`. */
  vectors: Float32Array;
  /** Neighbours asked per query. */
  k: number;
  /**
   * Native threads the batch's searches run on, below the serving thread's priority like a build's (the
   * pool's thread is niced, and usearch's threads inherit it). A pool of one thread (2 cores) otherwise
   * left a core idle: `cairn consolidate` over 96k fresh vectors searched for 53 s on one core.
   * @defaultValue 1
   */
  threads?: number;
}

/** Query `i`'s neighbours are rows `[i·k, i·k + counts[i])` of `keys` and `cosines`, nearest first. */
export interface GraphNeighbors {
  keys: Float64Array;
  cosines: Float32Array;
  counts: Uint32Array;
}

/** Builds and saves an HNSW index file; implemented by @cairn/compute's worker pool, or in-process. */
export interface IndexBuilder {
  build(req: IndexBuildRequest): Promise<IndexBuildResult>;
  /**
   * The keys of `req.keys` that the graph file does not hold, looked up where builds run: an audit's
   * `contains` checks held the serving thread for ~0.45 s at a million keys. Absent (the in-process
   * builder): audits look keys up in the mapped graph on the calling thread.
   */
  keysMissingFromFile?(req: GraphKeyLookup): Promise<number[]>;
  /**
   * Many vectors' neighbours in a graph file, searched where builds run. Absent (the in-process builder):
   * background jobs search the mapped graph on the calling thread, one vector at a time.
   */
  nearestInFile?(req: GraphNeighborQuery): Promise<GraphNeighbors>;
}
