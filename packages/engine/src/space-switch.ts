import type { Embedder } from '@cairn/core';
import type { EmbeddedPipeline } from '@cairn/pipeline';
import type { SpaceInfo } from '@cairn/store';
import type { VectorIndexManager } from '@cairn/vector';
import type { EmbedLane } from './embed-lane.js';
import { type ServingDeps, type ServingSpace, serveSpace } from './serving-space.js';
import { embedderOfSpace } from './space-embedder.js';

/** What the switch needs of the engine it serves. */
export interface SpaceSwitchHost {
  /** Whether this process holds the writer role now (it then embeds, and writes index files). */
  isWriter(): boolean;
  closed(): boolean;
  /** The writer's pipeline, retargeted at the space served. */
  pipeline(): EmbeddedPipeline;
}

/**
 * Which embedding space this process serves searches from, and the switch to another: a space this
 * process built (a reindex it ran: its indexes are already loaded), one another process activated (new
 * indexes over its saved files), or the same space served again as the writer after a takeover. The
 * writer's pipeline follows each switch, so new writes are embedded into the space served.
 */
export class SpaceSwitch {
  /** What searches are served from; replaced as a whole by a switch. */
  current: ServingSpace;
  /** The switch to a space this process built, until its build's last pass settled (see `adopt`). */
  retargeting: Promise<void> = Promise.resolve();

  constructor(
    private readonly deps: ServingDeps,
    /** Runs the writer's embed passes with the built-in embedder (see `embedWrites`); null: inline. */
    private readonly lane: EmbedLane | null,
    private readonly host: SpaceSwitchHost,
    embedder: Embedder | null,
    space: SpaceInfo | null,
  ) {
    this.current = this.serve(embedder, space);
  }

  /**
   * The embedder the writer's pipeline runs: the built-in one as a stand-in whose passes run whole on the
   * embed lane (see `embedWrites`; a remote one, or one given in the options, stays as it is).
   */
  passEmbedder(embedder: Embedder, space: SpaceInfo): Embedder;
  passEmbedder(embedder: Embedder | null, space: SpaceInfo | null): Embedder | null;
  passEmbedder(embedder: Embedder | null, space: SpaceInfo | null): Embedder | null {
    return this.lane && embedder && space ? this.lane.passEmbedder(embedder, space) : embedder;
  }

  /** Serves a space this process just built and activated, from its already loaded indexes. */
  adopt(space: SpaceInfo, embedder: Embedder, vectors: VectorIndexManager, settled: Promise<void>): void {
    const old = this.current;
    // Built with loading on writes off (see spaceIndexes); serving, the writer loads on writes again.
    vectors.setLoadAfterWrites();
    // The memories deleted while it was built (its builds dropped those they saw) leave it before it serves.
    vectors.forgetDeletes();
    this.current = this.serve(embedder, space, vectors);
    // The build's last pass may still be on the pool: its vectors are applied when it returns, and applied
    // after this pipeline's newer ones they would be skipped. Meanwhile new writes get vectors in the space
    // just left (kept current for the grace period); this space's cursor then says what it lacks.
    this.retargeting = settled.then(() => {
      if (!this.host.closed() && this.current.space?.id === space.id)
        this.host.pipeline().retarget(this.passEmbedder(embedder, space), space);
    });
    this.deps.log('info', 'serving the embedding space this process built', {
      from: old.space?.id,
      to: space.id,
    });
    void old.vectors?.close();
  }

  /** Serves queries from another (complete) space; the old space's index is flushed and dropped. */
  activate(space: SpaceInfo): void {
    const old = this.current;
    const embedder = embedderOfSpace(space, this.deps.opts.env);
    this.current = this.serve(embedder, space);
    if (this.host.isWriter()) this.host.pipeline().retarget(this.passEmbedder(embedder, space), space);
    this.deps.log('info', 'serving a newly activated embedding space', { from: old.space?.id, to: space.id });
    void old.vectors?.close();
  }

  /**
   * Serves the same space again as the writer (this process took the role over): its vector indexes are
   * reopened as the writer's. A space activated while this process followed was served, but the pipeline
   * was not retargeted then (a follower embeds nothing): it is now.
   */
  serveAsWriter(): void {
    const old = this.current;
    this.current = this.serve(old.embedder, old.space);
    if (old.embedder && old.space)
      this.host.pipeline().retarget(this.passEmbedder(old.embedder, old.space), old.space);
    void old.vectors?.close();
  }

  private serve(
    embedder: Embedder | null,
    space: SpaceInfo | null,
    built: VectorIndexManager | null = null,
  ): ServingSpace {
    return serveSpace(this.deps, embedder, space, this.host.isWriter() ? 'writer' : 'reader', built);
  }
}
