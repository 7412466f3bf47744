import type Database from 'better-sqlite3';

export interface DiskUsage {
  /** The database file's size in pages × page size (the WAL aside). */
  bytes: number;
  /** Of those, bytes in free pages: space SQLite reuses, but the filesystem does not get back by itself. */
  freeBytes: number;
  /** `incremental`: free pages can be given back online (reclaimFreePages); `none`: only by compact(). */
  autoVacuum: 'none' | 'full' | 'incremental';
  pageSize: number;
}

const AUTO_VACUUM = ['none', 'full', 'incremental'] as const;

export function diskUsage(db: Database.Database): DiskUsage {
  const pageSize = db.pragma('page_size', { simple: true }) as number;
  const pages = db.pragma('page_count', { simple: true }) as number;
  const free = db.pragma('freelist_count', { simple: true }) as number;
  const mode = db.pragma('auto_vacuum', { simple: true }) as number;
  return {
    bytes: pages * pageSize,
    freeBytes: free * pageSize,
    autoVacuum: AUTO_VACUUM[mode] ?? 'none',
    pageSize,
  };
}

/**
 * Gives up to `pages` free pages back to the filesystem, in one short write transaction; a no-op unless
 * the file uses incremental auto-vacuum. Returns the free bytes left. Called in steps by the writer, so
 * dropping a large embedding space shrinks the file online, without a VACUUM.
 */
export function reclaimFreePages(db: Database.Database, pages: number): number {
  db.pragma(`incremental_vacuum(${Math.max(1, Math.floor(pages))})`);
  return diskUsage(db).freeBytes;
}

/**
 * Rewrites the whole file (VACUUM), switching it to incremental auto-vacuum on the way: an older data
 * folder's one-time conversion. It holds the write lock throughout, so the caller must have the folder to
 * itself. The WAL is checkpointed and truncated after, so the file shrinks on disk at once.
 */
export function compact(db: Database.Database): { before: number; after: number } {
  const before = diskUsage(db).bytes;
  db.pragma('auto_vacuum = INCREMENTAL');
  db.exec('VACUUM');
  db.pragma('wal_checkpoint(TRUNCATE)');
  return { before, after: diskUsage(db).bytes };
}
