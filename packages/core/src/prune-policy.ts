import { z } from 'zod';
import { FACT_LIMITS } from './facts.js';
import { NamespaceSchema, zodToCairnError } from './memory.js';
import { parseDuration } from './time.js';
import { WellFormedString } from './well-formed-string.js';

/**
 * A pruning policy for one namespace: of the live memories it covers (a fact slot, a kind, or both), keep
 * the `cap` most used (access count, then last access, then newest) and delete the rest, except what it
 * protects: memories younger than `minAge` and memories accessed at least `minAccess` times are never
 * pruned, whatever the cap. Deleting is a tombstone, like every delete: `export` still shows it.
 */
export interface PrunePolicy {
  namespace: string;
  /** Facts of this slot (`meta.slot`, set by a write with slot and key). */
  slot?: string;
  kind?: string;
  /** Live memories kept, at most (protected ones may exceed it). */
  cap: number;
  /** Memories younger than this (ms, by their ts) are protected. @defaultValue 0 */
  minAgeMs: number;
  /** Memories accessed (searched or fetched) at least this often are protected. @defaultValue none */
  minAccess: number | null;
}

/** A policy's fields on the wire, before the check that it names a slot or a kind. */
export const PrunePolicyFields = z.strictObject({
  namespace: NamespaceSchema,
  slot: WellFormedString.min(1).max(FACT_LIMITS.maxSlotChars).optional(),
  kind: WellFormedString.min(1).max(64).optional(),
  cap: z.number().min(0).max(10_000_000).int(),
  min_age: z.union([WellFormedString, z.number().nonnegative()]).optional(),
  min_access: z.number().int().min(1).optional(),
});

/**
 * Refuses a policy over a whole namespace. A schema built on `PrunePolicyFields` (a request that adds its
 * own fields by `extend`, which keeps them strict: an intersection let a misspelt `dryRun` through, and
 * the prune ran for real) applies it too.
 */
export function namesSlotOrKind<
  T extends z.ZodType<{ slot?: string | undefined; kind?: string | undefined }>,
>(schema: T) {
  return schema.refine((p) => p.slot !== undefined || p.kind !== undefined, {
    message: 'a pruning policy names a slot or a kind (or both): it never covers a whole namespace',
    path: ['slot'],
  });
}

/** The wire shape of a policy (CLI, HTTP, CAIRN_PRUNE_POLICIES): durations as "30d" or ms. */
export const PrunePolicySchema = namesSlotOrKind(PrunePolicyFields);

export type PrunePolicyWire = z.input<typeof PrunePolicySchema>;

/** Validates a policy from the wire, naming the field at fault. */
export function parsePrunePolicy(input: unknown, context?: string): PrunePolicy {
  const parsed = PrunePolicySchema.safeParse(input);
  if (!parsed.success) throw zodToCairnError(parsed.error, context);
  const p = parsed.data;
  return {
    namespace: p.namespace,
    ...(p.slot !== undefined ? { slot: p.slot } : {}),
    ...(p.kind !== undefined ? { kind: p.kind } : {}),
    cap: p.cap,
    minAgeMs: p.min_age === undefined || p.min_age === 0 ? 0 : parseDuration(p.min_age, 'min_age'),
    minAccess: p.min_access ?? null,
  };
}
