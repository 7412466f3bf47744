import {
  type DeadLettersResponse,
  ReindexRequestSchema,
  type ReindexResponse,
  SpaceActionRequestSchema,
  type SpaceOut,
  type SpacesApi,
  type SpacesResponse,
} from '@cairn/api-contract';
import { CairnError } from '@cairn/core';
import type { CairnEngine, SpaceView } from '@cairn/engine';
import type { NamespaceAccess } from './namespace-access.js';
import { parseInput } from './parse-input.js';
import type { WriteForwarder } from './write-forwarder.js';

/** A space in the wire shape (snake_case, like every other response): the API's, and `cairn spaces --json`'s. */
export function spaceOut(s: SpaceView): SpaceOut {
  return {
    id: s.id,
    embedder: s.embedder,
    dimensions: s.dimensions,
    active: s.active,
    state: s.state,
    activate_when_ready: s.activateWhenReady,
    current_until: s.currentUntil,
    progress: { total: s.progress.total, embedded: s.progress.embedded, failed: s.progress.failed },
    build: s.build ? { phase: s.build.phase, last_error: s.build.lastError } : null,
  };
}

/**
 * The embedding-space operations behind `/v1/spaces`: what `cairn spaces` and `cairn reindex` do, for a
 * caller of the API. The engine records each request in cairn.db, so whichever process answers, the data
 * folder's writer runs the build.
 */
export class SpaceService {
  constructor(
    private readonly engine: CairnEngine,
    /** Distributed mode: the queues' dead letters, newest first. @defaultValue none (embedded: no queues) */
    private readonly listDeadLetters: (() => Promise<DeadLettersResponse['dead_letters']>) | null = null,
    /** A `serve --processes` child: the primary, which owns the data folder, records reindex requests. */
    private readonly forwarder: Pick<WriteForwarder, 'reindex'> | null = null,
  ) {}

  scoped(access: NamespaceAccess): SpacesApi {
    const operator = (
      why = 'embedding spaces hold every namespace: managing them needs a key that may use all of them (*)',
    ) => {
      // A space holds vectors of every namespace: a key scoped to some of them may not rebuild or drop it.
      if (!access.all) throw new CairnError('FORBIDDEN_NAMESPACE', why, { field: 'authorization' });
    };
    return {
      spaces: async () => {
        operator();
        return this.list();
      },
      deadLetters: async () => {
        operator(
          'dead letters hold jobs of every namespace: listing them needs a key that may use all of them (*)',
        );
        if (!this.listDeadLetters) return { mode: 'embedded' as const, dead_letters: [] };
        return { mode: 'distributed' as const, dead_letters: await this.listDeadLetters() };
      },
      reindex: async (input) => {
        operator();
        return this.reindex(input);
      },
      activateSpace: async (input) => {
        operator();
        const req = parseInput(SpaceActionRequestSchema, input);
        return { activated: this.engine.activateSpace(req.space, { force: req.force }).id };
      },
      dropSpace: async (input) => {
        operator();
        const req = parseInput(SpaceActionRequestSchema, input);
        return { dropped: req.space, vectors: this.engine.dropSpace(req.space) };
      },
    };
  }

  private list(): SpacesResponse {
    return { spaces: this.engine.listSpaces().map(spaceOut) };
  }

  private async reindex(input: unknown): Promise<ReindexResponse> {
    const req = parseInput(ReindexRequestSchema, input);
    const space = this.forwarder?.reindex
      ? await this.forwarder.reindex(req.embedder, req.activate)
      : await this.engine.requestReindex(req.embedder, { activate: req.activate });
    const view = this.engine.listSpaces().find((s) => s.id === space.id)!;
    return { space: spaceOut(view), started: !space.active };
  }
}
