import { startDeltaMerge } from './delta-merge.js';
import type { GenerationFiles } from './generation-files.js';
import type { Slot } from './namespace-slot.js';
import { carriesDelta, dropsWorthRewriting, type GraphState, worthMerging } from './namespace-state.js';
import type { LogFn } from './sources.js';
import type { Tombstones } from './tombstones.js';
import { releaseIndexSoon } from './usearch-index.js';

/**
 * How a writer's loaded graphs reach their files, and how any process lets a graph go: merges of a delta
 * into a new generation (at once, when due, or all of them), and the release of a graph's native memory.
 * A reader never merges. The namespaces' slots are the manager's (`VectorIndexManager`).
 */
export class GraphPersistence {
  constructor(
    private readonly slots: Map<string, Slot>,
    private readonly o: {
      files: GenerationFiles;
      tombstones: Tombstones;
      role: 'writer' | 'reader';
      /** The delta a writer merges as it arrives (`VectorIndexOptions.mergeThreshold`). */
      mergeThreshold: number;
      log: LogFn;
    },
  ) {}

  /** Merges the delta into a new graph generation on the builder (see delta-merge.ts). */
  startMerge(namespace: string, state: GraphState): void {
    if (this.o.role === 'reader') return;
    startDeltaMerge(namespace, state, this.o.files, this.o.log, this.o.tombstones.heardThrough);
  }

  /**
   * Merges every pending delta into its graph file, but a small one a load catches up (`carriesDelta`), and
   * waits for builds and merges under way: what a drain or a close leaves is served by the next process
   * without a build.
   */
  async flush(): Promise<void> {
    if (this.o.role === 'reader') return;
    await Promise.allSettled([...this.slots.values()].map((s) => s.building).filter(Boolean));
    for (const [ns, slot] of this.slots) await this.save(ns, slot);
  }

  /** The periodic upkeep's merges (see `worthMerging`), waited for; `flush` merges all but a carried delta. */
  async persistDue(): Promise<void> {
    if (this.o.role === 'reader') return;
    for (const [ns, slot] of this.slots) {
      const r = slot.ready;
      if (r?.kind === 'hnsw' && !r.merging && worthMerging(r)) await this.save(ns, slot);
    }
  }

  /**
   * Merges a namespace's pending delta into a new graph generation and waits for it (HNSW only), but a
   * delta small enough for the next load to catch up (`carriesDelta`): saved means that the next process
   * (this one's successor, or a shard's next writer) serves it without a build.
   */
  async save(ns: string, slot: Slot): Promise<void> {
    if (this.o.role === 'reader') return;
    const r = slot.ready;
    if (r?.kind !== 'hnsw') return;
    if (r.merging) await r.merging.catch(() => {});
    if ((r.delta.size > 0 && !carriesDelta(r, this.o.mergeThreshold)) || dropsWorthRewriting(r)) {
      this.startMerge(ns, r);
      await r.merging?.catch(() => {});
    }
  }

  /**
   * Frees a forgotten slot's graph once no merge is using it (see `releaseIndexSoon`). Awaited by a close:
   * a release's empty file is deleted when it is done, and a process that exits before would leave it.
   */
  async dispose(slot: Slot): Promise<void> {
    const ready = slot.ready;
    if (ready?.kind !== 'hnsw') return;
    if (ready.merging) await ready.merging.catch(() => undefined);
    await releaseIndexSoon(ready.graph);
  }
}
