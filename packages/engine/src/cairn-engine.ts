import { join } from 'node:path';
import { ComputePool } from '@cairn/compute';
import {
  DEFAULT_SEARCH_OPTIONS,
  type Embedder,
  embeddingSpaceOf,
  type KeyedMemory,
  type SearchRequest,
  type SearchResponse,
  withDefaults,
} from '@cairn/core';
import { HashingEmbedder } from '@cairn/embed';
import { type CaptureResult, EmbeddedPipeline } from '@cairn/pipeline';
import { HybridRouter } from '@cairn/router';
import { MemoryStore, type SpaceInfo, type TimelineResult } from '@cairn/store';
import { VectorIndexManager, workerIndexBuilder } from '@cairn/vector';
import type { EngineLog, EngineOptions } from './engine-options.js';

/** The shape `cairn stats --json` prints; the distributed mode adds `queues`. */
export interface EngineStats {
  dataDir: string;
  space: string | null;
  namespaces: Record<string, NamespaceStats>;
}

export interface NamespaceStats {
  /** Live memories (neither superseded nor deleted). */
  stored: number;
  superseded: number;
  deleted: number;
  /** Memories with a vector in the active embedding space. */
  embedded: number;
  /** Vectors in the namespace's loaded or saved index, when known. */
  indexed: number | null;
  /** Memories stored but not yet embedded. */
  pending: number;
  /** Memories the embedder refused. */
  failed: number;
  index: string;
}

const noLog: EngineLog = () => {};

/**
 * Cairn in one process: a data folder, no Redis. Writes are captured synchronously (durable when
 * `ingest` returns); embedding and vector indexing follow on the same event loop, and HNSW builds run on
 * worker threads.
 */
export class CairnEngine {
  readonly store: MemoryStore;
  readonly embedder: Embedder | null;
  readonly vectors: VectorIndexManager | null;
  readonly router: HybridRouter;
  readonly pipeline: EmbeddedPipeline;
  readonly space: SpaceInfo | null;
  private readonly pool: ComputePool | null;
  private readonly persistTimer: NodeJS.Timeout | null = null;
  private closed = false;

  private constructor(
    readonly dataDir: string,
    opts: EngineOptions,
  ) {
    const log = opts.log ?? noLog;
    this.store = new MemoryStore({ path: join(dataDir, 'cairn.db'), lexical: opts.lexical });
    this.embedder = opts.embedder === undefined ? new HashingEmbedder() : opts.embedder;
    this.space = this.embedder ? this.store.embeddings.ensureSpace(embeddingSpaceOf(this.embedder)) : null;
    this.pool = this.embedder && (opts.useWorkerThreads ?? true) ? new ComputePool() : null;
    this.vectors =
      this.embedder && this.space
        ? new VectorIndexManager({
            dir: join(dataDir, 'vectors'),
            space: this.space,
            embeddings: this.store.embeddings,
            keys: this.store,
            builder: this.pool ? workerIndexBuilder(this.pool) : undefined,
            exactThreshold: opts.exactThreshold,
            waitForBuild: opts.waitForIndex,
            hnsw: opts.hnsw,
            log,
          })
        : null;
    this.router = new HybridRouter({
      lexical: this.store.lexical,
      memories: this.store,
      vector: this.vectors,
      embedder: this.embedder,
      defaults: withDefaults(DEFAULT_SEARCH_OPTIONS, opts.search),
    });
    this.pipeline = new EmbeddedPipeline(
      this.store,
      this.store.embeddings,
      this.vectors ?? { apply: () => {} },
      this.embedder,
      this.space,
      { embedBatchSize: opts.embedBatchSize },
    );
    const every = opts.persistIntervalMs ?? 30_000;
    if (every > 0 && this.vectors) {
      this.persistTimer = setInterval(() => void this.vectors?.flush(), every);
      this.persistTimer.unref();
    }
    // Memories stored by an earlier process that died before embedding them are picked up now.
    this.pipeline.kick();
  }

  static async open(opts: EngineOptions): Promise<CairnEngine> {
    return new CairnEngine(opts.dataDir, opts);
  }

  /** Validates and stores a batch; every item not `rejected` is durable when this returns. */
  ingest(inputs: readonly unknown[]): CaptureResult {
    return this.pipeline.ingest(inputs);
  }

  /**
   * Waits until every stored memory is embedded and indexed, persists the vector indexes and compacts the
   * lexical index. Call it after a bulk ingest; a serving process never needs to.
   */
  async drain(maxFailures?: number): Promise<void> {
    await this.pipeline.drain(maxFailures);
    await this.vectors?.flush();
    await this.store.compactLexicalIndex();
  }

  search(req: SearchRequest): Promise<SearchResponse> {
    return this.router.search(req);
  }

  get(namespace: string, ids: readonly string[]): { memories: KeyedMemory[]; missing: string[] } {
    return this.store.get(namespace, ids);
  }

  timeline(namespace: string, anchorId: string, before = 5, after = 5): TimelineResult {
    return this.store.timeline(namespace, anchorId, before, after);
  }

  delete(namespace: string, id: string): boolean {
    return this.store.delete(namespace, id);
  }

  stats(): EngineStats {
    const namespaces: Record<string, NamespaceStats> = {};
    for (const ns of this.store.namespaces()) {
      const embedded = this.space ? this.store.embeddings.count(this.space.id, ns.namespace) : 0;
      const failed = this.space ? this.store.embeddings.failures(this.space.id, ns.namespace) : 0;
      const idx = this.vectors?.status(ns.namespace);
      const live = ns.live + ns.superseded;
      namespaces[ns.namespace] = {
        stored: ns.live,
        superseded: ns.superseded,
        deleted: ns.deleted,
        embedded,
        indexed: idx?.size ?? null,
        pending: this.space ? Math.max(0, live - embedded - failed) : 0,
        failed,
        index: idx?.state ?? 'none',
      };
    }
    return { dataDir: this.dataDir, space: this.space?.id ?? null, namespaces };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.persistTimer) clearInterval(this.persistTimer);
    await this.pipeline.close();
    await this.vectors?.close();
    await this.pool?.close();
    this.store.close();
  }
}
