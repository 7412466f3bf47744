import { execFileSync } from 'node:child_process';
import { realpathSync } from 'node:fs';
import { basename, dirname, resolve } from 'node:path';
import { shortHash, toNamespace } from './namespace-name.js';
import { normalizeRemoteUrl } from './remote-url.js';

/** Every namespace derived from a repository starts with this. */
export const GIT_NAMESPACE_PREFIX = 'repo/';

/**
 * Variables that point git at another repository than the one `cwd` is in (set inside git hooks, for
 * instance); they are dropped so the answer depends on the folder alone.
 */
const REPO_OVERRIDES = ['GIT_DIR', 'GIT_WORK_TREE', 'GIT_COMMON_DIR', 'GIT_INDEX_FILE', 'GIT_NAMESPACE'];

function git(cwd: string, args: string[]): string | null {
  const env = { ...process.env };
  for (const k of REPO_OVERRIDES) delete env[k];
  try {
    const out = execFileSync('git', args, {
      cwd,
      env,
      encoding: 'utf8',
      // stdout is captured, never inherited: the MCP server's stdout carries only the protocol.
      stdio: ['ignore', 'pipe', 'ignore'],
      timeout: 5_000,
      windowsHide: true,
    });
    return out.trim() || null;
  } catch {
    // Not a repository, no such folder, git missing, or the key unset: all mean "no answer".
    return null;
  }
}

/**
 * The default namespace of the git repository `dir` is in, the same from its root, any subfolder and
 * any linked worktree: `repo/<origin URL without scheme, credentials and .git>` (`repo/github.com/acme/api`),
 * or, without an origin, `repo/<main worktree's folder name>-<hash of the repository's path>`. Null when
 * `dir` is not in a git repository (or git is not installed).
 */
export function gitNamespace(dir: string): string | null {
  const common = git(dir, ['rev-parse', '--git-common-dir']);
  if (common === null) return null;
  // Relative to `dir` when git answers `.git`; realpath so symlinked paths name one repository.
  let commonDir = resolve(dir, common);
  try {
    commonDir = realpathSync(commonDir);
  } catch {
    // Keep the resolved path: it still identifies the repository for this process.
  }
  const remote = git(dir, ['config', '--get', 'remote.origin.url']);
  const fromRemote = remote === null ? null : normalizeRemoteUrl(remote);
  if (fromRemote !== null) {
    const ns = toNamespace(GIT_NAMESPACE_PREFIX, fromRemote);
    if (ns !== null) return ns;
  }
  // `<main>/.git` for an ordinary repository (worktrees share it); the repository folder itself if bare.
  const main =
    basename(commonDir) === '.git'
      ? basename(dirname(commonDir))
      : basename(commonDir).replace(/\.git$/i, '');
  return (
    toNamespace(GIT_NAMESPACE_PREFIX, `${main || 'repo'}-${shortHash(commonDir)}`) ??
    `${GIT_NAMESPACE_PREFIX}${shortHash(commonDir)}`
  );
}
