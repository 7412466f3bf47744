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

/** See CheckpointConnectionOptions.restartFrames. */
export const DEFAULT_RESTART_FRAMES = 16_384;

export interface CheckpointConnectionOptions {
  /**
   * A log longer than this many frames is also restarted: once the passive pass has copied what it can,
   * the connection waits up to `restartWaitMs` for the writer's lock and its readers, copies the rest, and
   * the writer's next commit writes the log from its start again. Without it a writer that commits
   * continuously (a bulk ingest) never lets the log restart: a passive pass rarely ends with every frame
   * copied at the moment the writer begins its next transaction, and the log grew to 4.4 GB in the first
   * 700,000 memories of a million. 16,384 frames: 64 MiB of 4 KiB pages. @defaultValue 16_384
   */
  restartFrames?: number;
  /** How long a restart waits for the writer's lock and for readers, ms. @defaultValue 50 */
  restartWaitMs?: number;
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
export function openCheckpointConnection(
  path: string,
  opts: CheckpointConnectionOptions = {},
): CheckpointConnection {
  const restartFrames = opts.restartFrames ?? DEFAULT_RESTART_FRAMES;
  const restartWaitMs = Math.max(0, Math.floor(opts.restartWaitMs ?? 50));
  const db = new Database(path, { fileMustExist: true });
  db.pragma('busy_timeout = 0');
  const run = (mode: 'PASSIVE' | 'RESTART') =>
    (db.pragma(`wal_checkpoint(${mode})`) as CheckpointResult[])[0]!;
  return {
    checkpoint: () => {
      const passive = run('PASSIVE');
      if (passive.log <= restartFrames) return passive;
      // RESTART holds the writer's lock while it copies what the passive pass could not and waits for
      // readers: a short wait for the writer's next commit, bounded by the busy timeout here.
      db.pragma(`busy_timeout = ${restartWaitMs}`);
      try {
        return run('RESTART');
      } finally {
        db.pragma('busy_timeout = 0');
      }
    },
    close: () => db.close(),
  };
}
