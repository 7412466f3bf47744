import { ComputePool } from '@cairn/compute';
import type { Embedder } from '@cairn/core';
import type { OffThreadPass } from '@cairn/pipeline';
import type { SpaceInfo } from '@cairn/store';
import { offThreadPass, warmPasses } from './off-thread-embedder.js';
import { poolEmbedder } from './space-builder.js';
import { recordedSpecOf } from './space-embedder.js';

/**
 * A long-lived writer's embed lane (see `embedWrites`): its embed passes run whole (read, embed with the
 * built-in embedder, store the vectors) on a thread of its own with a connection of its own, and the
 * serving thread only adds what was stored to the index.
 */
export class EmbedLane {
  // One thread: passes run one at a time anyway (the pipeline's loop). Kept while the engine is open: a
  // lane let go after 30 idle seconds started its thread and loaded its modules again on the next write,
  // whose vector then came ~0.2 s later than on the serving thread. Not niced, unlike the build pool: a
  // write's vector is part of serving it (until it lands, the write is found by its words only), and a
  // niced thread on this 2-core machine busy with two other processes got 5–9% of a core.
  private readonly pool = new ComputePool({
    maxThreads: 1,
    idleTimeoutMs: Number.POSITIVE_INFINITY,
    niceIncrement: 0,
  });

  /**
   * The embedder the writer's pipeline runs: the built-in one as a stand-in whose passes run here; a
   * remote one (it waits on the network, not the CPU), or a space without a recorded spec, as it is.
   */
  passEmbedder(embedder: Embedder, space: SpaceInfo): Embedder {
    const spec = recordedSpecOf(space);
    return spec ? poolEmbedder(embedder, spec, this.pool) : embedder;
  }

  /** The pipeline's `offThreadPass`: passes stored on a connection of their own to `path` (the folder's file). */
  passes(path: string | null): OffThreadPass | undefined {
    return offThreadPass(this.pool, path);
  }

  /** Loads the pass task and the embedder on the lane's thread, so a server does so before it listens. */
  warm(embedder: Embedder, space: SpaceInfo): Promise<void> {
    return warmPasses(this.pool, this.passEmbedder(embedder, space), space);
  }

  close(): Promise<void> {
    return this.pool.close();
  }
}
