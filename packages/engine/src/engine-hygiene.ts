import { type PrunePolicy, settleWithin, withDefaults } from '@cairn/core';
import type { MemoryStore, MergeRecord, SpaceInfo } from '@cairn/store';
import type { VectorIndexManager } from '@cairn/vector';
import { type ConsolidationReport, Consolidator, DEFAULT_CONSOLIDATION_OPTIONS } from './consolidator.js';
import type { EngineLog, EngineOptions } from './engine-options.js';
import { type PruneReport, prune } from './pruner.js';
import type { StoreHealth } from './store-health.js';

/**
 * A consolidation asked for waits at most this long for the embedding backlog: under a steady stream of
 * writes the backlog never empties, and the run then takes what has a vector (the next run, the rest).
 */
const CONSOLIDATE_SETTLE_MS = 5_000;

/** What the hygiene jobs need of the engine that runs them. */
export interface HygieneHost {
  store: MemoryStore;
  health: StoreHealth;
  log: EngineLog;
  /** The served vector index and its space, as they are now (a space switch replaces them). */
  vectors(): VectorIndexManager | null;
  space(): SpaceInfo | null;
  /** Whether this process holds the writer role now: a follower that takes it over runs the schedules. */
  isWriter(): boolean;
  closed(): boolean;
  /** This process's embedding backlog, drained (the writer's). */
  drained(): Promise<void>;
  /** Resolves once every vector stored so far is in the served index (see Consolidator's `indexed`). */
  indexed(): Promise<void> | void;
  /** Access counts still in memory, written: they protect what a pruning policy keeps. */
  flushAccess(): void;
  /** Memories deleted since the last look leave the served index. */
  forgetDeletes(): void;
  /** Runs `fn` every `ms` until the engine closes. */
  every(ms: number, fn: () => void): void;
}

/**
 * The embedded engine's memory hygiene: the consolidation job (near-duplicates merged into the newer
 * memory, on a schedule the writer runs, or when asked) and the pruning policies. Both change only what
 * a writer may change; a follower runs them when it takes the role over.
 */
export class EngineHygiene {
  readonly consolidator: Consolidator;

  constructor(
    private readonly host: HygieneHost,
    opts: Pick<EngineOptions, 'consolidation' | 'prune'>,
    /** The data folder has a vector leg: consolidation finds near-duplicates by their vectors. */
    hasVectors: boolean,
  ) {
    this.consolidator = new Consolidator(
      host.store,
      () => host.vectors(),
      withDefaults(DEFAULT_CONSOLIDATION_OPTIONS, opts.consolidation || {}),
      () => host.indexed(),
    );
    const consolidateEvery = opts.consolidation === false ? 0 : this.consolidator.opts.intervalMs;
    if (consolidateEvery > 0 && hasVectors)
      host.every(consolidateEvery, () => {
        if (host.isWriter()) void this.runConsolidation({}).catch(() => undefined);
      });
    const policies = opts.prune?.policies ?? [];
    const pruneEvery = opts.prune?.intervalMs ?? 3_600_000;
    if (policies.length > 0 && pruneEvery > 0)
      host.every(pruneEvery, () => {
        if (!host.isWriter()) return;
        void (async () => {
          for (const p of policies) await this.prune(p);
        })().catch((err: Error) =>
          host.log('warn', 'pruning failed; the next round tries again', { error: err.message }),
        );
      });
  }

  /**
   * Runs the consolidation job now (see Consolidator.run); `dryRun` reports what it would merge. Logged
   * when it merged anything; a failure is logged and rethrown. It first lets the embedding backlog settle
   * (up to `CONSOLIDATE_SETTLE_MS`): the near-duplicate pass finds only memories with a vector, and a user
   * who runs it right after writing expects those writes to count.
   */
  async consolidate(req: { dryRun?: boolean; namespace?: string } = {}): Promise<ConsolidationReport> {
    const deadline = Date.now() + CONSOLIDATE_SETTLE_MS;
    if (this.host.isWriter()) await settleWithin(this.host.drained(), CONSOLIDATE_SETTLE_MS);
    else await this.writerEmbedded(req.namespace, deadline);
    return this.runConsolidation(req);
  }

  /** Undoes consolidation merges in `namespace` (`ids`, or every one); the job never merges them again. */
  undoConsolidation(namespace: string, ids?: readonly string[]): MergeRecord[] {
    return this.host.health.guard(() => this.host.store.consolidations.undo(namespace, ids));
  }

  /** The namespace's consolidation merges, newest first: in force and undone (dissolved ones leave no record). */
  consolidations(namespace: string, limit?: number): MergeRecord[] {
    return this.host.health.guard(() => this.host.store.consolidations.list(namespace, limit));
  }

  /**
   * Applies a pruning policy now (see `prune`): deletes what it does not keep or protect, or, dry, lists
   * it. Logged when it deleted anything.
   */
  async prune(policy: PrunePolicy, opts: { dryRun?: boolean; now?: number } = {}): Promise<PruneReport> {
    // Counts still in memory must protect what they protect.
    this.host.flushAccess();
    const report = await this.host.health.guard(() => prune(this.host.store, policy, opts));
    if (!report.dryRun && report.pruned.length > 0) this.host.forgetDeletes();
    if (report.pruned.length > 0 && !report.dryRun)
      this.host.log('info', 'pruning policy deleted memories', {
        namespace: report.namespace,
        slot: policy.slot,
        kind: policy.kind,
        pruned: report.pruned.length,
        protected: report.protected,
        ids: report.pruned.slice(0, 20),
      });
    return report;
  }

  /** Stops the consolidation between batches, once the run in flight has ended (see Consolidator.stop). */
  stop(): Promise<void> {
    return this.consolidator.stop();
  }

  /**
   * Resolves once the writer (another process) has embedded every memory stored in `namespace` (every
   * namespace without one), read from the kept counts every 50 ms, or at `deadline`.
   */
  private async writerEmbedded(namespace: string | undefined, deadline: number): Promise<void> {
    const spaceId = this.host.space()?.id;
    if (!spaceId) return;
    const { embeddings, spaces } = this.host.store;
    const done = () => {
      if (namespace === undefined) {
        const p = spaces.progress(spaceId);
        return p.embedded + p.failed >= p.total;
      }
      const c = embeddings.coverage(spaceId, namespace);
      return c.current >= c.live;
    };
    while (!done() && !this.host.closed() && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 50));
  }

  private async runConsolidation(req: {
    dryRun?: boolean;
    namespace?: string;
  }): Promise<ConsolidationReport> {
    try {
      const report = await this.host.health.guard(() => this.consolidator.run(req));
      if (report.merged > 0 && !report.dryRun)
        this.host.log('info', 'consolidation merged near-duplicates', {
          merged: report.merged,
          exact: report.exact,
          near: report.near,
          tookMs: report.tookMs,
        });
      return report;
    } catch (err) {
      this.host.log('warn', 'consolidation failed; the next run tries again', {
        error: (err as Error).message,
      });
      throw err;
    }
  }
}
