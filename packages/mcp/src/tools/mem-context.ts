import { ContextRequestSchema } from '@cairn/api-contract';
import { countTokens } from '@cairn/service';
import type { McpServer, RegisteredTool } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import { fitAnswer } from '../fit-answer.js';
import { usageLine } from '../render.js';
import { commonArgs, guarded, maxTokensArg, namespaceOf, type ToolContext } from '../tool-context.js';
import { toolOk } from '../tool-result.js';
import { WORKFLOW } from '../workflow.js';

/** The API's own default budget of a pack (tokens), so the note's cost is taken from the same figure. */
const DEFAULT_PACK_TOKENS: number = ContextRequestSchema.shape.max_tokens.parse(undefined);

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
      const ns = namespaceOf(ctx, args);
      const budget = args.max_tokens ?? DEFAULT_PACK_TOKENS;
      // Only for the server's own namespace: the agent learns where its memories go, and how to change it.
      // Its cost is taken from the pack's budget, so what reaches the model is what max_tokens allowed;
      // a budget too small for it leaves the note out rather than the whole pack.
      const note = ctx.namespaceNote && ns === ctx.namespace ? `${ctx.namespaceNote}\n\n` : '';
      const noteCost = countTokens(note);
      const res = await ctx.api.context({
        namespace: ns,
        ...(args.query !== undefined ? { query: args.query } : {}),
        max_tokens: noteCost < budget ? budget - noteCost : budget,
        ...(args.exclude_ids !== undefined ? { exclude_ids: args.exclude_ids } : {}),
        ...(args.format !== undefined ? { format: args.format } : {}),
      });
      const usage = (used: number) => ({ used, budget, omitted: res.tokens.omitted });
      // The pack, else a line saying why there is none; with the note when both fit.
      const body = (used: number) =>
        res.text ||
        (res.tokens.omitted > 0
          ? `Nothing fits in max_tokens (${usageLine(usage(used))}); raise it or use mem_search.`
          : `No session summaries or relevant memories in ${res.namespace} yet.`);
      const fit = fitAnswer(
        note ? 1 : 0,
        (n, used) => (n ? note : '') + body(used),
        budget,
        res.text ? 'the pack' : 'the line saying why there is no pack',
      );
      return toolOk(fit.text, { ...res, tokens: usage(fit.used) });
    }),
  );
}
