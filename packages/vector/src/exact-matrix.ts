import { exactSearch, MetricKind } from 'usearch';

/**
 * A growable row-major matrix searched exhaustively. Exact search beats HNSW on small namespaces (no graph
 * to build, perfect recall) and serves filtered searches whose allowed set is small.
 */
export class ExactMatrix {
  private data: Float32Array;
  /**
   * The rows quantised to i8 (see `searchMany`), made at the first batch and kept current by every change
   * after it: a quarter of the f32 rows' memory, held only by matrices a background job scans.
   */
  private quantized: Int8Array | null = null;
  private keys: number[] = [];
  private readonly rowOf = new Map<number, number>();

  constructor(
    readonly dimensions: number,
    capacity = 1024,
  ) {
    this.data = new Float32Array(Math.max(1, capacity) * dimensions);
  }

  get size(): number {
    return this.keys.length;
  }

  has(key: number): boolean {
    return this.rowOf.has(key);
  }

  /** The stored vector of `key` (a view into the matrix; copy it to keep it). */
  get(key: number): Float32Array | undefined {
    const row = this.rowOf.get(key);
    return row === undefined
      ? undefined
      : this.data.subarray(row * this.dimensions, (row + 1) * this.dimensions);
  }

  keyList(): readonly number[] {
    return this.keys;
  }

  upsert(key: number, vector: Float32Array): void {
    const row = this.rowOf.get(key);
    if (row !== undefined) {
      this.data.set(vector, row * this.dimensions);
      if (this.quantized) quantizeRow(this.data, this.quantized, row, this.dimensions);
      return;
    }
    if ((this.keys.length + 1) * this.dimensions > this.data.length) {
      const grown = new Float32Array(this.data.length * 2);
      grown.set(this.data);
      this.data = grown;
      if (this.quantized) {
        const q = new Int8Array(grown.length);
        q.set(this.quantized);
        this.quantized = q;
      }
    }
    this.data.set(vector, this.keys.length * this.dimensions);
    if (this.quantized) quantizeRow(this.data, this.quantized, this.keys.length, this.dimensions);
    this.rowOf.set(key, this.keys.length);
    this.keys.push(key);
  }

  /** Takes `key`'s row out (the last row moves into its place); false when it held none. */
  remove(key: number): boolean {
    const row = this.rowOf.get(key);
    if (row === undefined) return false;
    const last = this.keys.length - 1;
    if (row !== last) {
      const moved = this.keys[last]!;
      this.data.copyWithin(row * this.dimensions, last * this.dimensions, (last + 1) * this.dimensions);
      // From the f32 row, not the i8 copy: while the i8 rows are first made (see searchMany), the last
      // row may not have its yet.
      if (this.quantized) quantizeRow(this.data, this.quantized, row, this.dimensions);
      this.keys[row] = moved;
      this.rowOf.set(moved, row);
    }
    this.keys.pop();
    this.rowOf.delete(key);
    return true;
  }

