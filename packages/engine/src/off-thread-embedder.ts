import { fileURLToPath } from 'node:url';
import type { ComputePool } from '@cairn/compute';
import type { Embedder, EmbeddingSpace } from '@cairn/core';
import { EMBED_TASK, type EmbedTaskRequest } from '@cairn/embed';
import type { EmbedStageResult, OffThreadPass } from '@cairn/pipeline';
import type { SpacePassRequest } from './tasks/space-pass.js';

const SPACE_PASS_TASK = fileURLToPath(new URL('../dist/tasks/space-pass.js', import.meta.url));

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
    readonly spec: string,
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

/**
 * Whole embed passes on the pool for an {@link OffThreadEmbedder}: the worker that embeds also stores the
 * vectors, on a connection of its own to `path` (see `tasks/space-pass.ts`). For the passes of a space that
 * does not serve (a reindex, a kept previous space), where the serving thread would otherwise store a vector
 * per memory. Undefined without a database file another connection can open.
 */
export function offThreadPass(pool: ComputePool, path: string | null): OffThreadPass | undefined {
  if (path === null) return undefined;
  return (embedder, space, batchSize, storeSlice) => {
    if (!(embedder instanceof OffThreadEmbedder)) return null;
    const req: SpacePassRequest = {
      path,
      spec: embedder.spec,
      space: { id: space.id, modelId: space.modelId, dimensions: space.dimensions },
      batchSize,
      storeSlice,
    };
    return pool.run<EmbedStageResult>(SPACE_PASS_TASK, req);
  };
}

/**
 * Loads the pass task and its embedder on `pool`'s thread (an embed lane of one), so that a server's first
 * writes do not pay for it. Resolves once loaded; a failure is left to the first real pass to report.
 */
export async function warmPasses(
  pool: ComputePool,
  embedder: Embedder,
  space: EmbeddingSpace,
): Promise<void> {
  if (!(embedder instanceof OffThreadEmbedder)) return;
  const req: SpacePassRequest = {
    path: '',
    spec: embedder.spec,
    space: { id: space.id, modelId: space.modelId, dimensions: space.dimensions },
    batchSize: 0,
    storeSlice: 0,
    warm: true,
  };
  await pool.run<EmbedStageResult>(SPACE_PASS_TASK, req).catch(() => undefined);
}
