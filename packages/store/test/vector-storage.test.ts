import { embeddingSpaceOf } from '@cairn/core';
import { blobToVector, vectorToBlob } from '@cairn/store';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { mem, openTempStore, type TempStore } from './helpers.js';

let t: TempStore | undefined;
afterEach(() => {
  t?.cleanup();
  t = undefined;
});

const unit = (xs: number[]) => {
  const n = Math.hypot(...xs) || 1;
  return Float32Array.from(xs, (x) => x / n);
};

describe('vector storage: f32 or i8 BLOBs, each saying how to read it', () => {
  it('property: f32 round-trips exactly; i8 within half a step of the vector’s scale, at 8 + dims bytes', () => {
    fc.assert(
      fc.property(
        fc.array(fc.double({ min: -1, max: 1, noNaN: true }), { minLength: 1, maxLength: 64 }),
        (xs) => {
          const v = unit(xs);
          expect([...blobToVector(vectorToBlob(v))]).toEqual([...v]);
          const blob = vectorToBlob(v, 'i8');
          expect(blob.byteLength).toBe(8 + v.length);
          const back = blobToVector(blob);
          const max = Math.max(...v.map(Math.abs));
          const step = max / 127 || 1;
          for (let i = 0; i < v.length; i++)
            expect(Math.abs(back[i]! - v[i]!)).toBeLessThanOrEqual(step / 2 + 1e-7);
        },
      ),
    );
  });

  it('an i8 space stores a quarter of the bytes and reads back what search needs; f32 spaces are unchanged', () => {
    t = openTempStore('cairn-storage-');
    const store = t.store;
    const f32 = embeddingSpaceOf({ modelId: 'm-f32', dimensions: 64 });
    const i8 = embeddingSpaceOf({ modelId: 'm-i8', dimensions: 64 });
    store.spaces.ensureSpace(f32);
    store.spaces.ensureSpace(i8, { storage: 'i8' });
    expect(store.spaces.getSpace(i8.id)!.storage).toBe('i8');
    expect(store.spaces.getSpace(f32.id)!.storage).toBe('f32');
    store.write(Array.from({ length: 50 }, (_, i) => mem({ id: `m${i}`, text: `memory ${i}` })));
    const vectors = new Map<number, Float32Array>();
    for (const space of [f32, i8]) {
      const pending = store.embeddings.pending(space.id, 100);
      store.embeddings.put(
        space,
        pending.map((memory) => {
          const v = unit(Array.from({ length: 64 }, (_, d) => Math.sin(memory.key * 7 + d)));
          vectors.set(memory.key, v);
          return { memory, vector: v };
        }),
        Math.max(...pending.map((p) => p.changeSeq)),
      );
    }
    const bytes = (space: string) =>
      store.db
        .prepare('SELECT sum(length(vector)) FROM embeddings WHERE space = ?')
        .pluck()
        .get(space) as number;
    expect(bytes(i8.id) / bytes(f32.id)).toBeCloseTo((8 + 64) / 256, 5);
    const keys = [...vectors.keys()];
    const readF32 = store.embeddings.byKeys(f32.id, 'ns', keys);
    const readI8 = store.embeddings.byKeys(i8.id, 'ns', keys);
    for (const k of keys) {
      expect([...readF32.get(k)!]).toEqual([...vectors.get(k)!]);
      let dot = 0;
      for (let d = 0; d < 64; d++) dot += readI8.get(k)![d]! * vectors.get(k)![d]!;
      expect(dot).toBeGreaterThan(0.998);
    }
  });
});
