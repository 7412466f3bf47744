/**
 * How a space keeps its vectors in SQLite: `f32`, raw little-endian floats (4 bytes a dimension); or `i8`,
 * each component scaled by the vector's largest |x| into a signed byte (1 byte a dimension, plus 8), a
 * quarter of the disk at no measured cost in quality for the built-in embedder (bench/RESULTS.md,
 * "Stored-vector precision").
 */
export type VectorStorage = 'f32' | 'i8';

export const VECTOR_STORAGES: readonly VectorStorage[] = Object.freeze(['f32', 'i8']);

/**
 * An i8 BLOB starts with this 32-bit word: a NaN, which no stored vector holds (embedders return finite,
 * normalised vectors), so a BLOB says itself how to read it and every reader stays format-blind.
 */
const I8_MARKER = 0x7fc0_1c08;
const I8_HEADER = 8;

/** A vector as a BLOB in `storage`. */
export function vectorToBlob(v: Float32Array, storage: VectorStorage = 'f32'): Buffer {
  if (storage === 'f32') return Buffer.from(v.buffer, v.byteOffset, v.byteLength);
  let max = 0;
  for (let i = 0; i < v.length; i++) max = Math.max(max, Math.abs(v[i]!));
  const scale = max / 127 || 1;
  const out = Buffer.allocUnsafe(I8_HEADER + v.length);
  out.writeUInt32LE(I8_MARKER, 0);
  out.writeFloatLE(scale, 4);
  const q = new Int8Array(out.buffer, out.byteOffset + I8_HEADER, v.length);
  for (let i = 0; i < v.length; i++) q[i] = Math.round(v[i]! / scale);
  return out;
}

/**
 * Copies a BLOB into a fresh, zero-offset Float32Array. better-sqlite3 may hand back a Buffer that is a
 * slice of a shared pool; a view over it would alias other rows' bytes, and native code that ignores
 * byteOffset (usearch.exactSearch in 2.25–2.26) would read the wrong vector. An i8 BLOB is scaled back.
 */
export function blobToVector(blob: Buffer): Float32Array {
  if (blob.byteLength >= I8_HEADER && blob.readUInt32LE(0) === I8_MARKER) {
    const scale = blob.readFloatLE(4);
    const out = new Float32Array(blob.byteLength - I8_HEADER);
    const q = new Int8Array(blob.buffer, blob.byteOffset + I8_HEADER, out.length);
    for (let i = 0; i < out.length; i++) out[i] = q[i]! * scale;
    return out;
  }
  const out = new Float32Array(blob.byteLength / 4);
  new Uint8Array(out.buffer).set(blob);
  return out;
}
