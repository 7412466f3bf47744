/** The best `k` (row, score) pairs of a scan, best first. */
export interface TopK {
  rows: Int32Array;
  /** f64, so a merge of split scans breaks ties exactly as one scan does. */
  scores: Float64Array;
}

/**
 * A bounded min-heap of (score, row): the root is the worst kept pair, so a scan compares each new score
 * against one number and touches the heap only for the few that beat it. Ties go to the lower row, so
 * a scan split across threads and merged returns what one scan over all rows would.
 */
export class TopKHeap {
  private readonly rows: Int32Array;
  private readonly scores: Float64Array;
  private size = 0;

  constructor(readonly k: number) {
    this.rows = new Int32Array(k);
    this.scores = new Float64Array(k);
  }

  /** The score a new pair must beat to enter (-Infinity until the heap is full). */
  get threshold(): number {
    return this.size < this.k ? Number.NEGATIVE_INFINITY : this.scores[0]!;
  }

  push(row: number, score: number): void {
    if (this.k === 0) return;
    if (this.size < this.k) {
      let i = this.size++;
      // Sift up: move the new pair above every parent it beats.
      while (i > 0) {
        const p = (i - 1) >> 1;
        if (!this.worse(score, row, this.scores[p]!, this.rows[p]!)) break;
        this.scores[i] = this.scores[p]!;
        this.rows[i] = this.rows[p]!;
        i = p;
      }
      this.scores[i] = score;
      this.rows[i] = row;
      return;
    }
    if (!this.worse(this.scores[0]!, this.rows[0]!, score, row)) return;
    // Replace the root and sift down.
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= this.size) break;
      const r = l + 1;
      const c =
        r < this.size && this.worse(this.scores[r]!, this.rows[r]!, this.scores[l]!, this.rows[l]!) ? r : l;
      if (!this.worse(this.scores[c]!, this.rows[c]!, score, row)) break;
      this.scores[i] = this.scores[c]!;
      this.rows[i] = this.rows[c]!;
      i = c;
    }
    this.scores[i] = score;
    this.rows[i] = row;
  }

  /** The kept pairs, best first. */
  sorted(): TopK {
    const order = Array.from({ length: this.size }, (_, i) => i).sort(
      (a, b) => this.scores[b]! - this.scores[a]! || this.rows[a]! - this.rows[b]!,
    );
    return {
      rows: Int32Array.from(order, (i) => this.rows[i]!),
      scores: Float64Array.from(order, (i) => this.scores[i]!),
    };
  }

  /** a ranks below b: a lower score, or the same score on a higher row. */
  private worse(sa: number, ra: number, sb: number, rb: number): boolean {
    return sa < sb || (sa === sb && ra > rb);
  }
}

/** The best `k` of several scans' results (each best first), as one scan over all their rows would give. */
export function mergeTopK(parts: readonly TopK[], k: number): TopK {
  const heap = new TopKHeap(k);
  for (const part of parts) {
    for (let i = 0; i < part.rows.length; i++) {
      const s = part.scores[i]!;
      // Each part is sorted, so once one score misses, the rest of that part does too.
      if (s < heap.threshold) break;
      heap.push(part.rows[i]!, s);
    }
  }
  return heap.sorted();
}
