import { z } from 'zod';

/**
 * A lone UTF-16 surrogate: not Unicode text. JSON can carry one (`"\ud800"`), but no UTF-8 can: SQLite
 * stores it as U+FFFD, so a write would read back altered, and a read (a query, an id, a tag filter) would
 * look for text no memory can hold.
 */
export const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

export function hasLoneSurrogate(s: string): boolean {
  return LONE_SURROGATE.test(s);
}

/** The one wording of the refusal, on the write path and in every request schema alike. */
export function loneSurrogateMessage(field: string): string {
  return `${field} holds a lone UTF-16 surrogate: not valid Unicode text`;
}

/**
 * Marks the issue, so that zodToCairnError can word it with the field's full path (`filters.tags.0`),
 * which a check cannot know: the path is built as the issue bubbles up out of objects, arrays and records.
 */
const LONE_SURROGATE_PARAMS = { cairn: 'lone_surrogate' } as const;

/**
 * A string that is well-formed Unicode: the base of every string of every request schema, so that a
 * lone surrogate is refused (INVALID_INPUT, naming the field) on every route and every face alike,
 * whatever the field. Chain the field's own checks after it: `WellFormedString.min(1).max(64)`. It
 * aborts, so a string with a lone surrogate is named for that alone, not for its length too.
 */
export const WellFormedString = z.string().refine((s) => !hasLoneSurrogate(s), {
  // zodToCairnError words it with the path; this is for a reader of the bare zod issue.
  error: 'holds a lone UTF-16 surrogate: not valid Unicode text',
  params: LONE_SURROGATE_PARAMS,
  abort: true,
});

/** Whether a zod issue is WellFormedString's refusal. */
export function isLoneSurrogateIssue(issue: z.core.$ZodIssue): boolean {
  return issue.code === 'custom' && issue.params?.cairn === LONE_SURROGATE_PARAMS.cairn;
}
