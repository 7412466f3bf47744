import type { ComputePool } from '@cairn/compute';
import type { Embedder } from '@cairn/core';
import { EMBED_TASK, type EmbedTaskRequest } from '@cairn/embed';

/**
 * Runs a local, CPU-bound embedder (the built-in hashing one) on a worker thread. A worker process's
 * main thread runs capture's SQLite writes, BullMQ and index writes; hashing n-grams there too would
 * leave the machine's other core idle.
 */
export class OffThreadEmbedder implements Embedder {
  readonly modelId: string;
  readonly dimensions: number;
  readonly similarityFloor?: number;

  constructor(
    inner: Embedder,
    private readonly spec: string,
    private readonly pool: ComputePool,
  ) {
    this.modelId = inner.modelId;
    this.dimensions = inner.dimensions;
    if (inner.similarityFloor !== undefined) this.similarityFloor = inner.similarityFloor;
  }

  embed(texts: readonly string[]): Promise<Float32Array[]> {
    const req: EmbedTaskRequest = { spec: this.spec, dimensions: this.dimensions, texts: [...texts] };
    return this.pool.run<Float32Array[]>(EMBED_TASK, req);
  }
}
