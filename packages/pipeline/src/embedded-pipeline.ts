import { type Embedder, type EmbeddingSpace, withDefaults } from '@cairn/core';
import { type CaptureResult, captureBatch } from './capture-stage.js';
import { type EmbedStageResult, embedPending, embedPendingRoutes } from './embed-stage.js';
import type { EmbeddingSink, IndexSink, RecordSink, RouteEmbeddingSink } from './stage-ports.js';

export interface EmbeddedPipelineOptions {
  /** Memories embedded per embedder call. @defaultValue 256 */
  embedBatchSize: number;
  /**
   * Vectors stored per transaction, with a turn of the event loop between: a search waits for one slice
   * at most, not for a whole batch (see embedPending). @defaultValue 64
   */
  storeSlice: number;
  /** First retry delay after an embedder failure, doubled per failure. @defaultValue 500 (ms) */
  retryBaseMs: number;
  /** Cap on the retry delay. @defaultValue 30_000 (ms) */
  retryMaxMs: number;
  /**
   * Where named-field routes are read and their vectors stored; absent: routes are not embedded (their
   * lexical lists still serve). @defaultValue undefined
   */
  routes?: RouteEmbeddingSink;
  /**
   * Runs a pass on another thread, embedding and storing there (see {@link OffThreadPass}); the vectors it
   * stored are applied to the index here. Absent, or null for an embedder it cannot run: the pass runs on
   * this thread. @defaultValue undefined
   */
  offThreadPass?: OffThreadPass;
}

/**
 * One pass of the embed stage run elsewhere: reads up to `batchSize` memories past the space's cursor, embeds
 * and stores them `storeSlice` per transaction on a connection of its own, and answers what it stored. A
 * reindex's pass of a CPU-bound embedder runs so on the compute pool: storing its vectors on the serving
 * thread held that thread for a third of the reindex's embedding phase (bench/RESULTS.md). Null: this
 * embedder cannot run there.
 */
export type OffThreadPass = (
  embedder: Embedder,
  space: EmbeddingSpace,
  batchSize: number,
  storeSlice: number,
) => Promise<EmbedStageResult> | null;

export const DEFAULT_EMBEDDED_PIPELINE_OPTIONS: Readonly<EmbeddedPipelineOptions> = Object.freeze({
  embedBatchSize: 256,
  storeSlice: 64,
  retryBaseMs: 500,
  retryMaxMs: 30_000,
});

export interface PipelineStatus {
  /** True while the embed/index loop has work in hand. */
  running: boolean;
  embedded: number;
  reused: number;
  /** The last embedder error, cleared by the next success. */
  lastError: string | null;
  /** Consecutive embedder failures. */
  failures: number;
}

/**
 * The embedded transport: capture → embed → index as direct calls in one process. Capture is synchronous
 * and durable on return; embedding and indexing run behind it on the event loop, one batch per turn, so
 * searches interleave with a large ingest. The distributed transport runs the same stage functions
 * behind queues.
 */
export class EmbeddedPipeline {
  private readonly opts: EmbeddedPipelineOptions;
  private loop: Promise<void> | null = null;
  private retryTimer: NodeJS.Timeout | null = null;
  private closed = false;
  private rerun = false;
  private readonly drainWaiters: Array<() => void> = [];
  /** A pass running elsewhere (see `offThreadPass`), settled once its vectors are applied here. */
  private elsewhere: Promise<unknown> | null = null;
  readonly status: PipelineStatus = { running: false, embedded: 0, reused: 0, lastError: null, failures: 0 };

  constructor(
    private readonly records: RecordSink,
    private readonly embeddings: EmbeddingSink,
    private readonly index: IndexSink,
    private embedder: Embedder | null,
    private space: EmbeddingSpace | null,
    opts: Partial<EmbeddedPipelineOptions> = {},
  ) {
    this.opts = withDefaults(DEFAULT_EMBEDDED_PIPELINE_OPTIONS, opts);
  }

  /** Stores a batch (durable on return) and schedules its embedding. */
  ingest(inputs: readonly unknown[], now = Date.now()): CaptureResult {
    const result = captureBatch(this.records, inputs, now);
    if (result.counts.stored + result.counts.updated > 0) this.kick();
    return result;
  }

  /**
   * Stores a batch (durable on return) without embedding it: another process, the data folder's writer,
   * embeds and indexes it.
   */
  capture(inputs: readonly unknown[], now = Date.now()): CaptureResult {
    return captureBatch(this.records, inputs, now);
  }

