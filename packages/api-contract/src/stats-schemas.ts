import { z } from 'zod';

export const NamespaceStatsSchema = z.object({
  stored: z.number().int().describe('live memories: neither superseded (merged, replaced) nor deleted'),
  superseded: z
    .number()
    .int()
    .describe(
      'memories replaced by a newer one (a consolidation merge, a fact key written again, supersedes)',
    ),
  deleted: z.number().int().describe('tombstoned memories'),
  embedded: z
    .number()
    .int()
    .describe('live and superseded memories with a vector of their present text in the active space'),
  indexed: z.number().int(),
  pending: z.number().int(),
  failed: z.number().int(),
  fields: z.number().int().describe("named fields of the namespace's memories (multi-route recall)"),
  fieldsEmbedded: z.number().int().describe('named fields with a vector in the active space'),
});

export const StatsResponseSchema = z
  .object({
    mode: z.enum(['embedded', 'distributed']),
    space: z.string().nullable(),
    namespaces: z.record(z.string(), NamespaceStatsSchema).describe('only the namespaces the key may read'),
  })
  .meta({ id: 'StatsResponse' });

export const HealthResponseSchema = z.object({
  status: z.enum(['ok', 'unavailable']),
  checks: z.record(z.string(), z.object({ ok: z.boolean(), detail: z.string().optional() })).optional(),
});
