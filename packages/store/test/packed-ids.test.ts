import { describe, expect, it } from 'vitest';
import { PackedIds } from '../src/packed-ids.js';
import { Accumulator } from '../src/score-accumulator.js';

const idOf = (key: number) => `acmeplatform-s${Math.floor(key / 20)}-m${key % 20}`;

describe('PackedIds', () => {
  it('sizes its buffer once for every key it has room for, from the average id so far', () => {
    const ids = new PackedIds();
    const keys = 100_000;
    ids.ensure(keys - 1);
    const capacities = new Set<number>();
    for (let k = 0; k < keys; k++) {
      ids.set(k, idOf(k));
      capacities.add(ids.capacity);
    }
    const total = Array.from({ length: keys }, (_, k) => Buffer.byteLength(idOf(k))).reduce((a, b) => a + b);
    // The first small buffer, then one sized for all: doubling would have copied it six times.
    expect(capacities.size).toBe(2);
    expect(ids.capacity).toBeGreaterThanOrEqual(total);
    expect(ids.capacity).toBeLessThan(total * 1.3);
    for (const k of [0, 1_999, 2_000, 54_321, keys - 1]) expect(ids.get(k)).toBe(idOf(k));
  });

  it('keeps growing past what it expected', () => {
    const ids = new PackedIds();
    ids.ensure(1_999);
    for (let k = 0; k < 2_000; k++) ids.set(k, 'x');
    for (let k = 2_000; k < 5_000; k++) ids.set(k, idOf(k).repeat(3));
    for (const k of [0, 1_999, 2_000, 4_999]) expect(ids.get(k)).toBe(k < 2_000 ? 'x' : idOf(k).repeat(3));
  });
});

describe('Accumulator.reserve', () => {
  it('makes room up front and keeps the sums it holds', () => {
    const acc = new Accumulator();
    acc.add(5, -1);
    acc.reserve(200_000);
    expect(acc.capacity).toBeGreaterThan(200_000);
    const room = acc.capacity;
    acc.add(199_999, -2);
    acc.add(5, -0.5);
    expect(acc.capacity).toBe(room);
    expect(acc.get(5)).toBe(-1.5);
    expect(acc.top(2)).toEqual([
      { key: 199_999, bm25: -2 },
      { key: 5, bm25: -1.5 },
    ]);
    acc.clear();
    acc.reserve(100);
    expect(acc.capacity).toBe(room);
    expect(acc.get(199_999)).toBe(0);
  });
});
