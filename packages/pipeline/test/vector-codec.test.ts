import { describe, expect, it } from 'vitest';
import { decodeVector, encodeVector } from '../src/distributed/vector-codec.js';

/** A deterministic pseudo-random generator (mulberry32), so failures reproduce. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

describe('vector codec', () => {
  it('round-trips random vectors of many lengths, odd ones and negative values included', () => {
    const next = rng(42);
    let negatives = 0;
    for (const length of [1, 2, 3, 5, 7, 8, 13, 384, 767, 768, 1_025]) {
      const v = Float32Array.from({ length }, () => (next() - 0.5) * 200);
      const back = decodeVector(encodeVector(v));
      expect(back).toBeInstanceOf(Float32Array);
      expect(back).toHaveLength(length);
      expect(back.some(Number.isNaN)).toBe(false);
      expect(back).toEqual(v);
      negatives += back.filter((x) => x < 0).length;
    }
    expect(negatives).toBeGreaterThan(100);
  });

  it('keeps special float32 values bit for bit', () => {
    const v = Float32Array.from([0, -0, 1, -1, 3.4028234663852886e38, -1.401298464324817e-45, Infinity]);
    const back = decodeVector(encodeVector(v));
    expect(Object.is(back[1], -0)).toBe(true);
    expect(Array.from(back)).toEqual(Array.from(v));
  });

  it('encodes little-endian float32 bytes as base64', () => {
    // 1.0f is 0x3f800000: little-endian bytes 00 00 80 3f.
    expect(encodeVector(Float32Array.from([1]))).toBe('AACAPw==');
    expect(Array.from(decodeVector('AACAPwAAAMA='))).toEqual([1, -2]);
  });

  it('encodes only the view of a subarray, not its whole buffer', () => {
    const whole = Float32Array.from([9, 1.5, -2.25, 9]);
    const view = whole.subarray(1, 3);
    expect(encodeVector(view)).toBe(encodeVector(Float32Array.from([1.5, -2.25])));
    expect(Array.from(decodeVector(encodeVector(view)))).toEqual([1.5, -2.25]);
  });

  it('decodes into a fresh aligned array that does not alias other vectors', () => {
    const a = decodeVector(encodeVector(Float32Array.from([1, 2, 3])));
    const b = decodeVector(encodeVector(Float32Array.from([1, 2, 3])));
    a[0] = 100;
    expect(b[0]).toBe(1);
    expect(a.byteOffset).toBe(0);
  });

  it('rejects bytes that are not a whole number of float32 values, naming the byte count', () => {
    // Four base64 characters are 3 bytes: only multiples of 4 bytes are float32.
    expect(() => decodeVector('AAAA')).toThrow('vector of 3 bytes is not float32');
    // Garbage that is not base64 at all: Node skips the foreign characters, leaving 6 bytes here.
    expect(() => decodeVector('not base64!')).toThrow('vector of 6 bytes is not float32');
    expect(() => decodeVector(Buffer.from([1, 2, 3, 4, 5]).toString('base64'))).toThrow(
      'vector of 5 bytes is not float32',
    );
  });

  it('decodes the empty string to an empty vector', () => {
    expect(decodeVector('')).toEqual(new Float32Array(0));
  });
});
