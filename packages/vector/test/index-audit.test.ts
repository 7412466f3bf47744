import { ExactMatrix } from '@cairn/vector';
import { describe, expect, it } from 'vitest';
import { findMissingVectors } from '../src/index-audit.js';
import type { ExactState } from '../src/namespace-state.js';
import { DIMS, randomUnitVectors } from './helpers.js';

function exactHolding(keys: number[]): ExactState {
  const matrix = new ExactMatrix(DIMS, keys.length);
  const vectors = randomUnitVectors(keys.length, DIMS, 3);
  for (const [i, k] of keys.entries()) matrix.upsert(k, vectors[i]!);
  return { kind: 'exact', matrix, watermark: 0 };
}

describe('findMissingVectors', () => {
  it('reads every page of stored keys, and reports each missing key once', async () => {
    const state = exactHolding([1, 3, 5, 7]);
    const asked: number[] = [];
    // A key re-embedded while the pages are read comes again in a later page.
    function* pages() {
      for (const page of [[1, 2], [3, 4], [5, 2, 6], [7]]) {
        asked.push(page.length);
        yield page;
      }
    }
    const missing = await findMissingVectors(state, pages(), () => true);
    expect(missing?.sort()).toEqual([2, 4, 6]);
    expect(asked).toEqual([2, 2, 3, 1]);
  });

  it('stops reading as soon as the state is no longer current', async () => {
    const state = exactHolding([1]);
    let read = 0;
    function* pages() {
      for (let i = 0; i < 100; i++) {
        read++;
        yield [i + 2];
      }
    }
    let current = true;
    setImmediate(() => {
      current = false;
    });
    expect(await findMissingVectors(state, pages(), () => current)).toBeNull();
    expect(read).toBeLessThan(5);
  });
});
