import { type Embedder, isCairnError, withDefaults } from '@cairn/core';

export interface EmbedBatcherOptions {
  /** Texts per embedder call; a call is made as soon as this many are waiting. @defaultValue 256 */
  maxBatch: number;
  /** How long the first waiting text waits for company before a smaller call is made (ms). @defaultValue 5 */
  maxWaitMs: number;
}

export const DEFAULT_EMBED_BATCHER_OPTIONS: Readonly<EmbedBatcherOptions> = Object.freeze({
  maxBatch: 256,
  maxWaitMs: 5,
});

interface Waiting {
  texts: readonly string[];
  resolve: (v: Float32Array[]) => void;
  reject: (e: unknown) => void;
}

/**
 * Wraps an embedder so that requests from concurrently processed jobs share embedder calls: texts are
 * gathered until `maxBatch` are waiting or `maxWaitMs` has passed, whichever is first. A request larger
 * than `maxBatch` is sent on its own. If a call fails, every request in it fails (each job retries),
 * except for a vector of the wrong length (DIMENSION_MISMATCH): that belongs to one text of one request,
 * so each request is sent again on its own, and only the one holding the text fails.
 */
export class EmbedBatcher implements Embedder {
  readonly modelId: string;
  readonly dimensions: number;
  readonly similarityFloor?: number;
  private readonly opts: EmbedBatcherOptions;
  private waiting: Waiting[] = [];
  private count = 0;
  private timer: NodeJS.Timeout | null = null;
  calls = 0;

  constructor(
    private readonly inner: Embedder,
    opts: Partial<EmbedBatcherOptions> = {},
  ) {
    this.opts = withDefaults(DEFAULT_EMBED_BATCHER_OPTIONS, opts);
    this.modelId = inner.modelId;
    this.dimensions = inner.dimensions;
    if (inner.similarityFloor !== undefined) this.similarityFloor = inner.similarityFloor;
  }

  embed(texts: readonly string[]): Promise<Float32Array[]> {
    if (texts.length === 0) return Promise.resolve([]);
    if (texts.length >= this.opts.maxBatch) {
      this.calls++;
      return this.inner.embed(texts);
    }
    return new Promise((resolve, reject) => {
      this.waiting.push({ texts, resolve, reject });
      this.count += texts.length;
      if (this.count >= this.opts.maxBatch) this.fire();
      else if (!this.timer) this.timer = setTimeout(() => this.fire(), this.opts.maxWaitMs);
    });
  }

  private fire(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const group = this.waiting;
    this.waiting = [];
    this.count = 0;
    if (group.length === 0) return;
    this.calls++;
    this.inner.embed(group.flatMap((w) => w.texts)).then(
      (vectors) => {
        let at = 0;
        for (const w of group) {
          w.resolve(vectors.slice(at, at + w.texts.length));
          at += w.texts.length;
        }
      },
      (err: unknown) => {
        if (group.length > 1 && isCairnError(err) && err.code === 'DIMENSION_MISMATCH') {
          for (const w of group) {
            this.calls++;
            this.inner.embed(w.texts).then(w.resolve, w.reject);
          }
          return;
        }
        for (const w of group) w.reject(err);
      },
    );
  }
}