  /**
   * Embeds into another space from now on (a reindex finished and its space was activated). A pass under
   * way finishes in the old space; the new space's cursor says what it still lacks.
   */
  retarget(embedder: Embedder, space: EmbeddingSpace): void {
    this.embedder = embedder;
    this.space = space;
    this.kick();
  }

  /** Starts the embed/index loop if it is idle (also picks up work left by an earlier process). */
  kick(): void {
    // Set even when a pass is under way: that pass may have read the backlog before this write landed.
    this.rerun = true;
    if (this.loop || this.closed || !this.embedder || !this.space || this.retryTimer) return;
    this.status.running = true;
    this.rerun = false;
    this.loop = this.run().finally(() => {
      this.loop = null;
      this.status.running = false;
      // A kick that landed after the last pass read its batch, but before this callback, restarts the loop.
      if (this.rerun && !this.retryTimer && !this.closed) this.kick();
      else if (!this.retryTimer) this.releaseWaiters();
    });
  }

  /**
   * Resolves when every stored memory is embedded and indexed, or rejects with the embedder's error after
   * `maxFailures` consecutive failures (so a CLI does not hang on a dead embedder).
   */
  async drain(maxFailures = Number.POSITIVE_INFINITY): Promise<void> {
    if (!this.embedder || !this.space) return;
    for (;;) {
      this.kick();
      if (!this.loop && !this.retryTimer) return;
      await new Promise<void>((r) => this.drainWaiters.push(r));
      if (this.status.failures >= maxFailures) throw new Error(this.status.lastError ?? 'embedding failed');
      if (!this.loop && !this.retryTimer && this.status.failures === 0) return;
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = null;
    await this.loop;
    this.releaseWaiters();
  }

  private async run(): Promise<void> {
    while (!this.closed) {
      // Read at every pass: after a retarget the next pass embeds into the new space. Read once per loop,
      // the loop ran one more pass in the space it left and ended, and the new space's backlog waited for
      // the next write.
      const embedder = this.embedder!;
      const space = this.space!;
      let caughtUp: boolean;
      try {
        const r = await this.pass(embedder, space);
        this.status.embedded += r.stored.length;
        this.status.reused += r.reused;
        caughtUp = r.caughtUp;
        // Routes after the memories: a memory's own vector serves first, its fields' vectors follow.
        if (caughtUp && this.opts.routes) {
          const routes = await embedPendingRoutes(
            this.opts.routes,
            embedder,
            space,
            this.opts.embedBatchSize,
          );
          caughtUp = routes.caughtUp;
        }
        this.status.lastError = null;
        this.status.failures = 0;
      } catch (err) {
        this.status.failures += 1;
        this.status.lastError = (err as Error).message;
        const delay = Math.min(this.opts.retryMaxMs, this.opts.retryBaseMs * 2 ** (this.status.failures - 1));
        this.retryTimer = setTimeout(() => {
          this.retryTimer = null;
          this.kick();
        }, delay);
        this.retryTimer.unref();
        this.releaseWaiters();
        return;
      }
      if (caughtUp && !this.rerun) return;
      this.rerun = false;
      // Yield between batches so searches are served during a large backlog.
      await new Promise((r) => setImmediate(r));
    }
  }

  /**
   * One pass, here or elsewhere. Not `async`: a pass here must be the very promise embedPending returns,
   * settling in as few turns as before, since a one-shot command closes the pipeline right after its write
   * and only a pass already under way is finished (the next writer embeds the rest).
   */
  private pass(embedder: Embedder, space: EmbeddingSpace): Promise<EmbedStageResult> {
    const { embedBatchSize, storeSlice } = this.opts;
    const elsewhere = this.opts.offThreadPass?.(embedder, space, embedBatchSize, storeSlice) ?? null;
    if (!elsewhere)
      return embedPending(this.embeddings, this.index, embedder, space, embedBatchSize, storeSlice);
    const applied = elsewhere.then((r) => {
      this.index.apply(r.stored, space);
      return r;
    });
    this.elsewhere = applied;
    const clear = () => {
      if (this.elsewhere === applied) this.elsewhere = null;
    };
    applied.then(clear, clear);
    return applied;
  }

  /**
   * Resolves once no pass run elsewhere has stored vectors that are not applied here yet: such a pass
   * commits on its own connection, and its vectors reach the index only when it returns. A caller that
   * reads stored vectors synchronously right after (before the loop's next pass, which starts a turn
   * later) sees only applied ones. A pass here applies as it stores.
   */
  async applied(): Promise<void> {
    while (this.elsewhere) await this.elsewhere.catch(() => undefined);
  }

  private releaseWaiters(): void {
    for (const w of this.drainWaiters.splice(0)) w();
  }
}
