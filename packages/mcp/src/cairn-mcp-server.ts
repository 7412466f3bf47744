import type { MemoryApi } from '@cairn/api-contract';
import { NamespaceSchema, zodToCairnError } from '@cairn/core';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { answerToolCalls } from './tool-calls.js';
import type { McpLog, ToolContext } from './tool-context.js';
import { registerMemContext } from './tools/mem-context.js';
import { registerMemGet } from './tools/mem-get.js';
import { registerMemSave } from './tools/mem-save.js';
import { registerMemSearch } from './tools/mem-search.js';
import { registerMemTimeline } from './tools/mem-timeline.js';
import { serverInstructions } from './workflow.js';

/** The version the server reports to clients unless told otherwise. */
export const CAIRN_MCP_VERSION = '0.1.0';

export interface CairnMcpServerOptions {
  /** The namespace every tool uses unless a call names another (`repo/github.com/acme/api`). */
  namespace: string;
  /** The server name clients show. @defaultValue 'cairn' */
  name?: string;
  /** @defaultValue CAIRN_MCP_VERSION */
  version?: string;
  /** Hits of a mem_search that gives no `k`: index lines are cheap, so more than the engine's 5. @defaultValue 10 */
  searchK?: number;
  /** Where unexpected tool failures are reported (never stdout, which carries the protocol). @defaultValue none */
  log?: McpLog;
  /**
   * Where the default namespace came from, when the agent should know (it was derived from the folder,
   * not chosen): mem_context starts with this line. @defaultValue none
   */
  namespaceNote?: string;
}

/**
 * An MCP server with Cairn's memory tools (mem_search, mem_timeline, mem_get, mem_save, mem_context)
 * over any MemoryApi: an in-process MemoryService scope or the HTTP client. The backend validates and
 * checks namespace access; a failed call is answered as a tool error and the server keeps serving.
 * Connect it to a transport (see serveStdio).
 */
export function createCairnMcpServer(api: MemoryApi, opts: CairnMcpServerOptions): McpServer {
  const ns = NamespaceSchema.safeParse(opts.namespace);
  if (!ns.success) throw zodToCairnError(ns.error, undefined, 'namespace');
  const server = new McpServer(
    { name: opts.name ?? 'cairn', version: opts.version ?? CAIRN_MCP_VERSION },
    { instructions: serverInstructions(ns.data) },
  );
  const ctx: ToolContext = {
    api,
    namespace: ns.data,
    searchK: opts.searchK ?? 10,
    // Cut to a length any agent field accepts: a client's self-chosen name must never fail a save.
    clientName: () => server.server.getClientVersion()?.name.trim().slice(0, 64) || undefined,
    log: opts.log ?? (() => {}),
    namespaceNote: opts.namespaceNote,
  };
  const tools = new Map([
    ['mem_search', registerMemSearch(server, ctx)],
    ['mem_timeline', registerMemTimeline(server, ctx)],
    ['mem_get', registerMemGet(server, ctx)],
    ['mem_save', registerMemSave(server, ctx)],
    ['mem_context', registerMemContext(server, ctx)],
  ]);
  answerToolCalls(server, tools);
  return server;
}
