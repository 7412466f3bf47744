import type { McpServer, RegisteredTool } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import { usageLine } from '../render.js';
import { commonArgs, guarded, maxTokensArg, namespaceOf, type ToolContext } from '../tool-context.js';
import { toolOk } from '../tool-result.js';
import { WORKFLOW } from '../workflow.js';

const inputSchema = {
  query: z
    .string()
    .optional()
    .describe('the task at hand: adds the memories most relevant to it after the recent session summaries'),
  max_tokens: maxTokensArg.describe('budget of the whole pack (default 2000)'),
  exclude_ids: z.array(z.string()).optional().describe('ids already in your context'),
  format: z.enum(['markdown', 'text']).optional().describe('markdown (default) or plain text'),
  ...commonArgs,
};

export function registerMemContext(server: McpServer, ctx: ToolContext): RegisteredTool {
  return server.registerTool(
    'mem_context',
    {
      title: 'Session-start memory pack',
      description:
        'A ready-to-read pack for the start of a session: the latest session summaries, then the memories ' +
        'most relevant to query, grouped by session, within max_tokens (whole items only). Call once at ' +
        'the start; then use the search workflow for specifics. ' +
        WORKFLOW,
      // Strict: an unknown argument (a misspelt `tag`, `kind` for `kinds`) is refused, never dropped.
      inputSchema: z.strictObject(inputSchema),
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    guarded(ctx, 'mem_context', async (args) => {
      const res = await ctx.api.context({
        namespace: namespaceOf(ctx, args),
        ...(args.query !== undefined ? { query: args.query } : {}),
        ...(args.max_tokens !== undefined ? { max_tokens: args.max_tokens } : {}),
        ...(args.exclude_ids !== undefined ? { exclude_ids: args.exclude_ids } : {}),
        ...(args.format !== undefined ? { format: args.format } : {}),
      });
      // The pack alone, so what lands in the model's context is exactly what max_tokens allowed.
      const text =
        res.text ||
        (res.tokens.omitted > 0
          ? `Nothing fits in max_tokens (${usageLine(res.tokens)}); raise it or use mem_search.`
          : `No session summaries or relevant memories in ${res.namespace} yet.`);
      // Only for the server's own namespace: the agent learns where its memories go, and how to change it.
      const ns = namespaceOf(ctx, args);
      return toolOk(
        ctx.namespaceNote && ns === ctx.namespace ? `${ctx.namespaceNote}\n\n${text}` : text,
        res,
      );
    }),
  );
}
