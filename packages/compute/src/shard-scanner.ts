import { CairnError } from '@cairn/core';
import { instantiateScanKernels, type ScanKernels } from './scan-kernels.js';
import { HEADER_SLOTS, inverseNorm, type ShardLayout } from './shard-layout.js';
import { type TopK, TopKHeap } from './top-k-heap.js';
import type { WasmMemory } from './wasm-runtime.js';

/**
 * Scans a shard's rows in place, on whichever thread made it: the kernels bound to the shard's memory,
 * and a scratch slot (encoded queries and a chunk's scores) taken for the length of one scan, so threads
 * scanning the same shard never share one.
 */
export class ShardScanner {
  private readonly kernels: ScanKernels;

  constructor(
    private readonly memory: WasmMemory,
    readonly layout: ShardLayout,
  ) {
    this.kernels = instantiateScanKernels(memory);
  }

  /** Exact top-k of each query (any norm; scores are cosines) over rows [from, to). */
  topK(queries: readonly Float32Array[], k: number, from: number, to: number): TopK[] {
    const { dimensions: d, stride, queryStride, chunkRows, vectorsOffset, quantization } = this.layout;
    for (const q of queries) {
      if (q.length !== d)
        throw new CairnError('DIMENSION_MISMATCH', `expected a ${d}-d query, got ${q.length}`);
    }
    const heaps = queries.map(() => new TopKHeap(Math.max(0, Math.floor(k))));
    return this.withSlot((slot) => {
      const out = slot + 4 * queryStride;
      for (let g = 0; g < queries.length; g += 4) {
        const group = queries.slice(g, g + 4);
        const scales = group.map((q, i) => this.encodeQuery(q, slot + i * queryStride));
        const batched = group.length === 4;
        for (let start = from; start < to; start += chunkRows) {
          const n = Math.min(chunkRows, to - start);
          const base = vectorsOffset + start * stride;
          if (batched) {
            if (quantization === 'f32') this.kernels.scoreF32x4(base, n, stride, slot, out);
            else this.kernels.scoreI8x4(base, n, stride, slot, out);
            const scores = this.scores(out, n * 4);
            for (let qi = 0; qi < 4; qi++) collect(heaps[g + qi]!, scores, qi, 4, n, start, scales[qi]!);
          } else {
            for (const [qi, scale] of scales.entries()) {
              const qAt = slot + qi * queryStride;
              if (quantization === 'f32') this.kernels.scoreF32(base, n, stride, qAt, out);
              else this.kernels.scoreI8(base, n, stride, qAt, out);
              collect(heaps[g + qi]!, this.scores(out, n), 0, 1, n, start, scale);
            }
          }
        }
      }
      return heaps.map((h) => h.sorted());
    });
  }

  /** Exact cosines of `query` against the given rows, in their order. */
  rescore(query: Float32Array, rows: ArrayLike<number>): Float64Array {
    const { dimensions: d, stride, queryStride, chunkRows, vectorsOffset, quantization } = this.layout;
    if (query.length !== d)
      throw new CairnError('DIMENSION_MISMATCH', `expected a ${d}-d query, got ${query.length}`);
    const result = new Float64Array(rows.length);
    return this.withSlot((slot) => {
      const scale = this.encodeQuery(query, slot);
      // The row numbers go where a batch's other queries would sit, the scores after them.
      const ids = slot + queryStride;
      const room = Math.min(chunkRows, Math.floor((3 * queryStride) / 4));
      const out = slot + 4 * queryStride;
      for (let start = 0; start < rows.length; start += room) {
        const n = Math.min(room, rows.length - start);
        const idView = new Uint32Array(this.memory.buffer, ids, n);
        for (let i = 0; i < n; i++) idView[i] = rows[start + i]!;
        if (quantization === 'f32') this.kernels.gatherF32(vectorsOffset, stride, ids, n, slot, out);
        else this.kernels.gatherI8(vectorsOffset, stride, ids, n, slot, out);
        const scores = this.scores(out, n);
        for (let i = 0; i < n; i++) result[start + i] = scores[i]! * scale;
      }
      return result;
    });
  }

  private scores(at: number, n: number): Float32Array | Int32Array {
    return this.layout.quantization === 'f32'
      ? new Float32Array(this.memory.buffer, at, n)
      : new Int32Array(this.memory.buffer, at, n);
  }

  /**
   * Writes a query where the kernels read it, normalised, and returns what turns a kernel's score into
   * a cosine: 1 for f32; for i8 rows the query is widened to i16 with its largest component at 32,767,
   * and an integer dot product of it and a row (components × 127) is divided back.
   */
  private encodeQuery(q: Float32Array, at: number): number {
    const d = this.layout.dimensions;
    const inv = inverseNorm(q);
    if (this.layout.quantization === 'f32') {
      const view = new Float32Array(this.memory.buffer, at, d);
      for (let i = 0; i < d; i++) view[i] = q[i]! * inv;
      return 1;
    }
    let max = 0;
    for (let i = 0; i < d; i++) max = Math.max(max, Math.abs(q[i]! * inv));
    const view = new Int16Array(this.memory.buffer, at, d);
    if (max === 0) {
      view.fill(0);
      return 0;
    }
    const s = 32_767 / max;
    for (let i = 0; i < d; i++) view[i] = Math.round(q[i]! * inv * s);
    return 1 / (127 * s);
  }

  private withSlot<T>(fn: (slotOffset: number) => T): T {
    const { scratchSlots, scratchOffset, scratchBytes } = this.layout;
    const locks = new Int32Array(this.memory.buffer, 0, HEADER_SLOTS + scratchSlots);
    for (let i = 0; i < scratchSlots; i++) {
      if (Atomics.compareExchange(locks, HEADER_SLOTS + i, 0, 1) !== 0) continue;
      try {
        return fn(scratchOffset + i * scratchBytes);
      } finally {
        Atomics.store(locks, HEADER_SLOTS + i, 0);
      }
    }
    throw new CairnError(
      'BACKEND_UNAVAILABLE',
      `all ${scratchSlots} scan slots of the shard are in use: give it more scratchSlots than scanning threads`,
    );
  }
}

/** Pushes a chunk's scores (every `step`-th value from `offset`) that beat the heap's threshold. */
function collect(
  heap: TopKHeap,
  scores: Float32Array | Int32Array,
  offset: number,
  step: number,
  n: number,
  firstRow: number,
  scale: number,
): void {
  let threshold = heap.threshold;
  for (let j = 0; j < n; j++) {
    const s = scores[j * step + offset]! * scale;
    if (s < threshold) continue;
    heap.push(firstRow + j, s);
    threshold = heap.threshold;
  }
}
