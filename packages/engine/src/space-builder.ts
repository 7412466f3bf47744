import { rmSync } from 'node:fs';
import { join } from 'node:path';
import type { ComputePool } from '@cairn/compute';
import { CairnError, type Embedder } from '@cairn/core';
import { EmbeddedPipeline, type EmbeddedPipelineOptions } from '@cairn/pipeline';
import type { MemoryStore, SpaceInfo } from '@cairn/store';
import { VectorIndexManager, workerIndexBuilder } from '@cairn/vector';
import { type EngineLog, type EngineOptions, storeSliceOf } from './engine-options.js';
import { OffThreadEmbedder, offThreadPass } from './off-thread-embedder.js';

/** Where a build stands, for `cairn spaces`, the API and /metrics. */
export interface SpaceBuildStatus {
  space: string;
  /**
   * `embedding`: filling the space from the stored text; `indexing`: building and saving its vector
   * indexes in the pool; `waiting`: complete and indexed, kept current, not asked to activate;
   * `activated`: serving; `stopped`: the space was dropped or the engine closed; `failed`: it stopped on an
   * error (`lastError`), and the writer starts it again after a pause.
   */
  phase: 'embedding' | 'indexing' | 'waiting' | 'activated' | 'stopped' | 'failed';
  /** The embedder's last error, cleared by its next success (the build retries with backoff). */
  lastError: string | null;
}

export interface SpaceBuilderDeps {
  store: MemoryStore;
  dataDir: string;
  pool: ComputePool | null;
  opts: EngineOptions;
  log: EngineLog;
  /**
   * Called in the same turn as the activation's transaction, with the space's loaded indexes: the engine
   * serves from them at once, with no reload and no search ever missing its vector leg. `settled` resolves
   * once the build's last pass has stored and applied its vectors (one may still be on the pool): the
   * engine's own pipeline writes into the space only after, so that no vector it applies comes before an
   * older one (an index skips a vector older than what it applied last in its namespace).
   */
  onActivated(
    space: SpaceInfo,
    embedder: Embedder,
    vectors: VectorIndexManager,
    settled: Promise<void>,
  ): void;
}

export const DEFAULT_PREVIOUS_SPACE_GRACE_MS = 3_600_000;

/**
 * Memories per embedder call of a build (and of a keeper), and how many memories written in the last moments
 * an activation tolerates still missing: the engine's batch size, 512 unless set. Measured beside a loaded
 * server (bench/RESULTS.md): 128 was no kinder to search latency and slower.
 */
export function buildBatchSize(opts: EngineOptions): number {
  return opts.embedBatchSize ?? 512;
}

export function previousSpaceGraceMs(opts: EngineOptions): number {
  return opts.previousSpaceGraceMs ?? DEFAULT_PREVIOUS_SPACE_GRACE_MS;
}

/** An embedder on the pool when it is the built-in (CPU-bound) one; a remote one waits on the network. */
export function poolEmbedder(embedder: Embedder, spec: string, pool: ComputePool | null): Embedder {
  const local = spec === 'hash' || spec.startsWith('hash:');
  return local && pool ? new OffThreadEmbedder(embedder, spec, pool) : embedder;
}

/**
 * How a build (or a keeper of the previous space) runs its passes: a built-in embedder's whole pass, its
 * vectors stored too, on the pool (a reindex stored 100k vectors on the serving thread before: a third of
 * that thread during its embedding phase, and searches' p50 rose by half), `storeSlice` per transaction so
 * a write of the serving thread waits for one slice at most.
 */
export function buildPipelineOptions(
  deps: Pick<SpaceBuilderDeps, 'store' | 'pool' | 'opts'>,
): Partial<EmbeddedPipelineOptions> {
  return {
    embedBatchSize: buildBatchSize(deps.opts),
    storeSlice: storeSliceOf(deps.opts),
    ...(deps.pool && {
      offThreadPass: offThreadPass(deps.pool, deps.store.embeddings.offThreadWriterPath()),
    }),
  };
}

