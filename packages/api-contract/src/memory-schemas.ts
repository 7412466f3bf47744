import { FACT_LIMITS, NamespaceSchema } from '@cairn/core';
import { z } from 'zod';

const timeLike = z.union([z.number(), z.string()]).describe('ISO-8601 or epoch ms');

/**
 * A memory as the API takes it: the engine's memory fields, plus `slot`/`key` for facts. A fact with the
 * same (namespace, slot, key) replaces the earlier one. Fields are checked in full (lengths, ranges) by
 * the engine's own schema; this one documents them and refuses unknown fields.
 */
export const MemoryWriteSchema = z
  .strictObject({
    namespace: NamespaceSchema.optional().describe('defaults to the request’s namespace'),
    text: z.string().describe('≤ 64 KiB of UTF-8'),
    id: z.string().optional().describe('stable id: re-writing it updates in place; default m_<content hash>'),
    kind: z.string().optional().describe('turn, observation (default), summary, fact, prompt, or your own'),
    title: z.string().nullable().optional(),
    session: z.string().nullable().optional(),
    agent: z.string().nullable().optional(),
    ts: timeLike.optional(),
    tags: z.array(z.string()).optional(),
    meta: z.record(z.string(), z.unknown()).optional(),
    importance: z.number().optional().describe('0–1, default 0.5'),
    confidence: z
      .number()
      .optional()
      .describe('0–1: how sure the writer is; lowers the score (confidenceWeight); default unstated'),
    validFrom: timeLike.optional().describe('when what it says became true; a search asOf earlier skips it'),
    validTo: timeLike.optional().describe('when it stopped being true (exclusive); open-ended when absent'),
    supersedes: z.array(z.string()).optional(),
    fields: z
      .record(z.string(), z.string())
      .optional()
      .describe(
        'named fields (≤ 8; names like facts, user, next_turn): each is searched as a route of its own',
      ),
    slot: z
      .string()
      .min(1)
      .max(FACT_LIMITS.maxSlotChars)
      .optional()
      .describe('fact slot, e.g. "user.preferences"'),
    key: z
      .string()
      .min(1)
      .max(FACT_LIMITS.maxKeyChars)
      .optional()
      .describe('fact key within the slot; needs slot'),
  })
  .meta({ id: 'MemoryWrite' });

export type MemoryWrite = z.infer<typeof MemoryWriteSchema>;

export const WaitSchema = z
  .enum(['stored', 'queued'])
  .describe('stored: answer 201 once durable (SQLite commit); queued: answer 202 once accepted');

export const WriteBatchSchema = z.strictObject({
  namespace: NamespaceSchema.optional(),
  memories: z.array(MemoryWriteSchema).min(1),
  wait: WaitSchema.optional(),
});

export const WriteOneSchema = MemoryWriteSchema.extend({ wait: WaitSchema.optional() });

/** One memory, or a batch: `{namespace?, memories: [...]}`. */
export const WriteRequestSchema = z.union([WriteBatchSchema, WriteOneSchema]).meta({ id: 'WriteRequest' });

export type WriteRequest = z.infer<typeof WriteRequestSchema>;

export const WriteStatusSchema = z.enum(['stored', 'updated', 'unchanged', 'queued']);

export const WriteResponseSchema = z
  .object({
    items: z.array(
      z.object({
        index: z.number().int(),
        id: z.string(),
        namespace: z.string(),
        status: WriteStatusSchema,
      }),
    ),
    counts: z.record(WriteStatusSchema, z.number().int()),
    durable: z.boolean().describe('true once every memory is committed to SQLite'),
  })
  .meta({ id: 'WriteResponse' });

export type WriteResponse = z.infer<typeof WriteResponseSchema>;

/** A full record, as `memories/get` returns it. */
export const MemoryRecordSchema = z
  .object({
    id: z.string(),
    namespace: z.string(),
    kind: z.string(),
    title: z.string().nullable(),
    text: z.string(),
    session: z.string().nullable(),
    agent: z.string().nullable(),
    ts: z.number(),
    date: z.string(),
    tags: z.array(z.string()),
    meta: z.record(z.string(), z.unknown()),
    importance: z.number(),
    confidence: z.number().nullable().describe('as stated by the writer; null when none'),
    validFrom: z.number().nullable().describe('epoch ms; null: open'),
    validTo: z.number().nullable().describe('epoch ms, exclusive; null: open'),
    supersededBy: z.string().nullable(),
    accessCount: z.number().int().describe('how often searches returned it or get fetched it'),
    lastAccessed: z.number().int().nullable(),
    fields: z.record(z.string(), z.string()).describe('named fields; {} when none'),
    tokens: z.number().int(),
  })
  .meta({ id: 'MemoryRecord' });

export type MemoryRecordOut = z.infer<typeof MemoryRecordSchema>;

export const DeleteResponseSchema = z.object({ deleted: z.string(), namespace: z.string() });
