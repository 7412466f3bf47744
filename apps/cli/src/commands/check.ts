import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { CairnError } from '@cairn/core';
import { checkDatabaseFile } from '@cairn/store';
import { type CliEnv, resolveDataDir } from '../env.js';
import { EXIT, writeJson } from '../output.js';

/**
 * `cairn check`: SQLite's integrity_check over cairn.db (every page, b-tree and index entry), read-only so
 * it runs beside a serving process. The vector index files are not checked here: they are derived, and a
 * damaged one is rebuilt from the stored vectors when it is loaded (and the rebuild is logged).
 */
export async function checkCommand(
  flags: { dataDir?: string; json?: boolean; quick?: boolean },
  env: CliEnv,
) {
  const dir = resolveDataDir(flags.dataDir, env);
  const path = join(dir, 'cairn.db');
  if (!existsSync(path)) throw new CairnError('NOT_FOUND', `no cairn.db in ${dir}`, { field: 'dataDir' });
  const report = checkDatabaseFile(path, flags.quick ? 'quick' : 'full', 100);
  if (flags.json) writeJson({ path, ...report });
  else if (report.ok) process.stdout.write(`${path}: ok (${report.depth} check, ${report.ms} ms)\n`);
  else {
    process.stdout.write(
      `${path}: DAMAGED (${report.depth} check found ${report.problems.length} problems)\n`,
    );
    for (const p of report.problems) process.stdout.write(`  - ${p}\n`);
    process.stdout.write(
      'Cairn refuses to serve from a damaged database. Stop every Cairn process on this folder, keep a copy of it,\n' +
        'and restore the folder from a backup. Vector index files need no restoring: they are rebuilt from cairn.db.\n',
    );
  }
  if (!report.ok) process.exitCode = EXIT.failure;
}
