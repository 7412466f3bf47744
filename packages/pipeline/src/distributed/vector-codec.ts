/** Float32 vectors travel through Redis as base64 of their little-endian bytes. */
export function encodeVector(v: Float32Array): string {
  return Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('base64');
}

/** Decodes {@link encodeVector}; the copy aligns the bytes, which Float32Array requires. */
export function decodeVector(s: string): Float32Array {
  const bytes = Buffer.from(s, 'base64');
  if (bytes.byteLength % 4 !== 0) throw new Error(`vector of ${bytes.byteLength} bytes is not float32`);
  const out = new Float32Array(bytes.byteLength / 4);
  new Uint8Array(out.buffer).set(bytes);
  return out;
}
