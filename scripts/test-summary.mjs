#!/usr/bin/env node
// Prints the closing lines of a test run from vitest's JSON report, e.g. "tests: 120 passed, 0 failed, 1
// skipped", then what CI would otherwise lose: CI keeps only the end of the output.
// Usage: test-summary.mjs [report.json] [output.log]
import { existsSync, readFileSync } from 'node:fs';
import { relative } from 'node:path';

const file = process.argv[2] ?? '.vitest-report.json';
const log = process.argv[3];
const r = JSON.parse(readFileSync(file, 'utf8'));

// A test process that dies in native code prints its last words on its own stderr, which vitest passes on
// where they fall, often minutes before the end; and when the file's tests had all passed, the only other
// trace is "Worker exited unexpectedly", which names no file. Both are repeated here.
if (log && existsSync(log)) {
  const lines = readFileSync(log, 'utf8').split('\n');
  const fatal =
    /terminate called|Napi::Error|Segmentation fault|FATAL ERROR|Aborted|SIGABRT|SIGSEGV|SIGBUS|heap out of memory|Worker exited unexpectedly/;
  for (let i = 0; i < lines.length; i++) {
    if (!fatal.test(lines[i])) continue;
    console.log(`output line ${i + 1}: ${lines.slice(Math.max(0, i - 2), i + 3).join('\n  ')}`);
  }
}

const skipped = (r.numPendingTests ?? 0) + (r.numTodoTests ?? 0);
console.log(
  `tests: ${r.numPassedTests} passed, ${r.numFailedTests} failed${skipped ? `, ${skipped} skipped` : ''}`,
);
// Tests neither passed, failed nor skipped never ran: a test process that died (a crash in native code, a
// thread torn down under a task) takes its file's remaining tests with it, and vitest's report still says
// success.
const unrun = r.numTotalTests - r.numPassedTests - r.numFailedTests - skipped;
if (unrun > 0) console.log(`tests: ${unrun} never ran (a test process exited early: see the errors above)`);
// The files that did not pass, named last, with the first line of why: a file whose process died after its
// tests had all passed is otherwise named nowhere.
for (const f of r.testResults ?? []) {
  if (f.status === 'passed') continue;
  const why = String(f.message ?? '')
    .split('\n')[0]
    .slice(0, 300);
  console.log(`file ${f.status}: ${relative(process.cwd(), f.name)}${why ? ` (${why})` : ''}`);
}
process.exit(r.numFailedTests > 0 || r.numTotalTests === 0 || unrun > 0 || !r.success ? 1 : 0);
