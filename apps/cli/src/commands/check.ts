import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { CairnError } from '@cairn/core';
import {
  checkDatabaseFile,
  keptCountsDriftOfFile,
  recordIntegrity,
  recountKeptCountsOfFile,
} from '@cairn/store';
import { type CliEnv, resolveDataDir } from '../env.js';
import { EXIT, writeJson } from '../output.js';

/**
 * `cairn check`: SQLite's integrity_check over cairn.db (every page, b-tree and index entry), read-only so
 * it runs beside a serving process. A full check also compares the counts `stats`, `spaces` and `/metrics`
 * read (kept by triggers, migrations 17 and 18) with the tables; `--recount` sets them from the tables.
 * The vector index files are not checked here: they are derived, and a damaged one is rebuilt from the
 * stored vectors when it is loaded (and the rebuild is logged).
 */
export async function checkCommand(
  flags: { dataDir?: string; json?: boolean; quick?: boolean; recount?: boolean },
  env: CliEnv,
) {
  const dir = resolveDataDir(flags.dataDir, env);
  const path = join(dir, 'cairn.db');
  if (!existsSync(path)) throw new CairnError('NOT_FOUND', `no cairn.db in ${dir}`, { field: 'dataDir' });
  const report = checkDatabaseFile(path, flags.quick ? 'quick' : 'full', 100);
  recordIntegrity(path, report, `cairn check (process ${process.pid})`);
  // The counts only mean something in a sound file, and comparing them reads every row (not --quick).
  if (report.ok && flags.recount) recountKeptCountsOfFile(path);
  const drift = report.ok && !flags.quick ? keptCountsDriftOfFile(path) : null;
  const counts = drift === null ? null : { ok: drift.length === 0, drift: drift.slice(0, 100) };
  if (flags.json) writeJson({ path, ...report, counts });
  else if (report.ok) {
    process.stdout.write(`${path}: ok (${report.depth} check, ${report.ms} ms)\n`);
    if (counts?.ok) process.stdout.write(`kept counts: ok${flags.recount ? ' (recounted)' : ''}\n`);
    else if (counts) {
      process.stdout.write(
        `kept counts: ${drift!.length} disagree with the tables (stats and /metrics are off):\n`,
      );
      for (const d of counts.drift) process.stdout.write(`  - ${d}\n`);
      process.stdout.write(
        'Run `cairn check --recount` to set them from the tables (safe beside a running server).\n',
      );
    }
  } else {
    process.stdout.write(
      `${path}: DAMAGED (${report.depth} check found ${report.problems.length} problems)\n`,
    );
    for (const p of report.problems) process.stdout.write(`  - ${p}\n`);
    process.stdout.write(
      'Cairn refuses to serve from a damaged database. Stop every Cairn process on this folder, keep a copy of it,\n' +
        'and restore the folder from a backup. Vector index files need no restoring: they are rebuilt from cairn.db.\n',
    );
  }
  if (!report.ok || counts?.ok === false) process.exitCode = EXIT.failure;
}
