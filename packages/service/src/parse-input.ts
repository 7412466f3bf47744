import { zodToCairnError } from '@cairn/core';
import type { z } from 'zod';

/** Validates a request body against its contract schema; a failure is INVALID_INPUT naming the field. */
export function parseInput<S extends z.ZodType>(schema: S, input: unknown, context?: string): z.output<S> {
  const r = schema.safeParse(input);
  if (!r.success) throw zodToCairnError(r.error, context);
  return r.data;
}
