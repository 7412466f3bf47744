import type Database from 'better-sqlite3';
import { openDatabase } from './open-database.js';

/** One read-only connection per database file, kept for the worker thread's life (a pool's thread exits when idle). */
const connections = new Map<string, Database.Database>();

/**
 * The calling worker thread's read connection to `path`, opened on first use. Its pages come through the
 * memory map and the OS page cache; SQLite's own cache (64 MiB for the serving connection) would only add
 * to the process's memory.
 */
export function readerConnection(path: string): Database.Database {
  let db = connections.get(path);
  if (!db) {
    db = openDatabase(path, { readonly: true });
    db.pragma('cache_size = -8192');
    connections.set(path, db);
  }
  return db;
}

/** Runs `fn` on the thread's connection; a connection that failed (the file replaced, damaged, gone) is not kept. */
export function withReaderConnection<T>(path: string, fn: (db: Database.Database) => T): T {
  const db = readerConnection(path);
  try {
    return fn(db);
  } catch (err) {
    connections.delete(path);
    db.close();
    throw err;
  }
}
