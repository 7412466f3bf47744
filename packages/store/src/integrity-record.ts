import { randomBytes } from 'node:crypto';
import { readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { IntegrityReport } from './integrity.js';

/** The last integrity verdict on a data folder's cairn.db, as the process that reached it recorded it. */
export interface RecordedIntegrity {
  ok: boolean;
  depth: 'quick' | 'full';
  /** SQLite's findings (at most five), or the damage an operation met. */
  problems: string[];
  /** When (ms since the epoch). */
  checkedAt: number;
  /** Who checked: `cairn serve (process 123)`, `cairn check (process 456)`. */
  by: string;
}

const FILE = 'integrity.json';

/**
 * Records a verdict on `dbPath` beside it (`integrity.json`, replaced whole), so that a command that does
 * not check the file itself (`cairn stats`, which must stay quick at a million memories) can say when it was
 * last found sound, or damaged, and by whom. A quick check's "sound" does not replace a full check's
 * "damaged": the quick check does not read index contents, where the full one may have found the damage.
 * Never throws: the verdict matters more than its record (a full disk, a read-only folder).
 */
export function recordIntegrity(
  dbPath: string,
  report: Pick<IntegrityReport, 'ok' | 'depth' | 'problems'>,
  by: string,
): void {
  if (report.ok && report.depth === 'quick') {
    const last = readRecordedIntegrity(dbPath);
    if (last && !last.ok && last.depth === 'full') return;
  }
  const record: RecordedIntegrity = {
    ok: report.ok,
    depth: report.depth,
    problems: report.problems.slice(0, 5),
    checkedAt: Date.now(),
    by,
  };
  const path = join(dirname(dbPath), FILE);
  const temp = `${path}.${randomBytes(4).toString('hex')}.tmp`;
  try {
    writeFileSync(temp, `${JSON.stringify(record)}\n`);
    renameSync(temp, path);
  } catch {
    // Not recorded: the verdict itself was acted on (logged, requests refused).
    rmSync(temp, { force: true });
  }
}

/** The verdict last recorded beside `dbPath`; null when none was (or the record cannot be read). */
export function readRecordedIntegrity(dbPath: string): RecordedIntegrity | null {
  try {
    const r = JSON.parse(readFileSync(join(dirname(dbPath), FILE), 'utf8')) as RecordedIntegrity;
    return typeof r.ok === 'boolean' && typeof r.checkedAt === 'number' && Array.isArray(r.problems)
      ? r
      : null;
  } catch {
    return null;
  }
}
