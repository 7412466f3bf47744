#!/usr/bin/env node
// Prints one plain closing line from vitest's JSON report, e.g. "tests: 120 passed, 0 failed, 1 skipped".
import { readFileSync } from 'node:fs';

const file = process.argv[2] ?? '.vitest-report.json';
const r = JSON.parse(readFileSync(file, 'utf8'));
const skipped = (r.numPendingTests ?? 0) + (r.numTodoTests ?? 0);
console.log(
  `tests: ${r.numPassedTests} passed, ${r.numFailedTests} failed${skipped ? `, ${skipped} skipped` : ''}`,
);
// Tests neither passed, failed nor skipped never ran: a test process that died (a crash in native code, a
// thread torn down under a task) takes its file's remaining tests with it, and vitest's report still says
// success.
const unrun = r.numTotalTests - r.numPassedTests - r.numFailedTests - skipped;
if (unrun > 0) console.log(`tests: ${unrun} never ran (a test process exited early: see the errors above)`);
process.exit(r.numFailedTests > 0 || r.numTotalTests === 0 || unrun > 0 || !r.success ? 1 : 0);
