import { accessSync, constants, existsSync } from 'node:fs';
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
 * Returns null when another connection holds it, at once or after `waitMs`.
 *
 * The file must never be deleted: a process that opened the new file of the same name would lock a
 * different inode than the holder's, and both would hold "the" lock.
 */
export function tryExclusiveGuard(path: string, opts: { waitMs?: number } = {}): ExclusiveGuard | null {
  // A file this user cannot write is opened read-only by SQLite, without a word, and a read-only
  // connection's BEGIN IMMEDIATE excludes nobody: every process would hold the guard. access() opens no
  // descriptor (closing one would drop this process's lock) and fails with the file system's own code.
  if (existsSync(path)) accessSync(path, constants.W_OK);
  const db = new Database(path, { timeout: opts.waitMs ?? 0 });
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

/**
 * Whether the guard at `path` is free now, for this process: it is taken and let go at once when it is, so
 * a process taking it at that instant must wait a moment for it (`waitMs`). A guard this process cannot
 * write is never free for it.
 */
export function exclusiveGuardFree(path: string): boolean {
  let guard: ExclusiveGuard | null;
  try {
    guard = tryExclusiveGuard(path);
  } catch {
    return false;
  }
  guard?.release();
  return guard !== null;
}
