import type { MemoryStore } from '@cairn/store';

/**
 * Counts how often searches return each memory (`access_count`, `last_accessed`), the signal a pruning
 * policy protects. A search must not wait on a write, so accesses are summed in memory and written in
 * one transaction per `flushMs` (and on close); a crash loses at most that window of counts, never a
 * memory.
 */
export class AccessTracker {
  private pending = new Map<string, { namespace: string; id: string; count: number }>();
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly store: MemoryStore,
    private readonly onError: (err: Error) => void,
    flushMs = 2_000,
  ) {
    this.timer = setInterval(() => this.flush(), flushMs);
    this.timer.unref();
  }

  record(namespace: string, ids: readonly string[]): void {
    for (const id of ids) {
      const k = `${namespace}\u0000${id}`;
      const p = this.pending.get(k);
      if (p) p.count++;
      else this.pending.set(k, { namespace, id, count: 1 });
    }
  }

  flush(): void {
    if (this.pending.size === 0) return;
    const batch = this.pending;
    this.pending = new Map();
    try {
      // Another process holds the write lock: keep the counts for the next window.
      if (!this.store.recordAccess([...batch.values()], Date.now())) this.putBack(batch);
    } catch (err) {
      // Counts are a hint for pruning: a busy or full disk drops this window's, never the process.
      this.onError(err as Error);
    }
  }

  private putBack(batch: Map<string, { namespace: string; id: string; count: number }>): void {
    for (const [k, a] of batch) {
      const p = this.pending.get(k);
      if (p) p.count += a.count;
      else this.pending.set(k, a);
    }
  }

  close(): void {
    clearInterval(this.timer);
    this.flush();
  }
}
