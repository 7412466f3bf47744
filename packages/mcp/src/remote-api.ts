import type { MemoryApi } from '@cairn/api-contract';
import { CairnClient, type CairnClientOptions } from '@cairn/client';

/**
 * The MemoryApi of a running Cairn HTTP server, for an MCP server that fronts it (`cairn mcp --api URL`):
 * the server's API key decides which namespaces the tools may use.
 */
export function remoteMemoryApi(opts: CairnClientOptions): MemoryApi {
  return new CairnClient(opts);
}
