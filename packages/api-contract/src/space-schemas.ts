import { WellFormedString } from '@cairn/core';
import { z } from 'zod';

/**
 * Embedding spaces over the API: list them with their progress, start a live reindex, activate or drop
 * one. An operator's routes: they need a key that may use every namespace (`*`), because a space holds
 * vectors of all of them.
 */

const SpaceIdSchema = WellFormedString.min(1).max(200).describe('a space id, e.g. cairn-hash-v1/384');

export const SpaceSchema = z
  .object({
    id: z.string(),
    embedder: z
      .string()
      .nullable()
      .describe('the spec that builds it, e.g. hash:384 or ollama:nomic-embed-text'),
    dimensions: z.number().int(),
    active: z.boolean().describe('the space searches use'),
    state: z.enum(['building', 'ready']),
    activate_when_ready: z
      .boolean()
      .describe('a building space the writer activates once complete and indexed'),
    current_until: z
      .number()
      .int()
      .nullable()
      .describe(
        'until when (epoch ms) this inactive space keeps receiving the vectors of new writes: the space a reindex replaced, during its grace period, so activating it again is instant; null when not kept current',
      ),
    progress: z.object({
      total: z.number().int().describe('live memories'),
      embedded: z.number().int().describe('live memories with a current vector in the space'),
      failed: z.number().int().describe('live memories the embedder refused'),
    }),
    build: z
      .object({
        phase: z.enum(['embedding', 'indexing', 'waiting', 'activated', 'stopped', 'failed']),
        last_error: z.string().nullable(),
      })
      .nullable()
      .describe('the build under way, when the answering process runs it (the data folder’s writer)'),
  })
  .meta({ id: 'EmbeddingSpace' });

export const SpacesResponseSchema = z.object({ spaces: z.array(SpaceSchema) }).meta({ id: 'SpacesResponse' });

export const ReindexRequestSchema = z
  .strictObject({
    embedder: WellFormedString.min(1)
      .max(200)
      .describe('hash, hash:<dims>, ollama:<model> or openai:<model>'),
    activate: z.boolean().default(true).describe('switch to the space once it is complete and indexed'),
  })
  .meta({ id: 'ReindexRequest' });

export const ReindexResponseSchema = z
  .object({ space: SpaceSchema, started: z.boolean().describe('false when the space was already active') })
  .meta({ id: 'ReindexResponse' });

export const SpaceActionRequestSchema = z.strictObject({
  space: SpaceIdSchema,
  force: z.boolean().default(false).describe('activate: even while the space still lacks vectors'),
});

export const ActivateSpaceResponseSchema = z.object({ activated: z.string() });
export const DropSpaceResponseSchema = z.object({ dropped: z.string(), vectors: z.number().int() });

/** Jobs that failed for good in a distributed deployment (what `cairn dead-letters` lists); an operator's. */
export const DeadLettersResponseSchema = z
  .object({
    mode: z.enum(['embedded', 'distributed']).describe('embedded mode has no queues, so never a dead letter'),
    dead_letters: z.array(
      z.object({
        queue: z.string(),
        job: z.string().describe('capture, embed or index'),
        id: z.string(),
        reason: z.string().describe('the last error'),
        attempts: z.number().int(),
        failed_at: z.number().int().nullable(),
        size: z.number().int().describe('memories the job carried'),
      }),
    ),
  })
  .meta({ id: 'DeadLettersResponse' });

export type DeadLettersResponse = z.infer<typeof DeadLettersResponseSchema>;

export type SpaceOut = z.infer<typeof SpaceSchema>;
export type SpacesResponse = z.infer<typeof SpacesResponseSchema>;
export type ReindexRequest = z.input<typeof ReindexRequestSchema>;
export type ReindexResponse = z.infer<typeof ReindexResponseSchema>;
export type SpaceActionRequest = z.input<typeof SpaceActionRequestSchema>;
export type ActivateSpaceResponse = z.infer<typeof ActivateSpaceResponseSchema>;
export type DropSpaceResponse = z.infer<typeof DropSpaceResponseSchema>;

/** The space operations, as one interface: the HTTP client implements it, the service in-process. */
export interface SpacesApi {
  spaces(): Promise<SpacesResponse>;
  reindex(req: ReindexRequest): Promise<ReindexResponse>;
  activateSpace(req: SpaceActionRequest): Promise<ActivateSpaceResponse>;
  dropSpace(req: Pick<SpaceActionRequest, 'space'>): Promise<DropSpaceResponse>;
  /** The distributed pipeline's dead letters, newest first (an operator's route, like the spaces'). */
  deadLetters(): Promise<DeadLettersResponse>;
}
