import { DEFAULT_INPUT_LIMITS, NamespaceSchema, WellFormedString } from '@cairn/core';
import { z } from 'zod';
import { DEFAULT_API_LIMITS as L } from './api-limits.js';
import { MemoryRecordSchema } from './memory-schemas.js';
import { queryInteger } from './query-integer.js';

export const MaxTokensSchema = z
  .number()
  // The bounds first: zod lists issues in check order, and a huge number (±1e20) breaks both a bound and
  // int's safe range; the error names the first one, which should be the documented bound.
  .min(1)
  .max(L.maxTokens, `max_tokens must be at most ${L.maxTokens}`)
  .int()
  .describe('token budget of this response');

/** What a layer of the response cost, in tokens (o200k, as GPT-4o and most current models count). */
export const TokenUsageSchema = z
  .object({
    used: z.number().int(),
    budget: z.number().int().nullable(),
    /** Entries left out to stay within the budget. */
    omitted: z.number().int(),
  })
  .meta({ id: 'TokenUsage' });

/** Layer 1 and 2: one line per memory, enough to decide whether to fetch it. */
export const IndexEntrySchema = z
  .object({
    id: z.string(),
    namespace: z.string(),
    kind: z.string(),
    title: z.string().describe('the title, or the first line of the text (≤ 120 chars)'),
    date: z.string().describe('ISO-8601'),
    session: z.string().nullable(),
    tokens: z.number().int().describe('tokens of the full record (what memories/get will cost)'),
  })
  .meta({ id: 'IndexEntry' });

export type IndexEntry = z.infer<typeof IndexEntrySchema>;

export const TimelineQuerySchema = z
  .strictObject({
    namespace: NamespaceSchema,
    anchor: WellFormedString.min(1).max(DEFAULT_INPUT_LIMITS.maxIdChars).optional(),
    query: WellFormedString.min(1)
      .max(4_096)
      .optional()
      .describe('find the anchor: the best hit of this search'),
    before: queryInteger('before', z.number().min(0).max(L.maxTimelineSide).int()).default(5),
    after: queryInteger('after', z.number().min(0).max(L.maxTimelineSide).int()).default(5),
    max_tokens: queryInteger('max_tokens', MaxTokensSchema).optional(),
  })
  .refine((q) => q.anchor !== undefined || q.query !== undefined, {
    message: 'give anchor (a memory id) or query (to find one)',
    path: ['anchor'],
  })
  // Both was answered from the anchor, the query silently ignored.
  .refine((q) => q.anchor === undefined || q.query === undefined, {
    message: 'give anchor or query, not both',
    path: ['query'],
  });

export const TimelineResponseSchema = z
  .object({
    namespace: z.string(),
    scope: z.enum(['session', 'namespace']),
    anchor: IndexEntrySchema,
    before: z.array(IndexEntrySchema),
    after: z.array(IndexEntrySchema),
    tokens: TokenUsageSchema,
  })
  .meta({ id: 'TimelineResponse' });

export const GetRequestSchema = z.strictObject({
  namespace: NamespaceSchema,
  // No stored id is longer (writes refuse them), so a longer one is a mistake, not a miss to echo back.
  ids: z
    .array(
      WellFormedString.min(1).max(
        DEFAULT_INPUT_LIMITS.maxIdChars,
        `an id is at most ${DEFAULT_INPUT_LIMITS.maxIdChars} characters`,
      ),
    )
    .min(1)
    .max(L.maxGetIds, `at most ${L.maxGetIds} ids`),
  max_tokens: MaxTokensSchema.optional(),
});

export const GetResponseSchema = z
  .object({
    memories: z.array(MemoryRecordSchema),
    missing: z.array(z.string()),
    omitted: z.array(z.string()).describe('found, but past max_tokens'),
    tokens: TokenUsageSchema,
  })
  .meta({ id: 'GetResponse' });

export const ContextRequestSchema = z.strictObject({
  namespace: NamespaceSchema,
  query: WellFormedString.max(4_096).optional(),
  max_tokens: MaxTokensSchema.default(2_000),
  format: z.enum(['markdown', 'text']).default('markdown'),
  summaries: z.number().min(0).max(20).int().default(3).describe('most recent session summaries to include'),
  k: z.number().min(0).max(L.maxK).int().default(10).describe('memories relevant to the query'),
  exclude_ids: z.array(WellFormedString).max(1_000).default([]).describe('already in the caller’s context'),
});

export const ContextResponseSchema = z
  .object({
    namespace: z.string(),
    format: z.enum(['markdown', 'text']),
    text: z.string(),
    included: z.array(z.string()),
    tokens: TokenUsageSchema,
  })
  .meta({ id: 'ContextResponse' });
