// A shard's memory layout, shared by the thread that fills a shard and every thread that scans it.
import { randomUUID } from 'node:crypto';

/** How a shard stores a vector: f32 as given, or i8 (each component × 127, as Cairn's graphs hold it). */
export type ShardQuantization = 'f32' | 'i8';

/**
 * Where everything sits in a shard's memory: plain data, sent with the memory to a worker thread so it
 * can scan the same bytes. Byte offsets, each a multiple of 16.
 */
export interface ShardLayout {
  /** Names the shard across threads: a posted memory arrives as a new object on every call. */
  id: string;
  dimensions: number;
  quantization: ShardQuantization;
  /** Bytes per row, the vector zero-padded to a multiple of 16 (padding leaves dot products unchanged). */
  stride: number;
  /** Bytes per encoded query: f32 as the rows; i8 rows are scored against an i16 query, twice as wide. */
  queryStride: number;
  /** Rows scored per kernel call (the scratch area holds their scores, four per row for batches). */
  chunkRows: number;
  scratchSlots: number;
  scratchOffset: number;
  scratchBytes: number;
  vectorsOffset: number;
  capacity: number;
}

/** Int32 words at the start of the memory: the row count, then one lock word per scratch slot. */
export const HEADER_ROWS = 0;
export const HEADER_SLOTS = 1;
export const PAGE = 65_536;
/** WebAssembly's 32-bit memories end at 4 GiB. */
export const MAX_PAGES = 65_536;
const CHUNK_ROWS = 4096;

/** 1 / |v|, or 0 for a zero vector (which then scores 0 against everything). */
export function inverseNorm(v: Float32Array): number {
  let s = 0;
  for (let i = 0; i < v.length; i++) s += v[i]! * v[i]!;
  return s > 0 ? 1 / Math.sqrt(s) : 0;
}

export function shardLayout(o: {
  dimensions: number;
  quantization: ShardQuantization;
  capacity: number;
  scratchSlots: number;
}): ShardLayout {
  const align = (n: number) => Math.ceil(n / 16) * 16;
  const stride = align(o.dimensions * (o.quantization === 'f32' ? 4 : 1));
  const queryStride = o.quantization === 'f32' ? stride : stride * 2;
  // Four encoded queries, then the scores of a chunk of rows for four queries.
  const scratchBytes = align(4 * queryStride + CHUNK_ROWS * 4 * 4);
  const scratchOffset = align(4 * (HEADER_SLOTS + o.scratchSlots));
  return {
    id: randomUUID(),
    dimensions: o.dimensions,
    quantization: o.quantization,
    stride,
    queryStride,
    chunkRows: CHUNK_ROWS,
    scratchSlots: o.scratchSlots,
    scratchOffset,
    scratchBytes,
    vectorsOffset: scratchOffset + o.scratchSlots * scratchBytes,
    capacity: o.capacity,
  };
}
