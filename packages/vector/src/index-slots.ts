import type { EmbeddingSpace } from '@cairn/core';
import type { GenerationFiles } from './generation-files.js';
import type { GraphPersistence } from './graph-persistence.js';
import type { IndexAuditor } from './index-audit.js';
import type { NamespaceLoader } from './namespace-loader.js';
import { RETRY_BUILD_AFTER_MS, type Slot } from './namespace-slot.js';
import { dropVector, type NamespaceState, sizeOf } from './namespace-state.js';
import type { LogFn } from './sources.js';
import type { ResolvedVectorIndexOptions } from './vector-index-options.js';

/** What a namespace's slot needs to become ready: how to load, build, merge and audit it. */
export interface IndexSlotsDeps {
  /** The table itself, shared with the manager and its persistence. */
  slots: Map<string, Slot>;
  space: EmbeddingSpace;
  opts: ResolvedVectorIndexOptions;
  files: GenerationFiles;
  loader: NamespaceLoader;
  persistence: GraphPersistence;
  auditor: IndexAuditor;
  log: LogFn;
}

/**
 * Every namespace's slot, and how one becomes ready: read whole into an exact matrix when small, mapped
 * from its saved graph, built on the builder (searches meanwhile degraded or, for a one-shot search or a
 * reader, served exactly), promoted from exact to a graph when it outgrows the threshold, and forgotten
 * after a failure so that the next search tries afresh. What a loaded slot serves and how writes reach it
 * are `VectorIndexManager`'s.
 */
export class IndexSlots {
  private readonly map: Map<string, Slot>;
  /** Set by the manager's close: a warm-up still mapping files stops. */
  closed = false;

  constructor(private readonly d: IndexSlotsDeps) {
    this.map = d.slots;
  }

  /** A built or newly mapped index takes over the deletes its predecessor knew of and the build missed. */
  takeOverDrops(namespace: string, slot: Slot, before: NamespaceState | undefined): void {
    const ready = slot.ready!;
    const keys = [...(slot.forgottenWhileBuilding ?? []), ...(before?.kind === 'hnsw' ? before.dropped : [])];
    slot.forgottenWhileBuilding = undefined;
    if (keys.length === 0) return;
    // A key written again since its delete is live, and its new vector is what the index holds.
    const live = this.d.opts.keys.allowedKeys(namespace, keys, {});
    for (const key of keys) if (!live.has(key)) dropVector(ready, key);
  }

