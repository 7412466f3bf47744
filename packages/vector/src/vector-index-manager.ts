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
import { IndexSlots } from './index-slots.js';
import { LoadOnWrites } from './load-on-writes.js';
import { NamespaceLoader } from './namespace-loader.js';
import { type IndexStatus, type Slot, slotStatus, slotUnmerged } from './namespace-slot.js';
import { applyVector, dropVector, type NamespaceState } from './namespace-state.js';
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
 * This class is the leg's face: searches, the writes and deletes that feed loaded namespaces, a reader's
 * refresh, audits, saves and releases. The steps live beside it: `index-slots.ts` takes a namespace from
 * unloaded to ready (loaded exact, mapped, built, promoted), `vector-search.ts` answers a query over a
 * loaded namespace, `namespace-loader.ts` loads and builds, `delta-merge.ts` merges
 * a delta into a new generation, `index-audit.ts` finds and adds stored vectors an index lacks,
 * `load-on-writes.ts` starts a writer's loads while a bulk ingest stores, `stored-vectors.ts` reads stored
 * vectors by key, `graph-persistence.ts` merges deltas into files and lets graphs go.
 */
export class VectorIndexManager implements VectorLeg {
  readonly space: EmbeddingSpace;
  private readonly slots = new Map<string, Slot>();
  /** How each slot becomes ready (load, map, build, promote). */
  private readonly loads: IndexSlots;
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
    this.loads = new IndexSlots({
      slots: this.slots,
      space: this.space,
      opts: this.opts,
      files: this.files,
      loader: this.loader,
      persistence: this.persistence,
      auditor: this.auditor,
      log: this.opts.log,
    });
    this.loadOnWrites = new LoadOnWrites(this.opts.role === 'writer' ? this.opts.loadAfterWrites : Infinity, {
      isSmall: (namespace) => this.loads.isSmall(namespace),
      load: (namespace) =>
        this.loads
          .acquire(namespace, false)
          .then((r) => (r.ok ? r.value : this.slots.get(namespace)?.building)),
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
    const ready = await this.loads.acquire(req.namespace, this.opts.waitForBuild, this.opts.unbuiltSearch);
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
    const ready = await this.loads.acquire(namespace, this.opts.waitForBuild, this.opts.unbuiltSearch);
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
        this.loads.promote(e.namespace);
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

  /**
   * Turns loading on writes on or off, e.g. when a reindex's indexes (built with it off) start serving.
   * @param n vectors per namespace, as `loadAfterWrites`; omitted: `mergeThreshold`
   */
  setLoadAfterWrites(n: number = this.opts.mergeThreshold): void {
    this.loadOnWrites.setThreshold(this.opts.role === 'writer' ? n : Infinity);
  }

  /** Loads (or builds) a namespace's index now and waits for it: a namespace that needs a graph has one. */
  warm(namespace: string): Promise<void> {
    return this.loads.warm(namespace);
  }

  /**
   * Maps the saved graphs of `namespaces` not loaded yet, one a turn, so their first searches do not pay
   * for it (a new server's first search at a million: 0.35 s). Nothing else: a namespace without a usable
   * saved graph (none, stale, or searched exactly) loads, or builds, when first searched.
   */
  mapSaved(namespaces: Iterable<string>): Promise<void> {
    return this.loads.mapSaved(namespaces);
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
          this.loads.takeOverDrops(namespace, slot, ready);
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

  /**
   * The periodic upkeep: the early loads a namespace that grew past exact search still waits for (see
   * `LoadOnWrites.sweep`), and the merges (see `worthMerging`); `flush` merges all but a carried delta.
   */
  persistDue(): Promise<void> {
    this.loadOnWrites.sweep();
    return this.persistence.persistDue();
  }

  async close(): Promise<void> {
    this.loads.closed = true;
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
}
