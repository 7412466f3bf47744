import { DEFAULT_API_LIMITS, type TimelineResponse } from '@cairn/api-contract';
import { nearestFirst } from '@cairn/service';
import type { McpServer, RegisteredTool } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import { fitAnswer } from '../fit-answer.js';
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
      // Asked for whole and fitted here: the budget covers the header too, and a budget too small for
      // the header and the anchor is then refused with the least that would do, in one answer (the
      // backend's own refusal would name the least for the anchor's line alone).
      const res = await ctx.api.timeline({
        namespace: namespaceOf(ctx, args),
        ...(args.anchor !== undefined ? { anchor: args.anchor } : {}),
        ...(args.query !== undefined ? { query: args.query } : {}),
        ...(args.before !== undefined ? { before: args.before } : {}),
        ...(args.after !== undefined ? { after: args.after } : {}),
      });
      // Nearest first, alternating sides, up to the first that does not fit: a timeline has no holes.
      const order = nearestFirst(res.before, res.after);
      const shown = (n: number, used: number): TimelineResponse => {
        const kept = new Set(order.slice(0, n));
        return {
          ...res,
          before: res.before.filter((e) => kept.has(e)),
          after: res.after.filter((e) => kept.has(e)),
          tokens: { used, budget: args.max_tokens ?? null, omitted: order.length - n },
        };
      };
      const fit = fitAnswer(
        order.length,
        (n, used) => renderTimeline(shown(n, used)),
        args.max_tokens,
        'its header and the anchor',
      );
      return toolOk(fit.text, shown(fit.n, fit.used));
    }),
  );
}
