// Runs PRAGMA quick_check on its own read-only connection, on a worker thread: at 100k memories on a cold
// cache it reads the whole file for ~20 s, which the serving thread must not wait for.
import { parentPort, workerData } from 'node:worker_threads';
import { checkIntegrity, type IntegrityReport, openDatabase } from '@cairn/store';

const { path } = workerData as { path: string };
let report: IntegrityReport;
const started = Date.now();
try {
  // No memory map: a damaged page is read with read(), never mapped.
  const db = openDatabase(path, { readonly: true, mmapBytes: 0 });
  try {
    report = checkIntegrity(db, 'quick');
  } finally {
    db.close();
  }
} catch (err) {
  // A file SQLite cannot even open as a database is the plainest damage there is.
  report = { ok: false, depth: 'quick', problems: [(err as Error).message], ms: Date.now() - started };
}
parentPort?.postMessage(report);
