import { MaxTokensSchema, type MemoryApi } from '@cairn/api-contract';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { asCairnError, toolError } from './tool-result.js';

/** Logs what a tool error alone would hide (an unexpected failure); never to stdout. */
export type McpLog = (level: 'warn' | 'error', msg: string, data?: Record<string, unknown>) => void;

/** What every tool handler works with. */
export interface ToolContext {
  api: MemoryApi;
  /** The namespace a call uses unless it names another. */
  namespace: string;
  /** Hits of a mem_search without `k`. */
  searchK: number;
  /** The connected client's name (e.g. `claude-code`), recorded as the `agent` of what it saves. */
  clientName: () => string | undefined;
  log: McpLog;
  /** Said at the top of mem_context when the default namespace was derived, not chosen. */
  namespaceNote?: string | undefined;
}

/** The namespace of a call: its own `namespace` argument, else the server's. */
export const namespaceOf = (ctx: ToolContext, args: { namespace?: string | undefined }) =>
  args.namespace ?? ctx.namespace;

/** Arguments every tool takes. The backend checks the namespace (its form and the caller's access). */
export const commonArgs = {
  namespace: z
    .string()
    .optional()
    .describe('namespace to use instead of the server’s default (the backend checks access)'),
};

/**
 * Whole numbers with the API's documented bounds, so the schema tells the model the limits up front. With
 * `name`, the upper bound's message is the API's own (`k must be at most 100`), so both faces say the same.
 */
export const intArg = (min: number, max: number, name?: string) =>
  z
    .number()
    .min(min)
    .max(max, name ? `${name} must be at most ${max}` : undefined)
    .int();

export const maxTokensArg = MaxTokensSchema.optional().describe(
  'token budget of the whole text returned (o200k); entries past it are left out whole and counted as omitted',
);

/**
 * A tool handler that never throws: a failure becomes a tool error the model can read and act on, and an
 * unexpected one (a bug, a backend down) is also logged for the operator.
 */
export function guarded<A>(ctx: ToolContext, tool: string, fn: (args: A) => Promise<CallToolResult>) {
  return async (args: A): Promise<CallToolResult> => {
    try {
      return await fn(args);
    } catch (err) {
      const e = asCairnError(err);
      if (['INTERNAL', 'STORAGE_ERROR', 'STORAGE_FULL', 'BACKEND_UNAVAILABLE'].includes(e.code))
        ctx.log('error', `${tool} failed`, { code: e.code, error: e.message });
      return toolError(e);
    }
  };
}
