import { CairnError, withDefaults } from '@cairn/core';
import {
  HEADER_ROWS,
  HEADER_SLOTS,
  inverseNorm,
  MAX_PAGES,
  PAGE,
  type ShardLayout,
  type ShardQuantization,
  shardLayout,
} from './shard-layout.js';
import { ShardScanner } from './shard-scanner.js';
import type { TopK } from './top-k-heap.js';
import { type WasmMemory, wasm } from './wasm-runtime.js';

export interface VectorShardOptions {
  dimensions: number;
  /** @defaultValue 'f32' */
  quantization: ShardQuantization;
  /**
   * Rows the shard may grow to. A shared memory cannot move once threads use it, so this much address
   * space is reserved up front (not RAM: pages are committed as rows are written). At most 4 GiB in all,
   * WebAssembly's 32-bit limit. @defaultValue 1_000_000
   */
  capacity: number;
  /** Rows with memory at creation; the memory grows as rows are added. @defaultValue 1024 */
  initialRows: number;
  /**
   * Scratch areas for concurrent scans (a thread takes one for the length of a scan). More than the
   * pool's threads plus the serving thread is never needed. @defaultValue 16
   */
  scratchSlots: number;
}

export type { ShardLayout, ShardQuantization };

export const DEFAULT_VECTOR_SHARD_OPTIONS: Readonly<Omit<VectorShardOptions, 'dimensions'>> = Object.freeze({
  quantization: 'f32',
  capacity: 1_000_000,
  initialRows: 1024,
  scratchSlots: 16,
});

/**
 * A growable block of vectors in a shared WebAssembly memory: the serving thread appends rows, and any
 * thread (the serving one for a small scan, the compute pool's workers for a large one, each over its own
 * range of rows) scans them in place with the SIMD kernels, with no copy. Vectors are L2-normalised on the
 * way in, so scores are cosines. Rows are numbered from 0 in the order they were added; mapping them to
 * keys is the caller's.
 */
export class VectorShard {
  readonly memory: WasmMemory;
  readonly layout: ShardLayout;
  private readonly header: Int32Array;
  private scannerCache: ShardScanner | undefined;

  constructor(opts: Partial<VectorShardOptions> & Pick<VectorShardOptions, 'dimensions'>) {
    const o = withDefaults(DEFAULT_VECTOR_SHARD_OPTIONS as VectorShardOptions, opts);
    if (!Number.isInteger(o.dimensions) || o.dimensions < 1) {
      throw new CairnError('INVALID_INPUT', `dimensions must be a positive integer, got ${o.dimensions}`, {
        field: 'dimensions',
      });
    }
    this.layout = shardLayout(o);
    const bytesFor = (rows: number) => this.layout.vectorsOffset + rows * this.layout.stride;
    if (bytesFor(o.capacity) > MAX_PAGES * PAGE) {
      throw new CairnError(
        'INVALID_INPUT',
        `a shard of ${o.capacity} × ${o.dimensions}-d ${o.quantization} vectors exceeds WebAssembly's 4 GiB: use more shards or i8`,
        { field: 'capacity' },
      );
    }
    this.memory = new wasm.Memory({
      initial: Math.ceil(bytesFor(Math.min(o.initialRows, o.capacity)) / PAGE),
      maximum: Math.ceil(bytesFor(o.capacity) / PAGE),
      shared: true,
    });
    this.header = new Int32Array(this.memory.buffer, 0, HEADER_SLOTS + o.scratchSlots);
  }

  /** Rows added so far. */
  get rows(): number {
    return Atomics.load(this.header, HEADER_ROWS);
  }

  get dimensions(): number {
    return this.layout.dimensions;
  }

  /** Adds vectors (one array each, or `n × dimensions` values in a row); returns the first one's row number. */
  append(vectors: Float32Array | readonly Float32Array[]): number {
    const d = this.layout.dimensions;
    const list = Array.isArray(vectors) ? vectors : splitRows(vectors as Float32Array, d);
    const first = this.rows;
    if (first + list.length > this.layout.capacity) {
      throw new CairnError(
        'INVALID_INPUT',
        `the shard holds at most ${this.layout.capacity} rows (${first} + ${list.length} asked)`,
      );
    }
    this.ensureRows(first + list.length);
    // One look at the buffer for all the rows: a shared memory's `buffer` is a new object on every read.
    const buffer = this.memory.buffer;
    for (const [i, v] of list.entries()) this.write(first + i, v, buffer);
    // Published after the bytes: a thread that reads the new count sees the rows it counts.
    Atomics.store(this.header, HEADER_ROWS, first + list.length);
    return first;
  }

  /** Replaces row `row`'s vector (a scan running at that moment may see either). */
  set(row: number, vector: Float32Array): void {
    if (!Number.isInteger(row) || row < 0 || row >= this.rows) {
      throw new CairnError('INVALID_INPUT', `row ${row} is not in the shard (0..${this.rows - 1})`, {
        field: 'row',
      });
    }
    this.write(row, vector, this.memory.buffer);
  }

  /**
   * Exact top-k of each query over rows [from, to) on this thread: for scans of a few thousand rows, or
   * where no pool is worth its round trip (see `exactTopKOnPool` for large ones).
   */
  topK(queries: readonly Float32Array[], k: number, from = 0, to = this.rows): TopK[] {
    return this.scanner().topK(queries, k, from, to);
  }

  /** Exact cosines of one query against the given rows (re-scoring an approximate search's candidates). */
  rescore(query: Float32Array, rows: ArrayLike<number>): Float64Array {
    return this.scanner().rescore(query, rows);
  }

  private scanner(): ShardScanner {
    this.scannerCache ??= new ShardScanner(this.memory, this.layout);
    return this.scannerCache;
  }

  private ensureRows(rows: number): void {
    const need = this.layout.vectorsOffset + rows * this.layout.stride;
    const have = this.memory.buffer.byteLength;
    if (need > have) this.memory.grow(Math.ceil((need - have) / PAGE));
  }

  private write(row: number, v: Float32Array, buffer: ArrayBufferLike): void {
    const { dimensions: d, stride, vectorsOffset, quantization } = this.layout;
    if (v.length !== d) {
      throw new CairnError('DIMENSION_MISMATCH', `expected a ${d}-d vector, got ${v.length}`);
    }
    const inv = inverseNorm(v);
    const at = vectorsOffset + row * stride;
    if (quantization === 'f32') {
      const out = new Float32Array(buffer, at, d);
      for (let i = 0; i < d; i++) out[i] = v[i]! * inv;
    } else {
      const out = new Int8Array(buffer, at, d);
      for (let i = 0; i < d; i++) out[i] = Math.max(-127, Math.min(127, Math.round(v[i]! * inv * 127)));
    }
  }
}

function splitRows(flat: Float32Array, d: number): Float32Array[] {
  if (flat.length % d !== 0) {
    throw new CairnError('DIMENSION_MISMATCH', `${flat.length} values are not whole ${d}-d vectors`);
  }
  const out: Float32Array[] = [];
  for (let i = 0; i < flat.length; i += d) out.push(flat.subarray(i, i + d));
  return out;
}
