import type { EmbeddingSpace, PendingRoute } from '@cairn/core';
import type Database from 'better-sqlite3';
import { storageFailure } from './storage-failure.js';
import { vectorToBlob } from './vector-blob.js';

/**
 * The embed stage's view of named-field routes: which routes a space lacks vectors for (past its route
 * cursor), and storing their vectors with the cursor in one transaction. Route rows are only ever added
 * (a rewritten field is a new row), so the cursor alone says what is left.
 */
export class RouteEmbeddings {
  private readonly pendingStmt: Database.Statement<[string, number], PendingRoute>;
  private readonly insert: Database.Statement;
  private readonly advance: Database.Statement<[number, string]>;
  private readonly countStmt: Database.Statement<
    [string, string, string],
    { fields: number; embedded: number }
  >;

  constructor(private readonly db: Database.Database) {
    this.pendingStmt = db.prepare(
      `SELECT r.id, r.key, r.namespace, r.route, r.text FROM memory_routes r
       WHERE r.id > (SELECT route_cursor FROM embedding_spaces WHERE id = ?) ORDER BY r.id LIMIT ?`,
    );
    // A route rewritten or deleted since it was read has no row any more: its vector is not stored.
    this.insert = db.prepare(
      `INSERT INTO route_embeddings (space, route_id, key, namespace, route, vector)
       SELECT ?, id, key, namespace, route, ? FROM memory_routes WHERE id = ?
       ON CONFLICT (space, route_id) DO NOTHING`,
    );
    this.advance = db.prepare('UPDATE embedding_spaces SET route_cursor = max(route_cursor, ?) WHERE id = ?');
    this.countStmt = db.prepare(
      `SELECT (SELECT count(*) FROM memory_routes WHERE namespace = ?) AS fields,
              (SELECT count(*) FROM route_embeddings WHERE space = ? AND namespace = ?) AS embedded`,
    );
  }

  /** Routes past the space's route cursor, oldest first. */
  pendingRoutes(spaceId: string, limit: number): PendingRoute[] {
    return this.pendingStmt.all(spaceId, limit);
  }

  /** Stores route vectors (those of the space's dimensions) and advances the route cursor to `cursor`. */
  putRoutes(
    space: EmbeddingSpace,
    items: ReadonlyArray<{ route: PendingRoute; vector: Float32Array }>,
    cursor: number,
  ): number {
    // Route vectors are kept as the space keeps its memories' (see VectorStorage).
    const storage =
      this.db.prepare('SELECT storage FROM embedding_spaces WHERE id = ?').pluck().get(space.id) === 'i8'
        ? 'i8'
        : 'f32';
    try {
      return this.db
        .transaction(() => {
          let stored = 0;
          for (const { route, vector } of items) {
            if (vector.length !== space.dimensions) continue;
            stored += this.insert.run(space.id, vectorToBlob(vector, storage), route.id).changes;
          }
          this.advance.run(cursor, space.id);
          return stored;
        })
        .immediate();
    } catch (err) {
      throw storageFailure(err);
    }
  }

  /** A namespace's named fields, and how many of them have a vector in the space (for stats). */
  counts(spaceId: string | null, namespace: string): { fields: number; embedded: number } {
    return this.countStmt.get(namespace, spaceId ?? '', namespace)!;
  }
}
