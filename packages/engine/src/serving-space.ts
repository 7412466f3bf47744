import { join } from 'node:path';
import type { ComputePool } from '@cairn/compute';
import { type Embedder, searchDefaultsFor } from '@cairn/core';
import { HybridRouter } from '@cairn/router';
import type { MemoryStore, SpaceInfo } from '@cairn/store';
import { VectorIndexManager, workerIndexBuilder } from '@cairn/vector';
import type { EngineLog, EngineOptions } from './engine-options.js';

/** What a search needs of one embedding space; replaced as a whole when another space is activated. */
export interface ServingSpace {
  embedder: Embedder | null;
  space: SpaceInfo | null;
  vectors: VectorIndexManager | null;
  router: HybridRouter;
}

export interface ServingDeps {
  dataDir: string;
  store: MemoryStore;
  pool: ComputePool | null;
  opts: EngineOptions;
  log: EngineLog;
}

/**
 * The vector indexes and router that serve one space's searches: `built` when this process just built them
 * (a reindex it ran), else new ones over the space's saved files, written only by the data folder's writer.
 */
export function serveSpace(
  deps: ServingDeps,
  embedder: Embedder | null,
  space: SpaceInfo | null,
  role: 'writer' | 'reader',
  built: VectorIndexManager | null = null,
): ServingSpace {
  const { opts, store } = deps;
  const vectors =
    built ??
    (embedder && space
      ? new VectorIndexManager({
          dir: join(deps.dataDir, 'vectors'),
          space,
          embeddings: store.embeddings,
          keys: store,
          builder: deps.pool ? workerIndexBuilder(deps.pool) : undefined,
          exactThreshold: opts.exactThreshold,
          waitForBuild: opts.waitForIndex,
          unbuiltSearch: opts.unbuiltSearch,
          auditOnLoad: opts.auditOnLoad,
          role,
          hnsw: opts.hnsw,
          buildThreads: opts.buildThreads,
          log: deps.log,
        })
      : null);
  const router = new HybridRouter({
    lexical: store.lexical,
    memories: store,
    vector: vectors,
    embedder,
    routes: store.routes,
    reranker: opts.reranker ?? null,
    completeVectorList: opts.completeVectorList ?? false,
    defaults: searchDefaultsFor(embedder, opts.search),
  });
  return { embedder, space, vectors, router };
}
