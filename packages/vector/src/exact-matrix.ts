import { exactSearch, MetricKind } from 'usearch';

/**
 * A growable row-major matrix searched exhaustively. Exact search beats HNSW on small namespaces (no graph
 * to build, perfect recall) and serves filtered searches whose allowed set is small.
 */
export class ExactMatrix {
  private data: Float32Array;
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
      return;
    }
    if ((this.keys.length + 1) * this.dimensions > this.data.length) {
      const grown = new Float32Array(this.data.length * 2);
      grown.set(this.data);
      this.data = grown;
    }
    this.data.set(vector, this.keys.length * this.dimensions);
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
      this.keys[row] = moved;
      this.rowOf.set(moved, row);
    }
    this.keys.pop();
    this.rowOf.delete(key);
    return true;
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
