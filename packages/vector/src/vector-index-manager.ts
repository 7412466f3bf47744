import {
  assertDimensions,
  type EmbeddingSpace,
  type SearchFilters,
  type VectorLeg,
  type VectorLegResult,
} from '@cairn/core';
import { GenerationFiles } from './generation-files.js';
import { GraphFileQueries } from './graph-file-queries.js';
import { GraphPersistence } from './graph-persistence.js';
import { IndexAuditor } from './index-audit.js';
import { LoadOnWrites } from './load-on-writes.js';
import { NamespaceLoader } from './namespace-loader.js';
import {
  type IndexStatus,
  RETRY_BUILD_AFTER_MS,
  type Slot,
  slotStatus,
  slotUnmerged,
} from './namespace-slot.js';
import { applyVector, dropVector, type NamespaceState, sizeOf } from './namespace-state.js';
import { nearestOffThread } from './neighbor-batch.js';
import { StoredVectors } from './stored-vectors.js';
import { Tombstones } from './tombstones.js';
import { emptyIndexFileBytes, releaseIndexSoon } from './usearch-index.js';
import {
  type ResolvedVectorIndexOptions,
  resolveVectorIndexOptions,
  type VectorIndexOptions,
} from './vector-index-options.js';
import { searchLoaded, type VectorSearchContext } from './vector-search.js';

/**
 * A search says its vector leg covered only part of the namespace (`unembedded`) once at least this many of
 * its live memories, and this share of them, have no vector yet: the few a stream of writes keeps pending
 * for milliseconds are not worth a flag that would flicker.
 */
const UNEMBEDDED_MIN = 16;
const UNEMBEDDED_SHARE = 0.1;

/**
 * The vector leg: one index per namespace and embedding space, loaded lazily. Small namespaces are held as
 * an exact matrix; larger ones as a usearch HNSW graph file plus an exact delta of newer vectors. Embeddings
 * in SQLite are the source of truth: a missing, stale or damaged file is rebuilt from them, and the rebuild
 * is logged.
 *
 * This class holds each namespace's lifecycle (unloaded → loading or building → exact or graph, promoted,
 * merged, audited, released) and the writes that feed it. The steps live beside it: `vector-search.ts`
 * answers a query over a loaded namespace, `namespace-loader.ts` loads and builds, `delta-merge.ts` merges
 * a delta into a new generation, `index-audit.ts` finds and adds stored vectors an index lacks,
 * `load-on-writes.ts` starts a writer's loads while a bulk ingest stores, `stored-vectors.ts` reads stored
 * vectors by key, `graph-persistence.ts` merges deltas into files and lets graphs go.
 */
export class VectorIndexManager implements VectorLeg {
  readonly space: EmbeddingSpace;
  private readonly slots = new Map<string, Slot>();
  /** Set by `close`: a warm-up still mapping files stops. */
  private closed = false;
  private readonly auditor: IndexAuditor;
  private readonly loadOnWrites: LoadOnWrites;
  private readonly files: GenerationFiles;
  private readonly fileQueries: GraphFileQueries;
  private readonly loader: NamespaceLoader;
  private readonly tombstones: Tombstones;
  private readonly searchContext: VectorSearchContext;
  private readonly stored: StoredVectors;
  private readonly persistence: GraphPersistence;
  private readonly opts: ResolvedVectorIndexOptions;

