import { DEFAULT_API_LIMITS } from '@cairn/api-contract';
import type { McpServer, RegisteredTool } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import { renderTimeline } from '../render.js';
import { commonArgs, guarded, intArg, maxTokensArg, namespaceOf, type ToolContext } from '../tool-context.js';
import { toolOk } from '../tool-result.js';
import { WORKFLOW } from '../workflow.js';

const side = intArg(0, DEFAULT_API_LIMITS.maxTimelineSide).optional();

const inputSchema = {
  anchor: z.string().optional().describe('id of the memory to look around (from mem_search)'),
  query: z.string().optional().describe('instead of anchor: look around the best hit of this search'),
  before: side.describe('memories before the anchor (default 5)'),
  after: side.describe('memories after the anchor (default 5)'),
  max_tokens: maxTokensArg,
  ...commonArgs,
};

export function registerMemTimeline(server: McpServer, ctx: ToolContext): RegisteredTool {
  return server.registerTool(
    'mem_timeline',
    {
      title: 'Memories around one (compact index)',
      description:
        'What happened just before and after one memory, in time order: within its session when it has ' +
        'one, else its namespace. Same compact one-line-per-memory index as mem_search, nearest first ' +
        'under max_tokens. Give anchor (an id) or query. ' +
        WORKFLOW,
      // Strict: an unknown argument (a misspelt `tag`, `kind` for `kinds`) is refused, never dropped.
      inputSchema: z.strictObject(inputSchema),
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    guarded(ctx, 'mem_timeline', async (args) => {
      const res = await ctx.api.timeline({
        namespace: namespaceOf(ctx, args),
        ...(args.anchor !== undefined ? { anchor: args.anchor } : {}),
        ...(args.query !== undefined ? { query: args.query } : {}),
        ...(args.before !== undefined ? { before: args.before } : {}),
        ...(args.after !== undefined ? { after: args.after } : {}),
        ...(args.max_tokens !== undefined ? { max_tokens: args.max_tokens } : {}),
      });
      return toolOk(renderTimeline(res), res);
    }),
  );
}
