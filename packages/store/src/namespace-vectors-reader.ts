import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { blobToVector } from './vector-blob.js';

/**
 * The compiled reader module, for a worker thread to import (see `EmbeddingStore.offThreadReader`). Named
 * through `../dist/`, which is the same file whether this module runs from `src/` (tests) or `dist/`.
 */
export const NAMESPACE_VECTORS_READER = fileURLToPath(
  new URL('../dist/namespace-vectors-reader.js', import.meta.url),
);

export interface NamespaceVectorsRead {
  /** The database file. */
  path: string;
  spaceId: string;
  namespace: string;
  /** Distinct keys to read at most: those counted when the build started (later ones are caught up). */
  limit: number;
  dimensions: number;
}

/** Rows per query: one page of 384-d vectors is read in a few milliseconds. */
const PAGE = 2_000;

/**
 * Reads a namespace's vectors in one space, in write order, on the calling thread with a read-only
 * connection of its own: a graph build runs this on its worker thread, so the serving thread neither reads
 * nor copies them (at 100k vectors that was 0.85 s of the serving thread in pages of up to 50 ms, and a
 * live server's searches queued for up to 1.9 s behind it). A vector re-embedded while the pages are read
 * comes again later in write order and takes its key's slot: a graph refuses a key twice.
 */
export default function readNamespaceVectors(a: NamespaceVectorsRead): {
  keys: BigUint64Array;
  vectors: Float32Array;
  watermark: number;
} {
  const cap = Math.max(1, a.limit);
  const keys = new BigUint64Array(cap);
  const vectors = new Float32Array(cap * a.dimensions);
  const slotOf = new Map<number, number>();
  let n = 0;
  let watermark = 0;
  const db = new Database(a.path, { readonly: true, fileMustExist: true });
  try {
    const page = db.prepare<
      [string, string, number, number],
      { key: number; writeSeq: number; vector: Buffer }
    >(
      `SELECT key, write_seq AS writeSeq, vector FROM embeddings
       WHERE space = ? AND namespace = ? AND write_seq > ? ORDER BY write_seq LIMIT ?`,
    );
    let after = 0;
    for (;;) {
      const rows = page.all(a.spaceId, a.namespace, after, PAGE);
      for (const row of rows) {
        const slot = slotOf.get(row.key) ?? n;
        if (slot === n) {
          if (n === cap) return done();
          slotOf.set(row.key, n);
          keys[n] = BigInt(row.key);
          n++;
        }
        vectors.set(blobToVector(row.vector), slot * a.dimensions);
        watermark = Math.max(watermark, row.writeSeq);
      }
      if (rows.length < PAGE) return done();
      after = rows.at(-1)!.writeSeq;
    }
  } finally {
    db.close();
  }

  function done() {
    return { keys: keys.subarray(0, n), vectors: vectors.subarray(0, n * a.dimensions), watermark };
  }
}