  constructor(opts: VectorIndexOptions) {
    this.space = opts.space;
    this.opts = resolveVectorIndexOptions(opts);
    this.stored = new StoredVectors(this.opts.embeddings, this.space, this.opts.vectorCacheEntries);
    // Read now, so that no release after a merge saves the empty file on this thread (see releaseIndexSoon).
    // A temporary folder that refuses it costs only memory, as a failed release does: it must not stop the open.
    try {
      emptyIndexFileBytes();
    } catch {
      // Each release tries again, and frees nothing early when it cannot.
    }
    this.files = new GenerationFiles(
      this.opts.dir,
      this.space,
      this.opts.hnsw,
      this.opts.builder,
      this.opts.buildThreads,
    );
    this.fileQueries = new GraphFileQueries(
      this.files,
      this.space,
      this.opts.hnsw,
      this.opts.builder,
      this.opts.buildThreads,
    );
    this.tombstones = new Tombstones(this.opts.keys);
    this.persistence = new GraphPersistence(this.slots, {
      files: this.files,
      tombstones: this.tombstones,
      role: this.opts.role,
      mergeThreshold: this.opts.mergeThreshold,
      log: this.opts.log,
    });
    this.loader = new NamespaceLoader({
      space: this.space,
      embeddings: this.opts.embeddings,
      tombstones: this.tombstones,
      files: this.files,
      role: this.opts.role,
      maxCatchUp: this.opts.maxCatchUp,
      log: this.opts.log,
      apply: (state, key, writeSeq, vector) => this.applyOne(state, key, writeSeq, vector),
    });
    this.auditor = new IndexAuditor({
      space: this.space,
      embeddings: this.opts.embeddings,
      current: (namespace) => this.slots.get(namespace)?.ready,
      // An older write: at the graph's watermark, so a drain merges it rather than leave it for a load's
      // catch-up, which reads only what is newer (see `carriesDelta`). It does not move any watermark.
      add: (state, key, vector) =>
        this.applyOne(state, key, state.kind === 'hnsw' ? state.graphWatermark : state.watermark, vector),
      inFile: this.fileQueries.keysMissing,
      // A writer merges the additions into its next generation.
      added: (namespace) => {
        const ready = this.slots.get(namespace)?.ready;
        const due = ready?.kind === 'hnsw' && ready.delta.size >= this.opts.mergeThreshold;
        if (due && this.opts.role === 'writer') this.persistence.startMerge(namespace, ready);
      },
      log: this.opts.log,
    });
    this.loadOnWrites = new LoadOnWrites(this.opts.role === 'writer' ? this.opts.loadAfterWrites : Infinity, {
      isSmall: (namespace) => this.isSmall(namespace),
      load: (namespace) =>
        this.acquire(namespace, false).then((r) => (r.ok ? r.value : this.slots.get(namespace)?.building)),
      log: this.opts.log,
    });
    this.searchContext = {
      dimensions: this.space.dimensions,
      keys: this.opts.keys,
      vectorsFor: (namespace, keys) => this.vectorsFor(namespace, keys),
    };
  }

  /** The folder of one embedding space's index files under `dir` (for deleting a dropped space's files). */
  static spaceDir(dir: string, spaceId: string): string {
    return GenerationFiles.spaceDir(dir, spaceId);
  }

  async searchVector(req: {
    namespace: string;
    vector: Float32Array;
    filters: SearchFilters;
    limit: number;
  }): Promise<VectorLegResult> {
    assertDimensions(req.vector, this.space, 'query vector');
    const ready = await this.acquire(req.namespace, this.opts.waitForBuild, this.opts.unbuiltSearch);
    if (!ready.ok) return { status: 'unavailable', reason: ready.reason };
    const res = searchLoaded(ready.value, req, this.searchContext);
    const c = this.opts.embeddings.coverage?.(this.space.id, req.namespace);
    if (res.status !== 'ok' || !c) return res;
    const missing = c.live - c.current;
    // A write's vector follows it by milliseconds: only a backlog worth saying so is reported.
    return missing >= UNEMBEDDED_MIN && missing >= c.live * UNEMBEDDED_SHARE
      ? { ...res, unembedded: { missing, live: c.live } }
      : res;
  }

  /**
   * Background jobs' batched searches (`neighbor-batch.ts`): a graph's on the pool, an exact namespace's
   * here in i8, a group at a time; null: `searchVector`, one at a time.
   */
  async nearestOffThread(
    namespace: string,
    vectors: readonly Float32Array[],
    k: number,
  ): Promise<Array<Array<{ key: number; cosine: number }> | null> | null> {
    const searchFile = this.fileQueries.searcher(namespace);
    for (const v of vectors) assertDimensions(v, this.space, 'query vector');
    const ready = await this.acquire(namespace, this.opts.waitForBuild, this.opts.unbuiltSearch);
    if (!ready.ok) return null;
    const current = () => this.slots.get(namespace)?.ready;
    const ask = () => nearestOffThread({ current, searchFile, keys: this.opts.keys }, namespace, vectors, k);
    // Null sends the caller to `searchVector`, one at a time on this thread: said, so a pool that keeps
    // failing is seen rather than paid for quietly.
    const fallBack = (err: Error) => {
      this.opts.log('warn', 'a batch of neighbour searches failed; searched one at a time instead', {
        namespace,
        error: err.message,
      });
      return null;
    };
    return ask().catch((err: Error) => {
      // A reader's generation is deleted once the writer has published the next: map that one, ask again.
      if (this.opts.role !== 'reader') return fallBack(err);
      this.refresh();
      return ask().catch(fallBack);
    });
  }

