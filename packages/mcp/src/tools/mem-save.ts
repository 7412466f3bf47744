import { MemoryInputSchema } from '@cairn/core';
import type { McpServer, RegisteredTool } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import { renderWrite } from '../render.js';
import { commonArgs, guarded, namespaceOf, type ToolContext } from '../tool-context.js';
import { toolOk } from '../tool-result.js';
import { WORKFLOW } from '../workflow.js';

const inputSchema = {
  text: z.string().describe('the memory, self-contained: what a later session needs to know (≤ 64 KiB)'),
  kind: z
    .string()
    .optional()
    .describe('observation (default), summary (of a session), fact (with slot/key), prompt, or your own'),
  title: z.string().optional().describe('one line shown in the index (default: the first line of text)'),
  session: z.string().optional().describe('groups memories of one working session; mem_timeline follows it'),
  tags: z.array(z.string()).optional(),
  // The API's own schema, so a bad value gets the message the HTTP API gives.
  importance: MemoryInputSchema.shape.importance.describe('0–1 (default 0.5); raises or lowers its rank'),
  fields: z
    .record(z.string(), z.string())
    .optional()
    .describe(
      'named fields searched as routes of their own, e.g. {"facts": "…", "user": "…"} (≤ 8; names like next_turn)',
    ),
  slot: z.string().optional().describe('fact slot, e.g. "build.commands"; needs key'),
  key: z
    .string()
    .optional()
    .describe('fact key within the slot: saving the same slot and key again replaces the old value'),
  ...commonArgs,
};

export function registerMemSave(server: McpServer, ctx: ToolContext): RegisteredTool {
  return server.registerTool(
    'mem_save',
    {
      title: 'Save a memory',
      description:
        'Stores one memory for later sessions: a decision and its reason, a non-obvious fix, a convention, ' +
        'the state of unfinished work. A memory is known by its kind, title and text: saving the same ' +
        'again is unchanged when nothing else differs; otherwise it is updated and takes this save’s ' +
        'session, tags, importance and fields in place of its old ones (so it leaves its first session). ' +
        'A fact with slot and key replaces the previous value of that key. Returns the id and status ' +
        '(stored, updated, unchanged or queued). ' +
        WORKFLOW,
      // Strict: an unknown argument (a misspelt `tag`, `kind` for `kinds`) is refused, never dropped.
      inputSchema: z.strictObject(inputSchema),
      annotations: {
        readOnlyHint: false,
        destructiveHint: false,
        idempotentHint: true,
        openWorldHint: false,
      },
    },
    guarded(ctx, 'mem_save', async ({ namespace, ...memory }) => {
      const agent = ctx.clientName();
      const res = await ctx.api.write({
        namespace: namespaceOf(ctx, { namespace }),
        ...memory,
        ...(agent ? { agent } : {}),
      });
      const item = res.items[0]!;
      return toolOk(renderWrite(res), {
        id: item.id,
        namespace: item.namespace,
        status: item.status,
        durable: res.durable,
      });
    }),
  );
}
