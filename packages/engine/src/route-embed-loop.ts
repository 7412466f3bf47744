import type { Embedder } from '@cairn/core';
import { embedPendingRoutes } from '@cairn/pipeline';
import type { MemoryStore } from '@cairn/store';
import type { EngineLog } from './engine-options.js';
import { embedderOfSpace } from './space-embedder.js';

export interface RouteEmbedLoopOptions {
  /** How often the loop looks for routes to embed. @defaultValue 1_000 (ms) */
  intervalMs: number;
  /** Routes per embedder call. @defaultValue 256 */
  batchSize: number;
  /** Batches per round at most, so one round never holds the event loop long. @defaultValue 16 */
  maxBatches: number;
}

export const DEFAULT_ROUTE_EMBED_LOOP_OPTIONS: Readonly<RouteEmbedLoopOptions> = Object.freeze({
  intervalMs: 1_000,
  batchSize: 256,
  maxBatches: 16,
});

/**
 * Embeds named-field routes into the active space on a timer, in distributed mode, where no process runs
 * the embedded pipeline's loop (which embeds routes after memories). Any worker with the data folder may
 * run one: two loops embed the same routes at worst (storing is idempotent, the cursor only moves up).
 */
export class RouteEmbedLoop {
  private readonly timer: NodeJS.Timeout;
  private round: Promise<void> | null = null;
  private embedder: { spaceId: string; embedder: Embedder } | null = null;
  private closed = false;

  constructor(
    private readonly store: MemoryStore,
    private readonly log: EngineLog,
    private readonly opts: RouteEmbedLoopOptions = DEFAULT_ROUTE_EMBED_LOOP_OPTIONS,
    private readonly env?: Record<string, string | undefined>,
  ) {
    this.timer = setInterval(() => {
      if (!this.round) this.round = this.run().finally(() => (this.round = null));
    }, opts.intervalMs);
    this.timer.unref();
  }

  /** One round now: embeds until caught up or `maxBatches` batches were embedded. */
  async run(): Promise<void> {
    try {
      const space = this.store.spaces.activeSpace();
      if (!space || this.closed) return;
      if (this.embedder?.spaceId !== space.id)
        this.embedder = { spaceId: space.id, embedder: embedderOfSpace(space, this.env) };
      for (let i = 0; i < this.opts.maxBatches && !this.closed; i++) {
        const r = await embedPendingRoutes(
          this.store.routeEmbeddings,
          this.embedder.embedder,
          space,
          this.opts.batchSize,
        );
        if (r.caughtUp) return;
      }
    } catch (err) {
      this.log('warn', 'embedding named-field routes failed; the next round tries again', {
        error: (err as Error).message,
      });
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.timer);
    await this.round;
  }
}
