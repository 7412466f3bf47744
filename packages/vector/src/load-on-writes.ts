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
    if (this.deps.isSmall(namespace)) return;
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
    if (!Number.isFinite(n)) this.counts.clear();
  }

  clear(): void {
    this.counts.clear();
  }
}
