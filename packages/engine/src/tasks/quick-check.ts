// Runs PRAGMA quick_check on its own read-only connection, in a child process (see StoreHealth.check): at
// 100k memories on a cold cache it reads the whole file for ~20 s, which the serving thread must not wait
// for. Its path comes as the first argument; its report goes back over the IPC channel.
import { getPriority, setPriority } from 'node:os';
import { checkDatabaseFile, type IntegrityReport } from '@cairn/store';

// Below the server, as the compute pool's threads are: the check runs while a new server meets its first
// searches, and a whole core for it (0.9 s at 100k memories, warm) made those searches wait for the CPU on a
// 2-core machine. Relative to the server's own niceness, which the child inherits.
try {
  setPriority(Math.min(19, getPriority() + 10));
} catch {
  // Not permitted (a sandbox): the check runs at the process's priority.
}
// A server that is gone has no use for the verdict.
process.once('disconnect', () => process.exit(0));

const path = process.argv[2] ?? '';
let report: IntegrityReport;
try {
  report = checkDatabaseFile(path, 'quick');
} catch (err) {
  // Not damage (say, a permission error): still a reason not to trust the file, said as such.
  report = { ok: false, depth: 'quick', problems: [(err as Error).message], ms: 0 };
}
// The server may have gone while the check ran (its channel closed): the verdict then has no reader.
if (process.connected)
  process.send?.(report, () => {
    if (process.connected) process.disconnect();
  });
