import { z } from 'zod';

/**
 * A whole number from a query string (`"5"`) or a JSON value (`5`, from the client or MCP), then checked
 * by `schema` (its bounds). `z.coerce.number()` read `"abc"` as NaN, and the refusal said "before must be
 * number, got NaN"; this one says what was sent: `before must be an integer, got "abc"`. A string is read
 * as `Number()` reads it, as the coercion did, so every value accepted before still is.
 */
export function queryInteger<S extends z.ZodType<number, number>>(name: string, schema: S) {
  return z.preprocess((value, ctx) => {
    const n = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
    if (typeof n === 'number' && Number.isInteger(n)) return n;
    ctx.addIssue({ code: 'custom', message: `${name} must be an integer, got ${JSON.stringify(value)}` });
    return z.NEVER;
  }, schema);
}
