// This file is the public API of @cairn/mcp; named exports only.
export type { MemoryApi } from '@cairn/api-contract';
export { CAIRN_MCP_VERSION, type CairnMcpServerOptions, createCairnMcpServer } from './cairn-mcp-server.js';
export { FOLDER_NAMESPACE_PREFIX, folderNamespace } from './folder-namespace.js';
export { GIT_NAMESPACE_PREFIX, gitNamespace } from './git-namespace.js';
export { shortHash, toNamespace } from './namespace-name.js';
export { remoteMemoryApi } from './remote-api.js';
export { normalizeRemoteUrl } from './remote-url.js';
export { type StdioSession, type StdioStreams, serveStdio } from './serve-stdio.js';
export type { McpLog } from './tool-context.js';
export { WORKFLOW } from './workflow.js';