  /** The stored vectors of `keys` in `namespace` (keys without one are left out); see `StoredVectors.read`. */
  vectorsFor(
    namespace: string,
    keys: readonly number[],
    opts: { keep?: boolean } = {},
  ): Map<number, Float32Array> {
    return this.stored.read(namespace, keys, this.slots.get(namespace)?.ready, opts);
  }

  /**
   * Applies newly stored embeddings to namespaces whose index is loaded (a memcpy each: exact matrices
   * and deltas, never a graph insert). Unloaded namespaces catch up from SQLite when next loaded.
   */
  apply(
    entries: ReadonlyArray<{ namespace: string; key: number; writeSeq: number; vector: Float32Array }>,
  ): void {
    for (const e of entries) {
      this.stored.forget(e.key);
      const slot = this.slots.get(e.namespace);
      if (!slot) this.loadOnWrites.note(e.namespace);
      const ready = slot?.ready;
      if (!ready || e.writeSeq <= ready.watermark) continue;
      this.applyOne(ready, e.key, e.writeSeq, e.vector);
      if (this.opts.role === 'reader') continue;
      if (ready.kind === 'exact' && ready.matrix.size > this.opts.exactThreshold * 1.25 && !slot.standIn)
        this.promote(e.namespace);
      if (ready.kind === 'hnsw' && ready.delta.size >= this.opts.mergeThreshold)
        this.persistence.startMerge(e.namespace, ready);
    }
  }

  /**
   * Memories deleted since the last look, by this process or any other: their vectors leave the loaded
   * indexes now (see `forget`). Unloaded namespaces drop theirs when loaded (see `Tombstones`).
   */
  forgetDeletes(): void {
    for (const [namespace, keys] of this.tombstones.takeNew()) this.forget(namespace, keys);
  }

  /** Deleted memories: their vectors leave the loaded index now, and its graph file at the next merge. */
  forget(namespace: string, keys: readonly number[]): void {
    const slot = this.slots.get(namespace);
    if (slot?.building) slot.forgottenWhileBuilding = [...(slot.forgottenWhileBuilding ?? []), ...keys];
    for (const key of keys) {
      this.stored.forget(key);
      if (slot?.ready) dropVector(slot.ready, key);
    }
  }

  /** A built or newly mapped index takes over the deletes its predecessor knew of and the build missed. */
  private takeOverDrops(namespace: string, slot: Slot, before: NamespaceState | undefined): void {
    const ready = slot.ready!;
    const keys = [...(slot.forgottenWhileBuilding ?? []), ...(before?.kind === 'hnsw' ? before.dropped : [])];
    slot.forgottenWhileBuilding = undefined;
    if (keys.length === 0) return;
    // A key written again since its delete is live, and its new vector is what the index holds.
    const live = this.opts.keys.allowedKeys(namespace, keys, {});
    for (const key of keys) if (!live.has(key)) dropVector(ready, key);
  }

  /**
   * Turns loading on writes on or off, e.g. when a reindex's indexes (built with it off) start serving.
   * @param n vectors per namespace, as `loadAfterWrites`; omitted: `mergeThreshold`
   */
  setLoadAfterWrites(n: number = this.opts.mergeThreshold): void {
    this.loadOnWrites.setThreshold(this.opts.role === 'writer' ? n : Infinity);
  }

  /** Loads (or builds) a namespace's index now and waits for it: a namespace that needs a graph has one. */
  async warm(namespace: string): Promise<void> {
    let r = await this.acquire(namespace, true);
    // A failed load or build (one started in the background, say) is forgotten by acquire: try afresh once.
    if (!r.ok && !this.slots.has(namespace)) r = await this.acquire(namespace, true);
    if (!r.ok) throw new Error(r.reason);
    // An exact matrix standing in for a missing graph (see `unbuiltSearch`) is built into one now.
    const slot = this.slots.get(namespace);
    if (slot?.standIn) {
      if (!slot.building) {
        slot.failedAt = undefined;
        this.promote(namespace);
      }
      try {
        await slot.building;
      } catch (err) {
        throw new Error(
          `vector index for namespace "${namespace}" failed to build: ${(err as Error).message}`,
        );
      }
    }
  }

  /**
   * Maps the saved graphs of `namespaces` not loaded yet, one a turn, so their first searches do not pay
   * for it (a new server's first search at a million: 0.35 s). Nothing else: a namespace without a usable
   * saved graph (none, stale, or searched exactly) loads, or builds, when first searched.
   */
  async mapSaved(namespaces: Iterable<string>): Promise<void> {
    for (const namespace of namespaces) {
      if (this.closed) return;
      if (this.slots.has(namespace) || !this.files.sidecar(namespace)) continue;
      const slot: Slot = {};
      if (!this.isSmall(namespace) && this.mapFile(namespace, slot, 'scan')) this.slots.set(namespace, slot);
      await new Promise((resolve) => setImmediate(resolve));
    }
  }