/** The vector indexes of a space being built, as their writer: built in the pool, saved to disk. */
export function spaceIndexes(
  deps: Pick<SpaceBuilderDeps, 'store' | 'dataDir' | 'pool' | 'opts' | 'log'>,
  space: SpaceInfo,
): VectorIndexManager {
  return new VectorIndexManager({
    dir: join(deps.dataDir, 'vectors'),
    space,
    embeddings: deps.store.embeddings,
    keys: deps.store,
    builder: deps.pool ? workerIndexBuilder(deps.pool) : undefined,
    exactThreshold: deps.opts.exactThreshold,
    // After the switch these indexes serve searches: they wait for a build only where the engine's own do
    // (one-shot CLI processes); buildAndSave awaits every namespace's build either way.
    waitForBuild: deps.opts.waitForIndex ?? false,
    unbuiltSearch: deps.opts.unbuiltSearch,
    // The pool's one thread (on 2 cores) is busy embedding the new space: graphs built early would only
    // interleave with it and be merged again and again. buildAndSave builds each once, at the end.
    loadAfterWrites: Number.POSITIVE_INFINITY,
    role: 'writer',
    hnsw: deps.opts.hnsw,
    buildThreads: deps.opts.buildThreads,
    log: deps.log,
  });
}

/**
 * Loads or builds every namespace's index and saves them: after the switch a fresh process loads files.
 * A namespace small enough for exact search has no file to build.
 */
export async function buildAndSave(
  vectors: VectorIndexManager,
  store: MemoryStore,
  stopped: () => boolean = () => false,
): Promise<void> {
  for (const ns of store.namespaces()) {
    if (stopped()) return;
    await vectors.warm(ns.namespace);
  }
  await vectors.flush();
}

/**
 * The writer's background job that fills one `building` embedding space beside the active one: a reindex.
 * - It embeds every live memory from the stored text, resuming from the space's cursor (a kill -9 loses
 *   nothing), and keeps following new writes, so a write made during the reindex gets a vector in both
 *   spaces.
 * - A built-in (CPU-bound) embedder runs on the compute pool, and every vector index of the new space is
 *   built there too and saved to disk: the serving thread only stores batches and answers queries.
 * - Only then, and only if asked (`activateWhenReady`), it activates the space in one transaction and
 *   hands its loaded indexes to the engine. Other processes load the saved files on their next refresh.
 * Whichever process holds the writer role runs it, so a reindex asked for by a CLI beside a server runs
 * in the server, and one whose process died resumes in the next writer.
 */
export class SpaceBuilder {
  readonly status: SpaceBuildStatus;
  private readonly pipeline: EmbeddedPipeline;
  private readonly vectors: VectorIndexManager;
  private stopped = false;
  private wake: (() => void) | null = null;
  private changed = false;
  private readonly done: Promise<void>;
  /** The build's pipeline closing after an activation; stop() waits for it. */
  private closing: Promise<void> = Promise.resolve();

  constructor(
    private readonly deps: SpaceBuilderDeps,
    private readonly space: SpaceInfo,
    private readonly embedder: Embedder,
    spec: string,
  ) {
    this.status = { space: space.id, phase: 'embedding', lastError: null };
    const worker = poolEmbedder(embedder, spec, deps.pool);
    this.vectors = spaceIndexes(deps, space);
    this.pipeline = new EmbeddedPipeline(
      deps.store,
      deps.store.embeddings,
      { apply: (entries) => this.vectors.apply(entries) },
      worker,
      space,
      buildPipelineOptions(deps),
    );
    this.done = this.run().catch((err: Error) => {
      this.status.lastError = err.message;
      if (this.status.phase !== 'activated') this.status.phase = 'failed';
      deps.log('error', 'reindex stopped on an error; the writer starts it again in a minute', {
        space: space.id,
        error: err.message,
      });
    });
  }

  get spaceId(): string {
    return this.space.id;
  }

  /** The build stopped on an error: the supervisor replaces it (after a pause). */
  get failed(): boolean {
    return this.status.phase === 'failed';
  }

  /** New writes landed (in this process or another), or the request changed: look again. */
  kick(): void {
    this.changed = true;
    this.pipeline.kick();
    this.wake?.();
  }

