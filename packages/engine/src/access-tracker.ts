import type { MemoryStore } from '@cairn/store';

/**
 * Memories whose counts are written per transaction, with an event-loop turn between: one transaction for a
 * whole window (about 2,000 memories at 100 searches/s) held the serving thread ~30 ms every 2 s.
 */
const ACCESS_SLICE = 256;

type Access = { namespace: string; id: string; count: number };
const keyOf = (namespace: string, id: string) => `${namespace}\u0000${id}`;

/**
 * Counts how often searches return each memory (`access_count`, `last_accessed`), the signal a pruning
 * policy protects. A search must not wait on a write, so accesses are summed in memory and written in
 * slices of ACCESS_SLICE per transaction every `flushMs` (and all at once on close); a crash loses at most
 * that window of counts, never a memory.
 */
export class AccessTracker {
  private pending = new Map<string, Access>();
  private readonly timer: NodeJS.Timeout;
  private writing = false;
  private closed = false;

  constructor(
    private readonly store: MemoryStore,
    private readonly onError: (err: Error) => void,
    flushMs = 2_000,
  ) {
    this.timer = setInterval(() => void this.flushInSlices(), flushMs);
    this.timer.unref();
  }

  record(namespace: string, ids: readonly string[]): void {
    for (const id of ids) {
      const k = keyOf(namespace, id);
      const p = this.pending.get(k);
      if (p) p.count++;
      else this.pending.set(k, { namespace, id, count: 1 });
    }
  }

  /** Writes every pending count now, in one transaction (on close). */
  flush(): void {
    if (this.pending.size === 0) return;
    this.write(this.take(this.pending.size));
  }

  /** Writes the counts pending at the start, a slice per transaction and a turn between. */
  private async flushInSlices(): Promise<void> {
    if (this.writing) return;
    this.writing = true;
    try {
      // Counts recorded meanwhile wait for the next window.
      let left = this.pending.size;
      while (left > 0 && !this.closed) {
        const slice = this.take(Math.min(left, ACCESS_SLICE));
        // flush() wrote the rest meanwhile (a prune asks for current counts).
        if (slice.length === 0) return;
        left -= slice.length;
        if (!this.write(slice)) return;
        if (left > 0) await new Promise((r) => setImmediate(r));
      }
    } finally {
      this.writing = false;
    }
  }

  /** False when another process held the write lock: the slice is kept for the next window. */
  private write(slice: Access[]): boolean {
    try {
      if (this.store.recordAccess(slice, Date.now())) return true;
      this.putBack(slice);
    } catch (err) {
      // Counts are a hint for pruning: a busy or full disk drops this window's, never the process.
      this.onError(err as Error);
    }
    return false;
  }

  /** Removes up to `n` pending counts, oldest first. */
  private take(n: number): Access[] {
    const out: Access[] = [];
    for (const [k, a] of this.pending) {
      if (out.length === n) break;
      out.push(a);
      this.pending.delete(k);
    }
    return out;
  }

  private putBack(slice: readonly Access[]): void {
    for (const a of slice) {
      const k = keyOf(a.namespace, a.id);
      const p = this.pending.get(k);
      if (p) p.count += a.count;
      else this.pending.set(k, a);
    }
  }

  close(): void {
    this.closed = true;
    clearInterval(this.timer);
    this.flush();
  }
}
