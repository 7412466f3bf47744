import { cosine } from '@cairn/core';
import { blobToVector } from '@cairn/store';
import type Database from 'better-sqlite3';

/**
 * The design Cairn replaces: no index at all. Every query reads all of a namespace's embeddings from
 * SQLite, turns each BLOB into a Float32Array and scores it with a plain JavaScript cosine loop, then sorts
 * everything. Kept deliberately straightforward: it is the baseline, not a strawman with extra waste.
 */
export class NaiveVectorScan {
  private readonly stmt: Database.Statement<[string, string], { key: number; vector: Buffer }>;

  constructor(
    db: Database.Database,
    private readonly space: string,
  ) {
    this.stmt = db.prepare('SELECT key, vector FROM embeddings WHERE space = ? AND namespace = ?');
  }

  /** Keys and cosines of the `limit` nearest vectors, best first. */
  search(namespace: string, query: Float32Array, limit: number): Array<{ key: number; cosine: number }> {
    const rows = this.stmt.all(this.space, namespace);
    const scored: Array<{ key: number; cosine: number }> = new Array(rows.length);
    for (let i = 0; i < rows.length; i++) {
      const row = rows[i]!;
      // A copy (the store's decoder), as any code keeping the vector must make: better-sqlite3 Buffers
      // may share a pool.
      scored[i] = { key: row.key, cosine: cosine(query, blobToVector(row.vector)) };
    }
    scored.sort((a, b) => b.cosine - a.cosine);
    return scored.slice(0, limit);
  }
}
