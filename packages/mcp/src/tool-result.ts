import { CairnError, CairnErrorCode, isCairnError } from '@cairn/core';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';

/** A successful tool answer: text for the model, and the same data as JSON for programs. */
export function toolOk(text: string, structured?: Record<string, unknown>): CallToolResult {
  return structured === undefined
    ? { content: [{ type: 'text', text }] }
    : { content: [{ type: 'text', text }], structuredContent: structured };
}

/**
 * A CairnError, also one from another copy of @cairn/core (the HTTP client's, in a bundled app), so a
 * backend's code is kept rather than flattened to INTERNAL.
 */
export function asCairnError(err: unknown): CairnError {
  if (isCairnError(err)) return err;
  const e = err as { name?: unknown; code?: unknown; message?: unknown; data?: unknown } | null;
  if (e && e.name === 'CairnError' && typeof e.code === 'string' && Object.hasOwn(CairnErrorCode, e.code))
    return new CairnError(e.code as CairnErrorCode, String(e.message), (e.data ?? {}) as CairnError['data']);
  return new CairnError('INTERNAL', err instanceof Error ? err.message : String(err), {}, { cause: err });
}

/**
 * A failed call as a tool error (`isError: true`): the model sees the code, the message and the field at
 * fault, and can correct its call. The server keeps serving.
 */
export function toolError(err: unknown): CallToolResult {
  const e = asCairnError(err);
  const field = e.data.field ? ` (field: ${e.data.field})` : '';
  return {
    content: [{ type: 'text', text: `[${e.code}] ${e.message}${field}` }],
    structuredContent: { error: e.toJSON() },
    isError: true,
  };
}