  /** Loads (or builds) a namespace's index now and waits for it: a namespace that needs a graph has one. */
  async warm(namespace: string): Promise<void> {
    let r = await this.acquire(namespace, true);
    // A failed load or build (one started in the background, say) is forgotten by acquire: try afresh once.
    if (!r.ok && !this.map.has(namespace)) r = await this.acquire(namespace, true);
    if (!r.ok) throw new Error(r.reason);
    // An exact matrix standing in for a missing graph (see `unbuiltSearch`) is built into one now.
    const slot = this.map.get(namespace);
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
      if (this.map.has(namespace) || !this.d.files.sidecar(namespace)) continue;
      const slot: Slot = {};
      if (!this.isSmall(namespace) && this.mapFile(namespace, slot, 'scan')) this.map.set(namespace, slot);
      await new Promise((resolve) => setImmediate(resolve));
    }
  }

  async acquire(
    namespace: string,
    wait: boolean,
    unbuilt: 'build' | 'exact' = 'build',
  ): Promise<{ ok: true; value: NamespaceState } | { ok: false; reason: string }> {
    let slot = this.map.get(namespace);
    if (!slot) {
      slot = {};
      this.map.set(namespace, slot);
      try {
        this.startLoad(namespace, slot, unbuilt);
      } catch (err) {
        // An empty slot would answer "being built" forever: forget it so the next call tries again.
        this.map.delete(namespace);
        throw err;
      }
    }
    if (slot.ready) return { ok: true, value: slot.ready };
    if (slot.building && wait) {
      try {
        return { ok: true, value: await slot.building };
      } catch (err) {
        // Forget the failure so the next search starts a fresh attempt.
        if (this.map.get(namespace) === slot) this.map.delete(namespace);
        return {
          ok: false,
          reason: `vector index for namespace "${namespace}" failed to build: ${(err as Error).message}`,
        };
      }
    }
    if (slot.error) {
      this.map.delete(namespace);
      return {
        ok: false,
        reason: `vector index for namespace "${namespace}" failed to load: ${slot.error.message}`,
      };
    }
    return { ok: false, reason: `vector index for namespace "${namespace}" is being built` };
  }

  private startLoad(namespace: string, slot: Slot, unbuilt: 'build' | 'exact'): void {
    const count = this.countUpToExact(namespace);
    if (count <= this.d.opts.exactThreshold) {
      slot.ready = this.d.loader.loadExact(namespace, count);
      return;
    }
    const { embeddings } = this.d.opts;
    const scan = this.d.opts.role === 'reader' || unbuilt === 'exact';
    if (this.mapFile(namespace, slot, scan ? 'scan' : 'build')) return;
    // A reader never writes a file: until the writer publishes a graph it serves this namespace exactly
    // (sized by its whole count: `count` above stopped at the threshold). So does a one-shot search.
    if (scan) {
      const started = Date.now();
      slot.ready = this.d.loader.loadExact(namespace, embeddings.count(this.d.space.id, namespace));
      slot.standIn = this.d.opts.role === 'writer';
      if (slot.standIn)
        this.d.log('info', 'vector index not built: searching the stored vectors exactly', {
          namespace,
          space: this.d.space.id,
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
    const { embeddings, exactThreshold } = this.d.opts;
    return (
      embeddings.countUpTo?.(this.d.space.id, namespace, exactThreshold + 1) ??
      embeddings.count(this.d.space.id, namespace)
    );
  }

  isSmall(namespace: string): boolean {
    return this.countUpToExact(namespace) <= this.d.opts.exactThreshold;
  }

  /** Maps the namespace's saved file into `slot`; false when it has no usable one (the loader logs why). */
  private mapFile(namespace: string, slot: Slot, otherwise: 'scan' | 'build'): boolean {
    const loaded = this.d.loader.loadFile(namespace, true, otherwise);
    if (!loaded) return false;
    slot.ready = loaded;
    // A file is trusted for what its watermark covers; check that claim off the query's path.
    if (this.d.opts.auditOnLoad) setImmediate(() => this.d.auditor.auditSoon(namespace));
    if (loaded.kind === 'hnsw' && loaded.delta.size >= this.d.opts.mergeThreshold)
      this.d.persistence.startMerge(namespace, loaded);
    return true;
  }

  /** Rebuilds a namespace's graph from SQLite on the builder, then maps it. Searches meanwhile are degraded. */
  private runBuild(namespace: string, slot: Slot): void {
    slot.building = this.d.loader.build(namespace);
    slot.building.then(
      (ready) => {
        // Vectors stored after the last catch-up page were skipped by apply() (no ready index yet):
        // pick them up in the same turn that makes the index visible, so none can slip between.
        this.d.loader.catchUpSync(namespace, ready);
        const before = slot.ready;
        slot.ready = ready;
        slot.building = undefined;
        slot.standIn = false;
        this.takeOverDrops(namespace, slot, before);
        if (ready.kind === 'hnsw' && ready.delta.size >= this.d.opts.mergeThreshold)
          this.d.persistence.startMerge(namespace, ready);
      },
      (err: Error) => {
        slot.error = err;
        slot.failedAt = Date.now();
        slot.building = undefined;
        this.d.log('error', 'vector index build failed', { namespace, error: err.message });
      },
    );
  }

  /** Upgrades an exact namespace that outgrew the threshold to HNSW, serving exactly until it is ready. */
  promote(namespace: string): void {
    const slot = this.map.get(namespace);
    if (!slot || slot.building) return;
    if (slot.failedAt !== undefined && Date.now() - slot.failedAt < RETRY_BUILD_AFTER_MS) return;
    const current = slot.ready;
    this.runBuild(namespace, slot);
    slot.ready = current;
  }
}
