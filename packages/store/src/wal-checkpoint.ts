import Database from 'better-sqlite3';

/** What one checkpoint did, as SQLite reports it. */
export interface CheckpointResult {
  /** 1 when a writer or reader kept it from finishing (PASSIVE never waits). */
  busy: number;
  /** Frames in the write-ahead log. */
  log: number;
  /** Frames of it now copied into the database file. */
  checkpointed: number;
}

/** A connection that only checkpoints the write-ahead log of a database another connection writes. */
export interface CheckpointConnection {
  checkpoint(): CheckpointResult;
  close(): void;
}

/**
 * Opens a second connection to `path` for checkpoints alone. In WAL mode a commit only appends pages to
 * the log; the checkpoint that copies them into the database file (and syncs it) runs, by default, inside
 * whichever commit pushes the log past 1,000 pages. On a serving thread that was 20–30 ms at a time
 * (bench/RESULTS.md). A checkpoint by another connection does not change the data, so the writer's page
 * cache stays valid, unlike a commit by another connection, which makes every other connection drop its
 * cache. PASSIVE: it copies what no reader still needs, never waits for a lock, and never blocks the
 * writer.
 */
export function openCheckpointConnection(path: string): CheckpointConnection {
  const db = new Database(path, { fileMustExist: true });
  db.pragma('busy_timeout = 0');
  return {
    checkpoint: () => (db.pragma('wal_checkpoint(PASSIVE)') as CheckpointResult[])[0]!,
    close: () => db.close(),
  };
}