  /**
   * Many queries' top `k` by approximate cosine, for a background job's batch (the consolidation's
   * near-duplicate pass): the rows (kept quantised once asked, see `quantized`) and the queries in i8
   * (normalised, × 127), scanned by usearch a group of queries at a time. ~3× cheaper a pair than `search`
   * (f32): 54–78 against 156–192 ns a 384-d pair on a slow 2-core machine. The cosines run low by about
   * d / (12 · 127²) (the rounding's noise in the norms: ~0.002 at 384 dimensions, 0.0075 at 1,536, worst
   * 0.011 there), so callers verify what they keep on the stored vectors. `work` bounds each native call
   * (rows × queries × dimensions); `turn` runs between calls and between slices of the first quantisation
   * (a caller's yield).
   */
  async searchMany(
    queries: readonly Float32Array[],
    k: number,
    work: number,
    turn: () => Promise<void> | void = () => {},
  ): Promise<Array<Array<{ key: number; cosine: number }>>> {
    const d = this.dimensions;
    if (!this.quantized) {
      // Made a slice at a time; writes meanwhile keep the rows already made current (see upsert, remove),
      // and the rows after them are made from the f32 rows as they are when reached.
      this.quantized = new Int8Array(this.data.length);
      const slice = Math.max(1, Math.floor(work / d));
      for (let r = 0; r < this.keys.length; r++) {
        quantizeRow(this.data, this.quantized, r, d);
        if ((r + 1) % slice === 0) await turn();
      }
    }
    const n = this.keys.length;
    const kk = Math.min(k, n);
    if (n === 0 || kk <= 0) return queries.map(() => []);
    // A copy of the rows and keys as they are now: a write between groups changes the matrix, not these.
    const rows = this.quantized.slice(0, n * d);
    const keys = [...this.keys];
    const per = Math.max(1, Math.floor(work / (n * d)));
    const out: Array<Array<{ key: number; cosine: number }>> = [];
    for (let g = 0; g < queries.length; g += per) {
      const group = queries.slice(g, g + per);
      const packed = new Float32Array(group.length * d);
      for (const [i, q] of group.entries()) packed.set(q, i * d);
      const q8 = new Int8Array(group.length * d);
      for (let i = 0; i < group.length; i++) quantizeRow(packed, q8, i, d);
      const m = exactSearch(rows, q8, d, kk, MetricKind.Cos, 1) as {
        keys: BigUint64Array;
        distances: Float32Array;
        counts?: BigUint64Array;
      };
      for (let i = 0; i < group.length; i++) {
        // usearch answers a one-query batch without counts, its lists already cut to their length.
        const count = m.counts ? Number(m.counts[i]) : m.keys.length;
        const list: Array<{ key: number; cosine: number }> = [];
        for (let j = i * kk; j < i * kk + count; j++) {
          const key = keys[Number(m.keys[j])];
          if (key !== undefined) list.push({ key, cosine: 1 - m.distances[j]! });
        }
        out.push(list);
      }
      await turn();
    }
    return out;
  }

  /** Top `k` by cosine, best first. */
  search(query: Float32Array, k: number): Array<{ key: number; cosine: number }> {
    const n = this.keys.length;
    if (n === 0 || k <= 0) return [];
    // usearch 2.25–2.26 exactSearch ignores byteOffset, so every array it sees must start at offset 0.
    // `data` is our own allocation, so a prefix view (offset 0, shorter length) is safe and copies
    // nothing; a query that is a view into a larger buffer is copied.
    const dataset = this.data.subarray(0, n * this.dimensions);
    const q = query.byteOffset === 0 && query.length === this.dimensions ? query : query.slice();
    // One thread: the scan is short (this matrix serves namespaces below the HNSW threshold and deltas),
    // the event loop waits on it, and by default usearch starts a thread per core of the host on every call.
    const m = exactSearch(dataset, q, this.dimensions, Math.min(k, n), MetricKind.Cos, 1) as {
      keys: BigUint64Array;
      distances: Float32Array;
    };
    const out: Array<{ key: number; cosine: number }> = [];
    for (let i = 0; i < m.keys.length; i++) {
      const row = Number(m.keys[i]);
      const key = this.keys[row];
      if (key !== undefined) out.push({ key, cosine: 1 - m.distances[i]! });
    }
    return out;
  }
}

/** Row `r` of `from`, normalised and scaled to i8 (× 127, rounded), into row `r` of `to`. */
function quantizeRow(from: Float32Array, to: Int8Array, r: number, d: number): void {
  const at = r * d;
  let sum = 0;
  for (let i = 0; i < d; i++) sum += from[at + i]! * from[at + i]!;
  const scale = sum > 0 ? 127 / Math.sqrt(sum) : 0;
  for (let i = 0; i < d; i++) to[at + i] = Math.round(from[at + i]! * scale);
}
