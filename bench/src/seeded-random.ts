/** A seeded uniform generator in [0, 1). */
export type Random = () => number;

/**
 * mulberry32 (Tommy Ettinger, public domain): 32 bits of state, passes the statistical tests that matter
 * for a workload generator, and is a few lines, so every run of the benchmark sees the same corpus.
 */
export function seededRandom(seed: number): Random {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** An integer in [lo, hi], both inclusive. */
export function randomInt(rand: Random, lo: number, hi: number): number {
  return lo + Math.floor(rand() * (hi - lo + 1));
}

export function pick<T>(rand: Random, items: readonly T[]): T {
  if (items.length === 0) throw new RangeError('pick: empty list');
  return items[Math.floor(rand() * items.length)]!;
}

/**
 * Draws ranks 0..n-1 with P(rank r) ∝ 1 / (r + 1)^s: word frequencies in natural text follow this law
 * with s ≈ 1 (Zipf 1949), which is what makes some terms match most documents and most terms match few.
 */
export class ZipfSampler {
  private readonly cdf: Float64Array;

  constructor(
    readonly n: number,
    readonly s: number,
  ) {
    if (!Number.isInteger(n) || n < 1)
      throw new RangeError(`ZipfSampler: n must be a positive integer, got ${n}`);
    this.cdf = new Float64Array(n);
    let total = 0;
    for (let r = 0; r < n; r++) {
      total += 1 / (r + 1) ** s;
      this.cdf[r] = total;
    }
    for (let r = 0; r < n; r++) this.cdf[r] = this.cdf[r]! / total;
  }

  /** Share of draws that land on rank `r`. */
  probability(r: number): number {
    return this.cdf[r]! - (r > 0 ? this.cdf[r - 1]! : 0);
  }

  sample(rand: Random): number {
    const u = rand();
    let lo = 0;
    let hi = this.n - 1;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.cdf[mid]! < u) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}
