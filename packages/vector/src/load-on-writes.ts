import type { LogFn } from './sources.js';

/**
 * A writer's early loads: it counts the vectors stored for each namespace whose index is not loaded, and
 * once `threshold` have come for one, loads (or builds) that namespace's index in the background, so a
 * bulk ingest builds its graph on the builder while it stores instead of after the last write (see
 * `VectorIndexOptions.loadAfterWrites`). One load at a time: each build first copies its namespace's
 * vectors, and the builder runs them in turn.
 */
export class LoadOnWrites {
  private readonly counts = new Map<string, number>();
  /**
   * Namespaces that reached the threshold while still small enough for exact search: counted again from 0,
   * one that kept growing past exact search (5,001–8,191 vectors at the defaults) waited for its first
   * search to build its graph. `sweep` looks at them again.
   */
  private readonly grewSmall = new Set<string>();
  /** The one load this started that is still under way. */
  private inFlight: Promise<unknown> | null = null;

  constructor(
    private threshold: number,
    private readonly deps: {
      /** True when the namespace is small enough for exact search: loading early gains it nothing. */
      isSmall: (namespace: string) => boolean;
      /** Loads or builds the namespace's index; settles when it is ready or has failed. */
      load: (namespace: string) => Promise<unknown>;
      log: LogFn;
    },
  ) {}

  /** Counts one vector stored for `namespace` while its index is not loaded. */
  note(namespace: string): void {
    if (!Number.isFinite(this.threshold)) return;
    const n = (this.counts.get(namespace) ?? 0) + 1;
    this.counts.set(namespace, n);
    if (n < this.threshold || this.inFlight) return;
    this.counts.delete(namespace);
    // A small namespace stays lazy: a load would hold it in memory for the life of the process even if
    // nobody searches it.
    if (this.deps.isSmall(namespace)) {
      this.grewSmall.add(namespace);
      return;
    }
    this.grewSmall.delete(namespace);
    this.start(namespace);
  }

  /**
   * The periodic look (the writer's upkeep, every 30 s): a namespace that reached the threshold while small
   * and has grown past exact search since is loaded now, not at its first search. Only those namespaces are
   * counted again, so many small tenants cost nothing here.
   */
  sweep(): void {
    if (!Number.isFinite(this.threshold)) return;
    for (const namespace of this.grewSmall) {
      if (this.inFlight) return;
      if (this.deps.isSmall(namespace)) continue;
      this.grewSmall.delete(namespace);
      this.counts.delete(namespace);
      this.start(namespace);
    }
  }

  private start(namespace: string): void {
    const load = this.deps
      .load(namespace)
      .then(
        () => {},
        (err: Error) => this.deps.log('error', 'vector index load failed', { namespace, error: err.message }),
      )
      .finally(() => {
        if (this.inFlight === load) this.inFlight = null;
      });
    this.inFlight = load;
  }

  /** Vectors per namespace before a load starts; `Infinity` turns early loads off. */
  setThreshold(n: number): void {
    this.threshold = n;
    if (!Number.isFinite(n)) this.clear();
  }

  clear(): void {
    this.counts.clear();
    this.grewSmall.clear();
  }
}
