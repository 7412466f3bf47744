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
}

/**
 * Opens (creating if needed) a Cairn database. WAL mode lets readers run beside the one writer;
 * `synchronous = NORMAL` in WAL mode makes a committed transaction durable against a process crash
 * (kill -9) — only an OS crash or power loss may roll back the last transactions.
 */
export function openDatabase(path: string, opts: OpenDatabaseOptions = {}): Database.Database {
  if (!opts.readonly) mkdirSync(dirname(path), { recursive: true });
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
  if (!opts.readonly) {
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    db.pragma('foreign_keys = ON');
    // 64 MiB page cache (negative = KiB): keeps the FTS segments of a 100k corpus hot.
    db.pragma('cache_size = -65536');
    db.pragma('temp_store = MEMORY');
    migrate(db);
  }
  return db;
}
