import { CairnError, type Embedder, embeddingSpaceOf } from '@cairn/core';
import { createEmbedder } from '@cairn/embed';
import type { SpaceInfo } from '@cairn/store';

/**
 * The embedder of a stored space, built without a network call: its spec and dimensions are recorded.
 * Spaces from before specs were recorded can only be the built-in hashing embedder.
 */
export function specOf(space: SpaceInfo): string {
  const spec = recordedSpecOf(space);
  if (!spec)
    throw new CairnError('NOT_FOUND', `embedding space ${space.id} does not record which embedder built it`, {
      field: 'space',
    });
  return spec;
}

/** The space's embedder spec, or null when it does not record one (see `specOf`). */
export function recordedSpecOf(space: SpaceInfo): string | null {
  return space.embedder ?? (space.modelId.startsWith('cairn-hash') ? `hash:${space.dimensions}` : null);
}

export function embedderOfSpace(space: SpaceInfo, env?: Record<string, string | undefined>): Embedder {
  const spec = specOf(space);
  const embedder = createEmbedder(spec, { dimensions: space.dimensions, env });
  if (embeddingSpaceOf(embedder).id !== space.id)
    throw new CairnError(
      'INVALID_INPUT',
      `embedder spec ${spec} now builds space ${embeddingSpaceOf(embedder).id}, not ${space.id}; check CAIRN_* embedder settings`,
      { field: 'embedder' },
    );
  return embedder;
}
