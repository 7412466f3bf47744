// Runs PRAGMA quick_check on its own read-only connection, on a worker thread: at 100k memories on a cold
// cache it reads the whole file for ~20 s, which the serving thread must not wait for.
import { parentPort, workerData } from 'node:worker_threads';
import { checkDatabaseFile, type IntegrityReport } from '@cairn/store';

const { path } = workerData as { path: string };
let report: IntegrityReport;
try {
  report = checkDatabaseFile(path, 'quick');
} catch (err) {
  // Not damage (say, a permission error): still a reason not to trust the file, said as such.
  report = { ok: false, depth: 'quick', problems: [(err as Error).message], ms: 0 };
}
parentPort?.postMessage(report);
