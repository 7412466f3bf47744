import { CairnError } from '@cairn/core';
import type Database from 'better-sqlite3';
import { openDatabase } from './open-database.js';

/** What an integrity check of cairn.db found. */
export interface IntegrityReport {
  ok: boolean;
  /** `quick` checks every page and b-tree's structure; `full` also checks index contents and FTS5's index. */
  depth: 'quick' | 'full';
  /** SQLite's own findings, one line each (at most `maxProblems`). */
  problems: string[];
  ms: number;
}

/**
 * SQLite's codes for a database file that is not what SQLite wrote: reading past them returns wrong rows
 * or none, silently where a damaged page happens not to break a query's path.
 */
const DAMAGE_CODES = new Set([
  'SQLITE_CORRUPT',
  'SQLITE_NOTADB',
  'SQLITE_CORRUPT_VTAB',
  'SQLITE_CORRUPT_INDEX',
]);

/** Whether an error thrown by better-sqlite3 says the database file is damaged. */
export function isDatabaseDamage(err: unknown): boolean {
  const code = (err as { code?: unknown })?.code;
  if (typeof code === 'string' && (DAMAGE_CODES.has(code) || code.startsWith('SQLITE_CORRUPT'))) return true;
  // FTS5 reports a shadow table it cannot parse as a failed constructor, with SQLite's generic code.
  return (
    err instanceof Error &&
    /vtable constructor failed|database disk image is malformed|file is not a database/.test(err.message)
  );
}

/**
 * Checks a database's integrity. `quick` (PRAGMA quick_check) reads every page once and catches pages
 * overwritten with garbage, truncation and broken b-trees; it takes seconds per hundred thousand memories
 * on a cold cache, so long-lived processes run it off the serving thread. `full` adds `integrity_check`
 * (index entries match their rows) and FTS5's check of the lexical index against the memories; it needs
 * a writable connection for the latter, and holds the write lock while it runs.
 */
export function checkIntegrity(
  db: Database.Database,
  depth: 'quick' | 'full' = 'quick',
  maxProblems = 20,
): IntegrityReport {
  const started = Date.now();
  const problems: string[] = [];
  try {
    const pragma = depth === 'full' ? 'integrity_check' : 'quick_check';
    const rows = db.pragma(`${pragma}(${maxProblems})`, { simple: false }) as Array<Record<string, string>>;
    for (const r of rows) {
      const line = Object.values(r)[0] ?? '';
      if (line !== 'ok') problems.push(...line.split('\n').filter((l) => l && !l.startsWith('***')));
    }
    if (depth === 'full' && problems.length === 0 && !db.readonly) {
      db.prepare("INSERT INTO memories_fts (memories_fts, rank) VALUES ('integrity-check', 1)").run();
    }
  } catch (err) {
    // A page too damaged to walk stops the check itself: that is a finding, not a failure to check.
    if (!isDatabaseDamage(err)) throw err;
    problems.push((err as Error).message);
  }
  return {
    ok: problems.length === 0,
    depth,
    problems: problems.slice(0, maxProblems),
    ms: Date.now() - started,
  };
}

/** The error every operation on a damaged database answers with: what is wrong and what to do. */
export function damagedDatabaseError(path: string, problems: readonly string[], cause?: unknown): CairnError {
  const first = problems[0] ?? 'SQLite reported the file as malformed';
  return new CairnError(
    'STORAGE_ERROR',
    `${path} is damaged (${first}${problems.length > 1 ? `, and ${problems.length - 1} more` : ''}): ` +
      'Cairn refuses to answer from it rather than return wrong results. Stop Cairn, keep a copy of the ' +
      'data folder, run `cairn check --data-dir <folder>` for the full report, and restore the folder from a backup',
    { reason: 'damaged', problems: problems.slice(0, 5) },
    cause === undefined ? undefined : { cause },
  );
}

/**
 * Checks a database file on a connection of its own (read-only, no memory map: a damaged page is read,
 * never mapped). A file SQLite cannot even open as a database is reported as damage, not thrown.
 */
export function checkDatabaseFile(path: string, depth: 'quick' | 'full', maxProblems = 20): IntegrityReport {
  const started = Date.now();
  try {
    const db = openDatabase(path, { readonly: true, mmapBytes: 0 });
    try {
      return checkIntegrity(db, depth, maxProblems);
    } finally {
      db.close();
    }
  } catch (err) {
    if (!isDatabaseDamage(err) && !(err instanceof CairnError && err.code === 'STORAGE_ERROR')) throw err;
    return { ok: false, depth, problems: [(err as Error).message], ms: Date.now() - started };
  }
}
