import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { CairnError } from '@cairn/core';
import Database from 'better-sqlite3';
import { migrate } from './migrations.js';

export interface OpenDatabaseOptions {
  /** Open read-only (no migrations run). @defaultValue false */
  readonly?: boolean;
  /** How long a writer waits for another process's lock before SQLITE_BUSY, in ms. @defaultValue 5000 */
  busyTimeoutMs?: number;
  /**
   * Bytes of the database file read through a memory map rather than read() calls. A search checks a few
   * hundred memories by key, scattered over the file: mapped, those pages come from the OS page cache with no
   * system call or copy, and processes reading one folder (`cairn serve --processes N`) share them. 0 turns
   * it off. @defaultValue 1 GiB
   */
  mmapBytes?: number;
}

/** Default of {@link OpenDatabaseOptions.mmapBytes}. */
export const DEFAULT_MMAP_BYTES = 1024 ** 3;

/**
 * Opens (creating if needed) a Cairn database. WAL mode lets readers run beside the one writer;
 * `synchronous = NORMAL` in WAL mode makes a committed transaction durable against a process crash
 * (kill -9) — only an OS crash or power loss may roll back the last transactions.
 */
export function openDatabase(path: string, opts: OpenDatabaseOptions = {}): Database.Database {
  // The user's only when created here (a distributed worker's first open): see openDataFolder.
  if (!opts.readonly) mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  let db: Database.Database;
  try {
    db = new Database(path, { readonly: opts.readonly ?? false, fileMustExist: opts.readonly ?? false });
  } catch (err) {
    throw new CairnError(
      'STORAGE_ERROR',
      `cannot open database ${path}: ${(err as Error).message}`,
      {},
      { cause: err },
    );
  }
  db.pragma(`busy_timeout = ${opts.busyTimeoutMs ?? 5000}`);
  db.pragma(`mmap_size = ${Math.max(0, Math.floor(opts.mmapBytes ?? DEFAULT_MMAP_BYTES))}`);
  // 64 MiB page cache (negative = KiB): keeps the FTS segments of a 100k corpus hot. Readers too: with
  // SQLite's default of 2 MiB, a reader process checked a search's winners ~2× slower than the writer.
  db.pragma('cache_size = -65536');
  if (!opts.readonly) {
    // Takes effect only on a new, empty file (an older folder converts once, with `cairn compact`): pages
    // freed by dropping an embedding space can then be given back to the filesystem online, in steps.
    db.pragma('auto_vacuum = INCREMENTAL');
    withBusyRetry(() => db.pragma('journal_mode = WAL'), opts.busyTimeoutMs ?? 5000);
    db.pragma('synchronous = NORMAL');
    db.pragma('foreign_keys = ON');
    db.pragma('temp_store = MEMORY');
    withBusyRetry(() => migrate(db), opts.busyTimeoutMs ?? 5000);
  }
  return db;
}

/**
 * Runs `fn` again while SQLite answers SQLITE_BUSY, for up to `ms`. Switching a fresh file to WAL takes
 * an exclusive lock and SQLite does not call the busy handler for it, so processes opening a new data
 * folder at the same moment (two workers, several MCP sessions) failed with "database is locked".
 */
function withBusyRetry<T>(fn: () => T, ms: number): T {
  const deadline = Date.now() + ms;
  for (let wait = 5; ; wait = Math.min(wait * 2, 100)) {
    try {
      return fn();
    } catch (err) {
      const code = (err as { code?: string }).code;
      if (!code?.startsWith('SQLITE_BUSY') || Date.now() > deadline) throw err;
      // A synchronous pause: opening is synchronous, and this only happens at start-up.
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, wait);
    }
  }
}
