import { NamespaceSchema, namesSlotOrKind, PrunePolicyFields, WellFormedString } from '@cairn/core';
import { z } from 'zod';
import { queryInteger } from './query-integer.js';

/**
 * Memory hygiene over the API: the consolidation job (near-duplicates merged into the newer memory,
 * undoable) and pruning policies. Both also run on the data folder's writer's schedule; these routes run
 * them now, or dry.
 */

export const ConsolidateRequestSchema = z
  .strictObject({
    namespace: NamespaceSchema.optional().describe(
      'look at this namespace only; without it, every namespace (a key for all of them, *)',
    ),
    dry_run: z.boolean().default(false).describe('report what would be merged, merge nothing'),
  })
  .meta({ id: 'ConsolidateRequest' });

export const MergeSchema = z
  .object({
    namespace: z.string(),
    id: z.string().describe('the memory merged (superseded; still readable with get)'),
    into: z.string().describe('the newer near-duplicate that absorbed it'),
    cosine: z.number().describe('verified exactly; 1 for the same text'),
    at: z.number().int(),
    undone_at: z.number().int().nullable(),
  })
  .meta({ id: 'Merge' });

export const ConsolidateResponseSchema = z
  .object({
    dry_run: z.boolean(),
    scanned: z.number().int().describe('new vectors looked at'),
    merged: z.number().int(),
    exact: z.number().int().describe('merged for having the same text'),
    near: z.number().int().describe('merged for a cosine at or above the threshold'),
    by_namespace: z.record(z.string(), z.number().int()),
    merges: z.array(MergeSchema).describe('the first 100'),
    skipped: z.string().optional().describe('why the job could not run'),
    took_ms: z.number(),
  })
  .meta({ id: 'ConsolidateResponse' });

export const UndoConsolidationRequestSchema = z
  .strictObject({
    namespace: NamespaceSchema,
    ids: z
      .array(WellFormedString.min(1).max(512))
      .min(1)
      .max(1_000)
      .optional()
      .describe('the merged memories to bring back; without it, every merge of the namespace'),
  })
  .meta({ id: 'UndoConsolidationRequest' });

export const UndoConsolidationResponseSchema = z
  .object({ restored: z.array(MergeSchema) })
  .meta({ id: 'UndoConsolidationResponse' });

export const ConsolidationsQuerySchema = z.object({
  namespace: NamespaceSchema,
  limit: queryInteger('limit', z.number().min(1).max(1_000).int()).default(100),
});

export const ConsolidationsResponseSchema = z
  .object({
    merges: z
      .array(MergeSchema)
      .describe(
        'newest first, undone ones included; a merge dissolved by a delete or a rewrite leaves no record and is not listed',
      ),
  })
  .meta({ id: 'ConsolidationsResponse' });

export const PruneRequestSchema = namesSlotOrKind(
  PrunePolicyFields.extend({
    dry_run: z.boolean().default(false).describe('list what would be deleted, delete nothing'),
  }),
).meta({ id: 'PruneRequest' });

export const PruneResponseSchema = z
  .object({
    namespace: z.string(),
    dry_run: z.boolean(),
    covered: z.number().int().describe('live memories the policy covers'),
    protected: z.number().int().describe('over the cap but protected by min_age or min_access'),
    pruned: z
      .array(z.string())
      .describe(
        'ids deleted (or that would be), least used first, each after what it hid (the memories it superseded or absorbed, deleted with it)',
      ),
  })
  .meta({ id: 'PruneResponse' });

export type ConsolidateRequest = z.input<typeof ConsolidateRequestSchema>;
export type ConsolidateResponse = z.infer<typeof ConsolidateResponseSchema>;
export type MergeOut = z.infer<typeof MergeSchema>;
export type UndoConsolidationRequest = z.input<typeof UndoConsolidationRequestSchema>;
export type UndoConsolidationResponse = z.infer<typeof UndoConsolidationResponseSchema>;
export type ConsolidationsQuery = z.input<typeof ConsolidationsQuerySchema>;
export type ConsolidationsResponse = z.infer<typeof ConsolidationsResponseSchema>;
export type PruneRequest = z.input<typeof PruneRequestSchema>;
export type PruneResponse = z.infer<typeof PruneResponseSchema>;

/** The hygiene operations, as one interface: the HTTP client implements it, the service in-process. */
export interface HygieneApi {
  consolidate(req: ConsolidateRequest): Promise<ConsolidateResponse>;
  undoConsolidation(req: UndoConsolidationRequest): Promise<UndoConsolidationResponse>;
  consolidations(query: ConsolidationsQuery): Promise<ConsolidationsResponse>;
  prune(req: PruneRequest): Promise<PruneResponse>;
}
