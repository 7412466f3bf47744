import type { WriteResult } from './write-result.js';

/**
 * Past this share of what a namespace (or the store) holds, rows written by one process make a bulk write,
 * worth the lexical index's upkeep after it: its saved common words drift out of their budget (a tenth of
 * the corpus, see TermPostingsCache), and its many new FTS5 segments are worth merging.
 */
export const BULK_WRITE_SHARE = 0.1;

/**
 * The rows this process stored or rewrote, per namespace, since the upkeep that each count is for: the
 * lexical index's merge (every namespace at once) and each namespace's common words. What a `cairn ingest`
 * does after its last batch is then sized to what it wrote: 100 memories added to a million used to merge
 * the whole FTS5 index (2.7 s) and score every common word again (4.9 s) to change nothing a search sees.
 */
export class WrittenRows {
  private sinceMerge = 0;
  private readonly sinceScored = new Map<string, number>();

  record(results: readonly WriteResult[]): void {
    for (const r of results) {
      if (r.status === 'unchanged') continue;
      this.sinceMerge++;
      this.sinceScored.set(r.namespace, (this.sinceScored.get(r.namespace) ?? 0) + 1);
    }
  }

  /** Whether the rows written since the last merge reach the bulk share of `rows`, the store's rows now. */
  mergeDue(rows: number): boolean {
    return this.sinceMerge > 0 && this.sinceMerge >= rows * BULK_WRITE_SHARE;
  }

  merged(): void {
    this.sinceMerge = 0;
  }

  /** Whether the rows written to `namespace` since its words were scored reach the bulk share of `rows`. */
  scoringDue(namespace: string, rows: number): boolean {
    const n = this.since(namespace);
    return n > 0 && n >= rows * BULK_WRITE_SHARE;
  }

  /** Rows written to `namespace` since its words were scored. */
  since(namespace: string): number {
    return this.sinceScored.get(namespace) ?? 0;
  }

  scored(namespace: string): void {
    this.sinceScored.delete(namespace);
  }
}
