// The kept counts' checks over a database file, for `cairn check`. Apart from kept-counts.ts, which the
// migrations use to fill the counts: opening a file runs the migrations.
import { keptCountsDrift, recountKeptCounts } from './kept-counts.js';
import { openDatabase } from './open-database.js';

/**
 * `keptCountsDrift` of a database file, read-only, so it runs beside a serving process. Null when the file's
 * schema keeps no counts yet (a folder a newer Cairn has not opened for writing).
 */
export function keptCountsDriftOfFile(path: string): string[] | null {
  const db = openDatabase(path, { readonly: true, mmapBytes: 0 });
  try {
    const kept = db
      .prepare(
        "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN ('namespace_rows', 'space_vectors')",
      )
      .pluck()
      .get() as number;
    return kept === 2 ? keptCountsDrift(db) : null;
  } finally {
    db.close();
  }
}

/**
 * `recountKeptCounts` of a database file: one short write transaction. Safe beside a running writer: SQLite
 * serialises it with the writer's transactions, and the triggers apply every later change on top of it.
 */
export function recountKeptCountsOfFile(path: string): void {
  const db = openDatabase(path, { mmapBytes: 0 });
  try {
    recountKeptCounts(db);
  } finally {
    db.close();
  }
}
