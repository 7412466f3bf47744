import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';

/**
 * The compiled reader module, for a worker thread to import (see `EmbeddingStore.offThreadKeyReader`).
 * Named through `../dist/`, which is the same file whether this module runs from `src/` (tests) or `dist/`.
 */
export const NAMESPACE_KEYS_READER = fileURLToPath(
  new URL('../dist/namespace-keys-reader.js', import.meta.url),
);

export interface NamespaceKeysRead {
  /** The database file. */
  path: string;
  spaceId: string;
  namespace: string;
  /** Only keys whose vector was written after this write_seq (-1: every key). */
  afterWriteSeq: number;
}

/** Keys per query, as `EmbeddingStore.keyPages` reads them. */
const PAGE = 5_000;

/**
 * Every key of a namespace with a vector in the space (or those written after `afterWriteSeq`), read in
 * write order on the calling thread with a read-only connection of its own: an index audit runs this on a
 * worker thread beside the graph look-up, so the serving thread reads no key (at a million keys that was
 * ~0.9 s of it, a 5,000-key page per turn, in a new server's first seconds and after every merge). A key
 * re-embedded while the pages are read may come twice, as from `keyPages`: the caller dedupes.
 */
export default function readNamespaceKeys(a: NamespaceKeysRead): Float64Array {
  const db = new Database(a.path, { readonly: true, fileMustExist: true });
  try {
    const page = db
      .prepare<[string, string, number, number], [number, number]>(
        `SELECT key, write_seq FROM embeddings
         WHERE space = ? AND namespace = ? AND write_seq > ? ORDER BY write_seq LIMIT ?`,
      )
      .raw();
    let keys = new Float64Array(PAGE);
    let n = 0;
    for (let after = a.afterWriteSeq; ; ) {
      const rows = page.all(a.spaceId, a.namespace, after, PAGE);
      if (n + rows.length > keys.length) {
        const grown = new Float64Array(Math.max(keys.length * 2, n + rows.length));
        grown.set(keys.subarray(0, n));
        keys = grown;
      }
      for (const [key] of rows) keys[n++] = key;
      if (rows.length < PAGE) return keys.slice(0, n);
      after = rows.at(-1)![1];
    }
  } finally {
    db.close();
  }
}
