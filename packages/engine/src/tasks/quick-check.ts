// Runs PRAGMA quick_check on its own read-only connection, on a worker thread: at 100k memories on a cold
// cache it reads the whole file for ~20 s, which the serving thread must not wait for.
import { getPriority, setPriority } from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import { checkDatabaseFile, type IntegrityReport } from '@cairn/store';

// Below the serving thread, as the compute pool's threads are: the check runs while a new server meets its
// first searches, and a whole core for it (0.9 s at 100k memories, warm) made those searches wait for the
// CPU on a 2-core machine. Only on Linux, where nice is per thread (elsewhere it would lower the process).
if (process.platform === 'linux') {
  try {
    setPriority(Math.min(19, getPriority() + 10));
  } catch {
    // Not permitted (a sandbox): the check runs at the thread's priority.
  }
}

const { path } = workerData as { path: string };
let report: IntegrityReport;
try {
  // Said once the connection is open: from then on the thread may be terminated (see StoreHealth.close).
  report = checkDatabaseFile(path, 'quick', undefined, () => parentPort?.postMessage('opened'));
} catch (err) {
  // Not damage (say, a permission error): still a reason not to trust the file, said as such.
  report = { ok: false, depth: 'quick', problems: [(err as Error).message], ms: 0 };
}
parentPort?.postMessage(report);
