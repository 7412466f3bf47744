import type { Embedder, EmbeddingSpace } from '@cairn/core';
import type { EmbeddedVector, EmbeddingSink, PendingMemory } from './stage-ports.js';

export interface EmbedStageResult {
  /** Vectors stored in this pass. */
  stored: EmbeddedVector[];
  /** How many came from the content-hash cache instead of the embedder. */
  reused: number;
  /** How many memories were examined. */
  examined: number;
  /** True when the pass drained the backlog. */
  caughtUp: boolean;
}

/** The text a memory is embedded from: its title (if any) and its text. */
export function embeddingText(m: Pick<PendingMemory, 'title' | 'text'>): string {
  return m.title ? `${m.title}\n${m.text}` : m.text;
}

/**
 * The embed stage: takes up to `batchSize` memories past the space's cursor, reuses vectors already
 * computed for the same content, embeds the rest in one call, and stores vectors plus the new cursor in
 * one transaction. If the embedder throws, nothing is written and the cursor stays: the pass is retried.
 */
export async function embedPending(
  sink: EmbeddingSink,
  embedder: Embedder,
  space: EmbeddingSpace,
  batchSize: number,
): Promise<EmbedStageResult> {
  const pending = sink.pending(space.id, batchSize);
  if (pending.length === 0) return { stored: [], reused: 0, examined: 0, caughtUp: true };
  const cached = sink.vectorsByContentHash(
    space,
    pending.map((p) => p.contentHash),
  );
  const toEmbed = new Map<string, PendingMemory>();
  for (const p of pending)
    if (!cached.has(p.contentHash) && !toEmbed.has(p.contentHash)) toEmbed.set(p.contentHash, p);
  const fresh = toEmbed.size > 0 ? await embedder.embed([...toEmbed.values()].map(embeddingText)) : [];
  for (const [i, hash] of [...toEmbed.keys()].entries()) cached.set(hash, fresh[i]!);
  const items = pending.map((memory) => ({ memory, vector: cached.get(memory.contentHash)! }));
  const cursor = pending.at(-1)!.changeSeq;
  // A vector of the wrong length can never be stored; record it as a failure instead of retrying forever.
  const bad = items.filter((it) => it.vector?.length !== space.dimensions);
  if (bad.length > 0) {
    sink.recordFailures(
      space.id,
      bad.map((b) => ({
        key: b.memory.key,
        error: `DIMENSION_MISMATCH: embedder ${embedder.modelId} returned ${b.vector?.length ?? 0} dimensions, space ${space.id} expects ${space.dimensions}`,
      })),
      0,
    );
  }
  const stored = sink.put(
    space,
    items.filter((it) => !bad.includes(it)),
    cursor,
  );
  return {
    stored,
    reused: pending.length - toEmbed.size,
    examined: pending.length,
    caughtUp: pending.length < batchSize,
  };
}
