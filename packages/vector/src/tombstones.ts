import type { KeyFilter } from './sources.js';

/**
 * How an index hears of deleted memories, whichever process deleted them: the store's tombstones after a
 * meta_seq, one range of a partial index (migrations 23 and 24: all of them, and one namespace's). A
 * process follows them from a cursor (`takeNew`); a graph file records the meta_seq up to which it is
 * clean of them, so mapping it drops the keys deleted after (`since`), even those deleted while no process
 * had the namespace loaded (`cairn delete` with no server). A store that cannot tell (no `metaSeq`) reports no deletes: searches still drop dead keys.
 */
export class Tombstones {
  private seen: number;

  constructor(private readonly keys: KeyFilter) {
    this.seen = this.top();
  }

  /** The store's highest meta_seq now. */
  top(): number {
    return this.keys.metaSeq?.() ?? 0;
  }

  /** Every delete up to this meta_seq has been handed out by `takeNew` (or predates this process). */
  get heardThrough(): number {
    return this.seen;
  }

  /** The deletes made since the last call (or since this process started), by namespace. */
  takeNew(): Map<string, number[]> {
    const top = this.top();
    const out = new Map<string, number[]>();
    if (top === this.seen || !this.keys.deletedBetween) return out;
    for (const { namespace, key } of this.keys.deletedBetween(this.seen, top)) {
      const keys = out.get(namespace);
      if (keys) keys.push(key);
      else out.set(namespace, [key]);
    }
    this.seen = top;
    return out;
  }

  /** The namespace's memories deleted after `metaSeq` (a graph file's) and still deleted. */
  since(namespace: string, metaSeq: number): number[] {
    const top = this.top();
    if (top <= metaSeq || !this.keys.deletedBetween) return [];
    return this.keys.deletedBetween(metaSeq, top, namespace).map((d) => d.key);
  }
}