  /** Of the namespace's `stored` vectors, how many a fresh process would not find saved (`slotUnmerged`). */
  unmerged(namespace: string, stored: number): number {
    const saved = () => this.files.sidecar(namespace)?.count ?? null;
    return slotUnmerged(this.slots.get(namespace), stored, this.opts, saved);
  }

  /** Per-namespace index state, for stats. */
  status(namespace: string): IndexStatus {
    return slotStatus(this.slots.get(namespace), () =>
      this.loader.sizeOnLoad(namespace, this.opts.exactThreshold),
    );
  }

  /**
   * A reader's catch-up with the writer: maps graph generations published since it loaded, and applies
   * vectors stored since (exactly, in memory). Cheap when nothing changed: one indexed query per loaded
   * namespace.
   */
  refresh(): void {
    for (const [namespace, slot] of this.slots) {
      const ready = slot.ready;
      if (!ready) continue;
      const side = this.files.sidecar(namespace);
      const newer =
        side &&
        (ready.kind === 'exact'
          ? ready.matrix.size > this.opts.exactThreshold
          : side.generation > ready.generation);
      if (newer) {
        const loaded = this.loader.loadFile(namespace, true, 'scan');
        if (loaded) {
          slot.ready = loaded;
          // The writer saved this generation before it learned of deletes this process already knows.
          this.takeOverDrops(namespace, slot, ready);
          if (ready.kind === 'hnsw') void releaseIndexSoon(ready.graph);
          // Which vectors the writer changed since is not known here: none of the cached ones is trusted.
          this.stored.clear();
          continue;
        }
      }
      this.loader.catchUpSync(namespace, ready);
    }
  }

  /**
   * Checks that each loaded namespace holds a vector for every key stored for it, and adds the ones it
   * lacks: a graph file saved by a version that dropped vectors stored out of change order, or any other
   * hole. The embeddings in SQLite are the truth; this makes the index converge to them whatever went
   * wrong. A writer merges the additions into its next generation. Returns how many were added.
   */
  async audit(): Promise<number> {
    let added = 0;
    for (const namespace of [...this.slots.keys()]) added += await this.auditor.audit(namespace);
    return added;
  }

  /**
   * Merges every pending delta into its graph file, but a small one whose vectors a load catches up (see
   * `carriesDelta`), and waits for builds and merges under way.
   */
  flush(): Promise<void> {
    return this.persistence.flush();
  }

  /** The periodic upkeep's merges (see `worthMerging`); `flush` merges all but a carried delta. */
  persistDue(): Promise<void> {
    return this.persistence.persistDue();
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.flush();
    const released = [...this.slots.values()].map((slot) => this.persistence.dispose(slot));
    this.slots.clear();
    this.loadOnWrites.clear();
    await Promise.all(released);
  }

  /**
   * Lets go of some namespaces (their index shard now belongs to another writer): pending deltas are
   * merged and saved first when `save` (a small one is left to the next writer's catch-up, as a close
   * leaves it: see `carriesDelta`), then the namespaces are forgotten, so this process writes none of
   * their files again. They load afresh (files, then SQLite) if they come back.
   */
  async release(namespaces: (namespace: string) => boolean, save: boolean): Promise<void> {
    const mine = [...this.slots.entries()].filter(([ns]) => namespaces(ns));
    await Promise.allSettled(mine.map(([, s]) => s.building).filter(Boolean));
    for (const [ns, slot] of mine) {
      if (save) await this.persistence.save(ns, slot);
      this.slots.delete(ns);
      await this.persistence.dispose(slot);
    }
  }

  private applyOne(state: NamespaceState, key: number, writeSeq: number, vector: Float32Array): void {
    this.stored.forget(key);
    applyVector(state, key, writeSeq, vector);
  }

