import Database from 'better-sqlite3';

/** A lock on a file that the operating system holds for this process, released by `release` or its death. */
export interface ExclusiveGuard {
  release(): void;
}

/**
 * Takes the write lock of the SQLite file at `path` (created empty if missing) and keeps it until released:
 * an open `BEGIN IMMEDIATE` that is never committed. SQLite's lock is an fcntl lock, so the OS drops it when
 * the process dies however it dies (kill -9, OOM), and it is never taken from a process that is alive but
 * paused (SIGSTOP, a laptop asleep); within one process SQLite excludes its other connections alike.
 * Returns null at once, without waiting, when another connection holds it.
 *
 * The file must never be deleted: a process that opened the new file of the same name would lock a
 * different inode than the holder's, and both would hold "the" lock.
 */
export function tryExclusiveGuard(path: string): ExclusiveGuard | null {
  const db = new Database(path, { timeout: 0 });
  try {
    db.exec('BEGIN IMMEDIATE');
  } catch (err) {
    db.close();
    if ((err as { code?: string }).code === 'SQLITE_BUSY') return null;
    throw err;
  }
  return {
    release() {
      if (!db.open) return;
      db.exec('ROLLBACK');
      db.close();
    },
  };
}

/** Whether the guard at `path` is free now (taken and let go at once when it is). */
export function exclusiveGuardFree(path: string): boolean {
  const guard = tryExclusiveGuard(path);
  guard?.release();
  return guard !== null;
}
