/**
 * Whether a summed bm25 says the memory matches: a memory rewritten so it no longer matches sums back to
 * zero, give or take the rounding of adding and removing the same contributions.
 */
export function isMatch(sum: number): boolean {
  return sum < -1e-12;
}

/**
 * Per-key score sums for one query: a dense array indexed by key, reused across queries, plus the list of
 * keys touched so only those are read and cleared. Sorting every touched key would cost more than the
 * sums (tens of thousands of rows for common words); `top` selects the best n in linear time instead.
 */
export class Accumulator {
  private sums = new Float64Array(1024);
  private seen = new Uint8Array(1024);
  private touchedKeys = new Float64Array(1024);
  private count = 0;

  /** Keys the sums have room for without growing. */
  get capacity(): number {
    return this.sums.length;
  }

  get touched(): number {
    return this.count;
  }

  /** Calls `fn` with every key touched so far (adding to them meanwhile is allowed; new keys are not visited). */
  forEachKey(fn: (key: number) => void): void {
    const n = this.count;
    for (let i = 0; i < n; i++) fn(this.touchedKeys[i]!);
  }

  /** The keys touched so far. */
  keys(): number[] {
    return Array.from(this.touchedKeys.subarray(0, this.count));
  }

  /** The sum for a key; 0 when no term matched it. */
  get(key: number): number {
    return key < this.sums.length ? this.sums[key]! : 0;
  }

  add(key: number, score: number): void {
    if (key >= this.sums.length) this.grow(key);
    if (this.seen[key] === 0) {
      this.seen[key] = 1;
      if (this.count === this.touchedKeys.length) {
        const t = new Float64Array(this.count * 2);
        t.set(this.touchedKeys);
        this.touchedKeys = t;
      }
      this.touchedKeys[this.count++] = key;
    }
    this.sums[key]! += score;
  }

  /**
   * The best (lowest bm25) `n` keys touched, best first; ties go to the newer memory, so the order is
   * deterministic; keys that no longer match are left out (see `isMatch`), and so are keys `accept`
   * refuses (a filter tested in memory against every match). A bounded heap
   * keeps the n best seen so far: most keys are rejected by one comparison with its worst.
   */
  top(n: number, accept?: (key: number) => boolean): Array<{ key: number; bm25: number }> {
    const heap = new TopHeap(n);
    for (let i = 0; i < this.count; i++) {
      const key = this.touchedKeys[i]!;
      const bm25 = this.sums[key]!;
      // The filter is tested only for keys good enough to enter the heap: once it is full, most are not.
      if (isMatch(bm25) && heap.admits(key, bm25) && (!accept || accept(key))) heap.offer(key, bm25);
    }
    return heap.sorted();
  }

  /**
   * Room for keys up to `maxKey`, its pages touched now rather than by a search: at a million memories a
   * new server's first search spent ~0.13 s growing the sums and faulting in their fresh pages.
   */
  reserve(maxKey: number): void {
    if (maxKey < this.sums.length) return;
    const from = this.sums.length;
    this.grow(maxKey);
    this.sums.fill(0, from);
    this.seen.fill(0, from);
  }

  /** Empties the accumulator for the next query. */
  clear(): void {
    for (let i = 0; i < this.count; i++) {
      const key = this.touchedKeys[i]!;
      this.sums[key] = 0;
      this.seen[key] = 0;
    }
    this.count = 0;
  }

  private grow(key: number): void {
    const cap = Math.max(key + 1, this.sums.length * 2);
    const sums = new Float64Array(cap);
    sums.set(this.sums);
    this.sums = sums;
    const seen = new Uint8Array(cap);
    seen.set(this.seen);
    this.seen = seen;
  }
}

/**
 * The n lowest scores offered, as a binary max-heap on typed arrays (the root is the worst kept), with
 * ties broken toward the higher key, as the final order is.
 */
class TopHeap {
  private readonly keys: Float64Array;
  private readonly scores: Float64Array;
  private size = 0;

  constructor(private readonly capacity: number) {
    this.keys = new Float64Array(Math.max(1, capacity));
    this.scores = new Float64Array(Math.max(1, capacity));
  }

  /** Whether `offer` would keep this entry. */
  admits(key: number, score: number): boolean {
    if (this.size < this.capacity) return true;
    return this.capacity > 0 && this.worse(this.scores[0]!, this.keys[0]!, score, key);
  }

  offer(key: number, score: number): void {
    if (this.capacity === 0) return;
    if (this.size < this.capacity) {
      let i = this.size++;
      while (i > 0) {
        const parent = (i - 1) >> 1;
        if (!this.worse(score, key, this.scores[parent]!, this.keys[parent]!)) break;
        this.keys[i] = this.keys[parent]!;
        this.scores[i] = this.scores[parent]!;
        i = parent;
      }
      this.keys[i] = key;
      this.scores[i] = score;
      return;
    }
    if (!this.worse(this.scores[0]!, this.keys[0]!, score, key)) return;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= this.size) break;
      const r = l + 1;
      const c =
        r < this.size && this.worse(this.scores[r]!, this.keys[r]!, this.scores[l]!, this.keys[l]!) ? r : l;
      if (!this.worse(this.scores[c]!, this.keys[c]!, score, key)) break;
      this.keys[i] = this.keys[c]!;
      this.scores[i] = this.scores[c]!;
      i = c;
    }
    this.keys[i] = key;
    this.scores[i] = score;
  }

  sorted(): Array<{ key: number; bm25: number }> {
    const out = new Array<{ key: number; bm25: number }>(this.size);
    for (let i = 0; i < this.size; i++) out[i] = { key: this.keys[i]!, bm25: this.scores[i]! };
    return out.sort((a, b) => a.bm25 - b.bm25 || b.key - a.key);
  }

  /** Whether (s1, k1) ranks below (s2, k2): a higher bm25, or the same and an older key. */
  private worse(s1: number, k1: number, s2: number, k2: number): boolean {
    return s1 > s2 || (s1 === s2 && k1 < k2);
  }
}
