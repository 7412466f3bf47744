// The operator's routes: memory hygiene (consolidation, undo, pruning) and the embedding spaces (list,
// live reindex, activate, drop, the distributed pipeline's dead letters).
import {
  ActivateSpaceResponseSchema,
  ConsolidateRequestSchema,
  ConsolidateResponseSchema,
  ConsolidationsQuerySchema,
  ConsolidationsResponseSchema,
  DeadLettersResponseSchema,
  DropSpaceResponseSchema,
  PruneRequestSchema,
  PruneResponseSchema,
  ReindexRequestSchema,
  ReindexResponseSchema,
  SpaceActionRequestSchema,
  SpacesResponseSchema,
  UndoConsolidationRequestSchema,
  UndoConsolidationResponseSchema,
} from '@cairn/api-contract';
import type { MemoryService } from '@cairn/service';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ERROR_RESPONSES } from './error-responses.js';

/** Consolidation and pruning, run now or dry (they also run on the data folder writer's schedule). */
export function registerHygieneRoutes(api: FastifyInstance, service: MemoryService): void {
  const errors = ERROR_RESPONSES;
  const hygiene = (req: FastifyRequest) => service.hygiene.scoped(req.access);
  api.post(
    '/v1/hygiene/consolidate',
    {
      schema: {
        summary: 'Merge near-duplicates into the newer memory now (or dry_run: list what would merge)',
        description:
          'Looks at the vectors written since the last run: memories of one namespace and kind with the same text, or a cosine at or above the threshold (0.95) between a memory and its nearest neighbours, verified exactly. The older one is marked superseded by the newer (nothing is deleted; undo brings it back). Without a namespace, every namespace (a * key).',
        body: ConsolidateRequestSchema,
        response: { 200: ConsolidateResponseSchema, ...errors },
      },
    },
    async (req) => hygiene(req).consolidate(req.body as never),
  );
  api.post(
    '/v1/hygiene/undo',
    {
      schema: {
        summary: 'Bring merged memories back; the job never merges them again',
        body: UndoConsolidationRequestSchema,
        response: { 200: UndoConsolidationResponseSchema, ...errors },
      },
    },
    async (req) => hygiene(req).undoConsolidation(req.body as never),
  );
  api.get(
    '/v1/hygiene/consolidations',
    {
      schema: {
        summary: "A namespace's merges, newest first (undone ones included)",
        description:
          'Merges in force and merges undone (undone_at set). A merge dissolved by deleting or rewriting one of its memories leaves no record and is not listed.',
        querystring: ConsolidationsQuerySchema,
        response: { 200: ConsolidationsResponseSchema, ...errors },
      },
    },
    async (req) => hygiene(req).consolidations(req.query as never),
  );
  api.post(
    '/v1/hygiene/prune',
    {
      schema: {
        summary: 'Apply a pruning policy now (or dry_run: list what it would delete)',
        description:
          'Of the live memories of a fact slot or a kind, keeps the cap most used (access count, last access, newest) and deletes the rest, never one younger than min_age or accessed at least min_access times.',
        body: PruneRequestSchema,
        response: { 200: PruneResponseSchema, ...errors },
      },
    },
    async (req) => hygiene(req).prune(req.body as never),
  );
}

/** The operator's routes over embedding spaces: list, live reindex, activate, drop (a `*` key only). */
export function registerSpaceRoutes(api: FastifyInstance, service: MemoryService): void {
  const errors = ERROR_RESPONSES;
  const spaces = (req: FastifyRequest) => service.spaces.scoped(req.access);
  api.get(
    '/v1/spaces',
    {
      schema: {
        summary: 'Embedding spaces with their progress (needs a key for every namespace)',
        response: { 200: SpacesResponseSchema, ...errors },
      },
    },
    async (req) => spaces(req).spaces(),
  );
  api.post(
    '/v1/spaces/reindex',
    {
      schema: {
        summary: 'Start a live reindex into the space an embedder builds',
        description:
          'The data folder’s writer fills the new space beside the active one while searches and writes go on, builds and saves its vector indexes, then (activate, the default) switches every process to it at once. Answers 202 at once; follow it with GET /v1/spaces. Writes made meanwhile get vectors in both spaces.',
        body: ReindexRequestSchema,
        response: { 202: ReindexResponseSchema, ...errors },
      },
    },
    async (req, reply) => reply.code(202).send(await spaces(req).reindex(req.body as never)),
  );
  api.post(
    '/v1/spaces/activate',
    {
      schema: {
        summary: 'Make a complete space the one searches use',
        body: SpaceActionRequestSchema,
        response: { 200: ActivateSpaceResponseSchema, ...errors },
      },
    },
    async (req) => spaces(req).activateSpace(req.body as never),
  );
  api.get(
    '/v1/dead-letters',
    {
      schema: {
        summary:
          'Jobs of the distributed pipeline that failed for good, with why (needs a key for every namespace)',
        description:
          'What `cairn dead-letters` lists, newest first: queue, job, id, the last error, attempts, when, and how many memories it carried. In the embedded mode there are no queues: `mode: embedded` and an empty list.',
        response: { 200: DeadLettersResponseSchema, ...errors },
      },
    },
    async (req) => spaces(req).deadLetters(),
  );
  api.post(
    '/v1/spaces/drop',
    {
      schema: {
        summary: 'Delete an inactive space, its vectors and its index files (a build of it stops)',
        body: SpaceActionRequestSchema.pick({ space: true }),
        response: { 200: DropSpaceResponseSchema, ...errors },
      },
    },
    async (req) => spaces(req).dropSpace(req.body as never),
  );
}
