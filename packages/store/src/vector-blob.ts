/** Float32 vectors are stored as raw little-endian BLOBs (4 bytes per dimension). */
export function vectorToBlob(v: Float32Array): Buffer {
  return Buffer.from(v.buffer, v.byteOffset, v.byteLength);
}

/**
 * Copies a BLOB into a fresh, zero-offset Float32Array. better-sqlite3 may hand back a Buffer that is a
 * slice of a shared pool; a view over it would alias other rows' bytes, and native code that ignores
 * byteOffset (usearch.exactSearch in 2.25–2.26) would read the wrong vector.
 */
export function blobToVector(blob: Buffer): Float32Array {
  const out = new Float32Array(blob.byteLength / 4);
  new Uint8Array(out.buffer).set(blob);
  return out;
}
