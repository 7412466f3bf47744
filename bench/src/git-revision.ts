import { execFileSync } from 'node:child_process';
import { resolve } from 'node:path';

/**
 * The revision a benchmark ran at, for bench/RESULTS.md: the short commit, and whether package or app
 * sources had uncommitted changes (which the figures then include).
 */
export function gitRevision(): string {
  try {
    const cwd = resolve(import.meta.dirname, '../..');
    const git = (args: string[]) =>
      execFileSync('git', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    const head = git(['rev-parse', '--short', 'HEAD']);
    const dirty = git(['status', '--porcelain', '--untracked-files=no', '--', 'packages', 'apps']);
    return dirty ? `${head} plus uncommitted changes in ${dirty.split('\n').length} package file(s)` : head;
  } catch {
    return 'unknown (not a git checkout)';
  }
}
