// This file is the public API of @cairn/mcp/namespaces: how a project's namespace is derived from its folder
// (its git repository's, else the folder's); named exports only. A separate entry, so that a face that needs
// only the name (a Claude Code hook, run on every tool call) does not load the MCP SDK.
export { FOLDER_NAMESPACE_PREFIX, folderNamespace } from './folder-namespace.js';
export { GIT_NAMESPACE_PREFIX, gitNamespace } from './git-namespace.js';
export { shortHash, toNamespace } from './namespace-name.js';
export { normalizeRemoteUrl } from './remote-url.js';