  /**
   * Stops the build (the engine closes, or the space was activated or dropped by another process); what
   * it stored is kept. With `discard` (the space was dropped) its vector index files are removed instead of
   * saved, after any build under way in the pool has finished writing them.
   */
  async stop(opts: { discard?: boolean } = {}): Promise<void> {
    if (!this.stopped) {
      this.stopped = true;
      if (this.status.phase !== 'activated') this.status.phase = 'stopped';
      this.wake?.();
      await this.pipeline.close();
    }
    await this.done;
    await this.closing;
    if (this.status.phase === 'activated') return; // the engine serves from these indexes now
    if (!opts.discard) return this.vectors.close();
    await this.vectors.release(() => true, false);
    rmSync(VectorIndexManager.spaceDir(join(this.deps.dataDir, 'vectors'), this.space.id), {
      recursive: true,
      force: true,
    });
  }

  /**
   * Another process activated this space (`cairn spaces activate`) while it was built here: the engine
   * serves from these indexes rather than opening a second writer on the same files.
   */
  handOver(active: SpaceInfo): void {
    if (this.status.phase === 'activated') return;
    this.status.phase = 'activated';
    this.stopped = true;
    this.wake?.();
    this.closing = this.pipeline.close();
    this.deps.onActivated(active, this.embedder, this.vectors, this.closing);
  }

  private async run(): Promise<void> {
    const { store, log } = this.deps;
    log('info', 'reindex started', { ...store.spaces.progress(this.space.id) });
    let saved = false;
    while (!this.stopped) {
      this.status.phase = 'embedding';
      this.changed = false;
      await this.drain();
      if (this.stopped) return;
      let now = store.spaces.getSpace(this.space.id);
      if (now?.state !== 'building' || now.active) return; // dropped or activated elsewhere
      // Indexes are built and saved once, and again only right before an activation: a space kept waiting
      // under a stream of writes must not rewrite its graph files on every one (apply merges by itself).
      if (!saved || now.activateWhenReady) {
        this.status.phase = 'indexing';
        // This process serves from these very indexes after the switch; other processes load the files.
        await buildAndSave(this.vectors, store, () => this.stopped);
        saved = true;
        if (this.stopped) return;
        now = store.spaces.getSpace(this.space.id);
        if (now?.state !== 'building' || now.active) return;
      }
      if (now.activateWhenReady) {
        const outcome = this.tryActivate();
        if (outcome === 'activated') return;
        // Memories were stored since the drain (perhaps by another process): embed them, then try again.
        if (outcome === 'incomplete') continue;
      }
      if (this.changed) continue; // writes landed while indexing: embed them, then try again
      this.status.phase = 'waiting';
      await new Promise<void>((resolve) => {
        this.wake = resolve;
      });
      this.wake = null;
    }
  }

  /** Embeds until the space has a vector for every memory stored so far, retrying a failing embedder. */
  private async drain(): Promise<void> {
    const status = this.pipeline.status;
    const watch = setInterval(() => {
      this.status.lastError = status.lastError;
    }, 500);
    try {
      await this.pipeline.drain();
    } finally {
      clearInterval(watch);
      this.status.lastError = status.lastError;
    }
  }

  private tryActivate(): 'activated' | 'incomplete' | 'refused' {
    const { store, log } = this.deps;
    let active: SpaceInfo;
    try {
      // The few memories written since the drain are embedded into the new space by the engine's own
      // pipeline right after the switch, like any fresh write; waiting for zero could wait forever.
      active = store.spaces.activate(this.space.id, {
        maxMissing: buildBatchSize(this.deps.opts),
        keepPreviousMs: previousSpaceGraceMs(this.deps.opts),
      });
    } catch (err) {
      // Incomplete: memories were stored since the drain. Any other refusal (too many failures) is said.
      if (err instanceof CairnError && err.data.reason === 'incomplete') return 'incomplete';
      this.status.lastError = (err as Error).message;
      log('warn', 'reindex complete but not activated', {
        space: this.space.id,
        error: (err as Error).message,
      });
      return 'refused';
    }
    this.status.phase = 'activated';
    this.stopped = true;
    this.closing = this.pipeline.close();
    this.deps.onActivated(active, this.embedder, this.vectors, this.closing);
    log('info', 'reindex activated', { ...store.spaces.progress(this.space.id) });
    return 'activated';
  }
}
