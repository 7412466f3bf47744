import { DEFAULT_INPUT_LIMITS } from '@cairn/core';
import { z } from 'zod';

/** Memories per capture job: one SQLite transaction each, so bigger batches amortise the commit. */
export const MAX_CAPTURE_BATCH = 1_000;
/** Memories per embed or index job. */
export const MAX_STAGE_BATCH = 2_000;

const pendingMemorySchema = z.object({
  key: z.number().int().positive(),
  namespace: z.string().min(1),
  kind: z.string().min(1),
  title: z.string().nullable(),
  text: z.string().max(DEFAULT_INPUT_LIMITS.maxTextBytes),
  contentHash: z.string().min(1),
  changeSeq: z.number().int().nonnegative(),
});

const indexItemSchema = z.object({
  key: z.number().int().positive(),
  namespace: z.string().min(1),
  contentHash: z.string().min(1),
  changeSeq: z.number().int().nonnegative(),
  /** The vector as base64 of little-endian float32 (a third of the size of a JSON number array). */
  vector: z.string().min(1),
});

export interface RetryPolicy {
  /** Attempts before the job is dead-lettered. */
  attempts: number;
  /** First retry delay in ms; doubled per attempt up to `maxDelayMs`. */
  delayMs: number;
  maxDelayMs: number;
}

/**
 * The typed job catalog: each job name maps to its queue, its payload schema and its retry policy.
 * Processors take their payload types from here and validate on receipt; a payload that fails its schema
 * can never succeed and is dead-lettered at once instead of retried.
 */
export const JOB_CATALOG = {
  capture: {
    payload: z.object({
      /** Raw memories as the caller sent them: the capture stage validates and normalises each one. */
      memories: z.array(z.unknown()).min(1).max(MAX_CAPTURE_BATCH),
      /** When the producer accepted the batch (ms): memories without `ts` get this time, not the worker's. */
      receivedAt: z.number().int().nonnegative(),
      /**
       * Names this request (a random id, made once by the producer): the job's own id names only its keys,
       * and a later request for the same ids reuses it. Its write's receipt is kept under both (see
       * WriteReceipts); absent (an older producer), the receipt uses `receivedAt`.
       */
      requestId: z.string().min(1).max(64).optional(),
    }),
    // SQLite busy or a full disk clear up within seconds to minutes.
    retry: { attempts: 12, delayMs: 250, maxDelayMs: 30_000 },
  },
  embed: {
    payload: z.object({
      /** The embedding space, and how to build its embedder: embed workers need no data folder. */
      space: z.string().min(1),
      embedder: z.string().min(1),
      dimensions: z.number().int().positive(),
      items: z.array(pendingMemorySchema).min(1).max(MAX_STAGE_BATCH),
    }),
    // A remote embedder may be down for a while: ~12 retries at the 60 s cap ride out a 15-minute outage.
    retry: { attempts: 20, delayMs: 500, maxDelayMs: 60_000 },
  },
  index: {
    payload: z
      .object({
        space: z.string().min(1),
        shard: z.number().int().nonnegative(),
        items: z.array(indexItemSchema).max(MAX_STAGE_BATCH),
        failures: z
          .array(z.object({ key: z.number().int().positive(), error: z.string() }))
          .max(MAX_STAGE_BATCH)
          .default([]),
      })
      // A batch the embedder refused entirely carries only failures, which the index stage still records.
      .refine((p) => p.items.length + p.failures.length > 0, {
        message: 'an index job needs at least one item or failure',
        path: ['items'],
      }),
    retry: { attempts: 12, delayMs: 250, maxDelayMs: 30_000 },
  },
} as const satisfies Record<string, { payload: z.ZodType; retry: RetryPolicy }>;

export type JobName = keyof typeof JOB_CATALOG;
export type JobPayload<N extends JobName> = z.output<(typeof JOB_CATALOG)[N]['payload']>;
export type JobInput<N extends JobName> = z.input<(typeof JOB_CATALOG)[N]['payload']>;
export const JOB_NAMES = Object.keys(JOB_CATALOG) as JobName[];

/** BullMQ's custom backoff type name for the catalog's capped exponential policy. */
export const CAPPED_BACKOFF = 'cairn-capped';

/** The retry delay after `attemptsMade` failures of a job of this name (ms). */
export function retryDelay(name: JobName, attemptsMade: number): number {
  const r = JOB_CATALOG[name].retry;
  return Math.min(r.maxDelayMs, r.delayMs * 2 ** Math.max(0, attemptsMade - 1));
}

/** Validates a payload against the catalog; the message names the job and the bad field. */
export function parsePayload<N extends JobName>(
  name: N,
  data: unknown,
): { ok: true; value: JobPayload<N> } | { ok: false; error: string } {
  const r = JOB_CATALOG[name].payload.safeParse(data);
  if (r.success) return { ok: true, value: r.data as JobPayload<N> };
  const issue = r.error.issues[0];
  const where = issue && issue.path.length > 0 ? issue.path.join('.') : '(payload)';
  return { ok: false, error: `INVALID_PAYLOAD: ${name} job: ${where}: ${issue?.message ?? 'invalid'}` };
}
