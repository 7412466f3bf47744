import type Database from 'better-sqlite3';
import type { StatementCache } from './statement-cache.js';

/** A memory as a pruning policy ranks it: by how it was used. */
export interface PruningCandidate {
  key: number;
  id: string;
  ts: number;
  accessCount: number;
  lastAccessed: number | null;
}

/**
 * The live memories a pruning policy covers (its kind, its fact slot), most used first: access count,
 * then last access (or, never accessed, the memory's own time), then newest. The policy keeps a prefix.
 */
export function rankForPruning(
  db: Database.Database,
  namespace: string,
  cover: { kind?: string; slot?: string },
): PruningCandidate[] {
  const where = ['namespace = ?', 'superseded_by IS NULL', 'deleted_at IS NULL'];
  const params: unknown[] = [namespace];
  if (cover.kind !== undefined) {
    where.push('kind = ?');
    params.push(cover.kind);
  }
  if (cover.slot !== undefined) {
    where.push("json_valid(meta) AND json_extract(meta, '$.slot') = ?");
    params.push(cover.slot);
  }
  return db
    .prepare(
      `SELECT key, id, ts, access_count AS accessCount, last_accessed AS lastAccessed FROM memories
       WHERE ${where.join(' AND ')}
       ORDER BY access_count DESC, coalesce(last_accessed, ts) DESC, ts DESC, key DESC`,
    )
    .all(...params) as PruningCandidate[];
}

/**
 * Counts accesses by search (memories returned, and how often), in one transaction. The meta stamp is
 * left alone: an access changes nothing a search filters or ranks on, and re-reading every returned
 * record after each search would defeat the record cache. False when another process holds the write
 * lock: counts are a hint, and the caller keeps them for the next try.
 */
export function recordAccess(
  db: Database.Database,
  statements: StatementCache,
  accesses: ReadonlyArray<{ namespace: string; id: string; count: number }>,
  at: number,
): boolean {
  const bump = statements.get(
    `UPDATE memories SET access_count = access_count + ?, last_accessed = max(coalesce(last_accessed, 0), ?)
     WHERE namespace = ? AND id = ?`,
  );
  // Never wait for another process's write lock (a follower beside a busy writer would stall its searches
  // for up to the busy timeout).
  const timeout = db.pragma('busy_timeout', { simple: true }) as number;
  db.pragma('busy_timeout = 0');
  try {
    db.transaction(() => {
      for (const a of accesses) bump.run(a.count, at, a.namespace, a.id);
    }).immediate();
    return true;
  } catch (err) {
    if ((err as { code?: string }).code === 'SQLITE_BUSY') return false;
    throw err;
  } finally {
    db.pragma(`busy_timeout = ${timeout}`);
  }
}

/**
 * Puts back access counts an export carried (`cairn import`): each memory's count and last access become
 * at least those given, so importing one file twice counts nothing twice. One transaction.
 */
export function restoreAccess(
  db: Database.Database,
  statements: StatementCache,
  accesses: ReadonlyArray<{ namespace: string; id: string; count: number; last: number | null }>,
): void {
  const raise = statements.get(
    `UPDATE memories SET access_count = max(access_count, ?),
       last_accessed = CASE WHEN ? IS NULL THEN last_accessed ELSE max(coalesce(last_accessed, 0), ?) END
     WHERE namespace = ? AND id = ?`,
  );
  db.transaction(() => {
    for (const a of accesses) raise.run(a.count, a.last, a.last, a.namespace, a.id);
  }).immediate();
}
