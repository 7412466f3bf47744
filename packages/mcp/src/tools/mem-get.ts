import type { GetResponse } from '@cairn/api-contract';
import type { McpServer, RegisteredTool } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import { fitAnswer } from '../fit-answer.js';
import { renderGet } from '../render.js';
import { commonArgs, guarded, maxTokensArg, namespaceOf, type ToolContext } from '../tool-context.js';
import { toolOk } from '../tool-result.js';
import { WORKFLOW } from '../workflow.js';

const inputSchema = {
  ids: z.array(z.string()).describe('ids picked from mem_search or mem_timeline (at least one)'),
  max_tokens: maxTokensArg,
  ...commonArgs,
};

export function registerMemGet(server: McpServer, ctx: ToolContext): RegisteredTool {
  return server.registerTool(
    'mem_get',
    {
      title: 'Fetch full memories',
      description:
        'The full records (text, title, tags, session, date) of the given ids, in the order given. The ' +
        'costly layer: call it last, only for the ids you chose; each index line said what it costs. ' +
        'Ids not found are listed as missing; past max_tokens, as omitted. ' +
        WORKFLOW,
      // Strict: an unknown argument (a misspelt `tag`, `kind` for `kinds`) is refused, never dropped.
      inputSchema: z.strictObject(inputSchema),
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    guarded(ctx, 'mem_get', async (args) => {
      const res = await ctx.api.get({
        namespace: namespaceOf(ctx, args),
        ids: args.ids,
        ...(args.max_tokens !== undefined ? { max_tokens: args.max_tokens } : {}),
      });
      // The backend budgeted the records' texts; their headers, tags and the footer are text the model
      // reads too. Records are given up from the end, as the backend kept them in the order given.
      const order = [...new Set(args.ids)];
      const shown = (n: number, used: number): GetResponse => {
        const dropped = new Set([...res.omitted, ...res.memories.slice(n).map((m) => m.id)]);
        return {
          ...res,
          memories: res.memories.slice(0, n),
          omitted: order.filter((id) => dropped.has(id)),
          tokens: { used, budget: res.tokens.budget, omitted: dropped.size },
        };
      };
      const fit = fitAnswer(
        res.memories.length,
        (n, used) => renderGet(shown(n, used)),
        args.max_tokens,
        'its footer',
      );
      return toolOk(fit.text, shown(fit.n, fit.used));
    }),
  );
}
