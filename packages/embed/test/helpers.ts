import { CairnError } from '@cairn/core';
import { expect } from 'vitest';

/** Awaits `p`, which must reject with a CairnError, and returns that error. */
export async function rejectionOf(p: Promise<unknown>): Promise<CairnError> {
  try {
    await p;
  } catch (err) {
    if (err instanceof CairnError) return err;
    throw err;
  }
  throw new Error('expected the promise to reject with a CairnError');
}

/** Runs `fn`, which must throw a CairnError, and returns that error. */
export function thrownBy(fn: () => unknown): CairnError {
  try {
    fn();
  } catch (err) {
    if (err instanceof CairnError) return err;
    throw err;
  }
  throw new Error('expected a CairnError to be thrown');
}

/** Fakes opened by a test, closed by `closeAll` in afterEach so no port outlives its test. */
export class OpenFakes {
  private readonly open: { close(): Promise<void> }[] = [];

  track<T extends { close(): Promise<void> }>(fake: T): T {
    this.open.push(fake);
    return fake;
  }

  async closeAll(): Promise<void> {
    await Promise.all(this.open.splice(0).map((f) => f.close()));
  }
}

/** Float32 round trips and renormalising move the last bits; 1e-6 is far below any real difference. */
export function expectVectorsClose(
  actual: readonly Float32Array[],
  expected: readonly (readonly number[])[],
) {
  expect(actual.map((v) => v.length)).toEqual(expected.map((v) => v.length));
  actual.forEach((v, i) => {
    const e = expected[i]!;
    for (let j = 0; j < v.length; j++) expect(Math.abs(v[j]! - e[j]!)).toBeLessThan(1e-6);
  });
}

export function norm(v: Float32Array): number {
  return Math.hypot(...v);
}

/** A fetch that records how many requests were in flight at most, and forwards to the real one. */
export function countingFetch(): { fetch: typeof fetch; maxInFlight: () => number } {
  let inFlight = 0;
  let max = 0;
  const counting: typeof fetch = async (input, init) => {
    inFlight++;
    max = Math.max(max, inFlight);
    try {
      return await fetch(input, init);
    } finally {
      inFlight--;
    }
  };
  return { fetch: counting, maxInFlight: () => max };
}