  private async acquire(
    namespace: string,
    wait: boolean,
    unbuilt: 'build' | 'exact' = 'build',
  ): Promise<{ ok: true; value: NamespaceState } | { ok: false; reason: string }> {
    let slot = this.slots.get(namespace);
    if (!slot) {
      slot = {};
      this.slots.set(namespace, slot);
      try {
        this.startLoad(namespace, slot, unbuilt);
      } catch (err) {
        // An empty slot would answer "being built" forever: forget it so the next call tries again.
        this.slots.delete(namespace);
        throw err;
      }
    }
    if (slot.ready) return { ok: true, value: slot.ready };
    if (slot.building && wait) {
      try {
        return { ok: true, value: await slot.building };
      } catch (err) {
        // Forget the failure so the next search starts a fresh attempt.
        if (this.slots.get(namespace) === slot) this.slots.delete(namespace);
        return {
          ok: false,
          reason: `vector index for namespace "${namespace}" failed to build: ${(err as Error).message}`,
        };
      }
    }
    if (slot.error) {
      this.slots.delete(namespace);
      return {
        ok: false,
        reason: `vector index for namespace "${namespace}" failed to load: ${slot.error.message}`,
      };
    }
    return { ok: false, reason: `vector index for namespace "${namespace}" is being built` };
  }

  private startLoad(namespace: string, slot: Slot, unbuilt: 'build' | 'exact'): void {
    const count = this.countUpToExact(namespace);
    if (count <= this.opts.exactThreshold) {
      slot.ready = this.loader.loadExact(namespace, count);
      return;
    }
    const { embeddings } = this.opts;
    const scan = this.opts.role === 'reader' || unbuilt === 'exact';
    if (this.mapFile(namespace, slot, scan ? 'scan' : 'build')) return;
    // A reader never writes a file: until the writer publishes a graph it serves this namespace exactly
    // (sized by its whole count: `count` above stopped at the threshold). So does a one-shot search.
    if (scan) {
      const started = Date.now();
      slot.ready = this.loader.loadExact(namespace, embeddings.count(this.space.id, namespace));
      slot.standIn = this.opts.role === 'writer';
      if (slot.standIn)
        this.opts.log('info', 'vector index not built: searching the stored vectors exactly', {
          namespace,
          space: this.space.id,
          vectors: sizeOf(slot.ready),
          ms: Date.now() - started,
        });
    } else this.runBuild(namespace, slot);
  }

  /**
   * The namespace's vectors, counted no further than one past `exactThreshold`: only whether it is small
   * matters to a load (a cold search at 1M spent 0.17 s counting it whole).
   */
  private countUpToExact(namespace: string): number {
    const { embeddings, exactThreshold } = this.opts;
    return (
      embeddings.countUpTo?.(this.space.id, namespace, exactThreshold + 1) ??
      embeddings.count(this.space.id, namespace)
    );
  }

  private isSmall(namespace: string): boolean {
    return this.countUpToExact(namespace) <= this.opts.exactThreshold;
  }

  /** Maps the namespace's saved file into `slot`; false when it has no usable one (the loader logs why). */
  private mapFile(namespace: string, slot: Slot, otherwise: 'scan' | 'build'): boolean {
    const loaded = this.loader.loadFile(namespace, true, otherwise);
    if (!loaded) return false;
    slot.ready = loaded;
    // A file is trusted for what its watermark covers; check that claim off the query's path.
    if (this.opts.auditOnLoad) setImmediate(() => this.auditor.auditSoon(namespace));
    if (loaded.kind === 'hnsw' && loaded.delta.size >= this.opts.mergeThreshold)
      this.persistence.startMerge(namespace, loaded);
    return true;
  }

  /** Rebuilds a namespace's graph from SQLite on the builder, then maps it. Searches meanwhile are degraded. */
  private runBuild(namespace: string, slot: Slot): void {
    slot.building = this.loader.build(namespace);
    slot.building.then(
      (ready) => {
        // Vectors stored after the last catch-up page were skipped by apply() (no ready index yet):
        // pick them up in the same turn that makes the index visible, so none can slip between.
        this.loader.catchUpSync(namespace, ready);
        const before = slot.ready;
        slot.ready = ready;
        slot.building = undefined;
        slot.standIn = false;
        this.takeOverDrops(namespace, slot, before);
        if (ready.kind === 'hnsw' && ready.delta.size >= this.opts.mergeThreshold)
          this.persistence.startMerge(namespace, ready);
      },
      (err: Error) => {
        slot.error = err;
        slot.failedAt = Date.now();
        slot.building = undefined;
        this.opts.log('error', 'vector index build failed', { namespace, error: err.message });
      },
    );
  }

  /** Upgrades an exact namespace that outgrew the threshold to HNSW, serving exactly until it is ready. */
  private promote(namespace: string): void {
    const slot = this.slots.get(namespace);
    if (!slot || slot.building) return;
    if (slot.failedAt !== undefined && Date.now() - slot.failedAt < RETRY_BUILD_AFTER_MS) return;
    const current = slot.ready;
    this.runBuild(namespace, slot);
    slot.ready = current;
  }
}
