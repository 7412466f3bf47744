#!/usr/bin/env node
// Prints one plain closing line from vitest's JSON report, e.g. "tests: 120 passed, 0 failed, 1 skipped".
import { readFileSync } from 'node:fs';

const file = process.argv[2] ?? '.vitest-report.json';
const r = JSON.parse(readFileSync(file, 'utf8'));
const skipped = (r.numPendingTests ?? 0) + (r.numTodoTests ?? 0);
console.log(
  `tests: ${r.numPassedTests} passed, ${r.numFailedTests} failed${skipped ? `, ${skipped} skipped` : ''}`,
);
process.exit(r.numFailedTests > 0 || r.numTotalTests === 0 || !r.success ? 1 : 0);
