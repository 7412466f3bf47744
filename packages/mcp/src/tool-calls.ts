import { CairnError, zodToCairnError } from '@cairn/core';
import type { McpServer, RegisteredTool } from '@modelcontextprotocol/sdk/server/mcp.js';
import { CallToolRequestSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { z } from 'zod';
import { toolError } from './tool-result.js';

type Run = (args: unknown, extra: unknown) => CallToolResult | Promise<CallToolResult>;

/**
 * Answers `tools/call` for Cairn's tools, so that arguments their schema refuses (`k: -5`, a string for a
 * list, an unknown name) get the error every other failure gets: `[CODE] message (field: f)` with
 * `structuredContent.error`, as the HTTP API and the CLI answer the same request. The SDK's own handler
 * validates before a tool runs and answers with its message as bare text, which a program cannot read.
 * `tools/list` stays the SDK's, from the same schemas; the tools use no tasks and no output schemas,
 * the only other things its handler does. Call it once every tool is registered.
 */
export function answerToolCalls(server: McpServer, tools: ReadonlyMap<string, RegisteredTool>): void {
  server.server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const { name, arguments: args } = request.params;
    const tool = tools.get(name);
    if (!tool?.enabled)
      return toolError(
        new CairnError('INVALID_INPUT', `no tool named "${name}"; tools: ${enabled(tools).join(', ')}`, {
          field: 'name',
        }),
      );
    const parsed = (tool.inputSchema as z.ZodType).safeParse(args ?? {});
    if (!parsed.success) return toolError(zodToCairnError(parsed.error));
    return (tool.handler as Run)(parsed.data, extra);
  });
}

/** The names of the tools a client may call now. */
function enabled(tools: ReadonlyMap<string, RegisteredTool>): string[] {
  return [...tools].filter(([, t]) => t.enabled).map(([n]) => n);
}
