import { realpathSync } from 'node:fs';
import { basename, resolve } from 'node:path';
import { shortHash, toNamespace } from './namespace-name.js';

/** Every namespace derived from a folder outside git starts with this. */
export const FOLDER_NAMESPACE_PREFIX = 'dir/';

/**
 * The default namespace of a folder that is not in a git repository: `dir/<folder name>-<hash of its real
 * path>`, stable for that folder and distinct from any other. A user-scope MCP server starts in whatever
 * folder the agent was opened in; refusing to start there cost every non-git session its memory.
 */
export function folderNamespace(dir: string): string {
  let path = resolve(dir);
  try {
    path = realpathSync(path);
  } catch {
    // Keep the resolved path: it still names the folder for this process.
  }
  return (
    toNamespace(FOLDER_NAMESPACE_PREFIX, `${basename(path) || 'root'}-${shortHash(path)}`) ??
    `${FOLDER_NAMESPACE_PREFIX}${shortHash(path)}`
  );
}
