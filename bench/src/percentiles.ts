/** Summary of a latency sample, in the unit of the input (ms throughout the speed benchmark). */
export interface LatencySummary {
  n: number;
  mean: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
}

/**
 * The p-th percentile (0–100) of an ascending-sorted sample, by linear interpolation between the two
 * nearest ranks (NumPy's default), so p50 of [1, 2] is 1.5 rather than 1 or 2.
 */
export function percentile(sorted: ArrayLike<number>, p: number): number {
  const n = sorted.length;
  if (n === 0) return Number.NaN;
  const pos = (Math.min(100, Math.max(0, p)) / 100) * (n - 1);
  const lo = Math.floor(pos);
  const hi = Math.min(n - 1, lo + 1);
  const a = sorted[lo]!;
  return a + (sorted[hi]! - a) * (pos - lo);
}

export function summarize(samples: readonly number[]): LatencySummary {
  const sorted = Float64Array.from(samples).sort();
  const n = sorted.length;
  let sum = 0;
  for (const x of sorted) sum += x;
  return {
    n,
    mean: n === 0 ? Number.NaN : sum / n,
    p50: percentile(sorted, 50),
    p90: percentile(sorted, 90),
    p99: percentile(sorted, 99),
    max: n === 0 ? Number.NaN : sorted[n - 1]!,
  };
}
