import type Database from 'better-sqlite3';
import type { LexicalSearch } from './lexical-search.js';
import type { WriteResult } from './write-result.js';
import { WrittenRows } from './written-rows.js';

/**
 * A writer's upkeep of the lexical index after a bulk write: merging FTS5's segments and scoring each
 * namespace's common words ahead of any search, each done when what this process wrote makes it worth its
 * cost (see `WrittenRows`). Both cost in proportion to the whole index, not to the write.
 */
export class LexicalUpkeep {
  private readonly written = new WrittenRows();

  constructor(
    private readonly db: Database.Database,
    private readonly lexical: LexicalSearch,
  ) {}

  /** Counts a batch's stored and rewritten rows toward the next upkeep. */
  recordWrites(results: readonly WriteResult[]): void {
    this.written.record(results);
  }

  /**
   * After a bulk write (`cairn ingest`), sized to it: FTS5's segments are merged when this process wrote a
   * tenth of the store's rows or more since the last merge, and with `scoreCommonWords` each namespace it
   * wrote as large a share of has its common words scored and saved. A smaller write leaves a few small
   * segments (FTS5's automerge bounds them) and saved words that still load (their drift budget is the
   * same tenth). Several small writes that add up to more leave a stale saved word to be scored on its first
   * search, by a writer, which saves it again. Returns what was done.
   */
  async afterBulkWrite(opts: { scoreCommonWords?: boolean }): Promise<{ merged: boolean; scored: string[] }> {
    const rows = this.db.prepare('SELECT namespace, rows FROM namespace_rows WHERE rows > 0').all() as Array<{
      namespace: string;
      rows: number;
    }>;
    const merged = this.written.mergeDue(rows.reduce((n, r) => n + r.rows, 0));
    if (merged) await this.compact();
    const scored = opts.scoreCommonWords
      ? rows.filter((r) => this.written.scoringDue(r.namespace, r.rows)).map((r) => r.namespace)
      : [];
    if (scored.length > 0) await this.warmCommonWords(scored);
    return { merged, scored };
  }

  /**
   * Scores every namespace's common words (or those of `only`) ahead of any search and saves them (see
   * `LexicalSearch.warmCommonWords`). Returns the terms scored.
   */
  async warmCommonWords(only?: readonly string[]): Promise<number> {
    const namespaces =
      only ??
      (this.db
        .prepare('SELECT namespace FROM namespace_rows WHERE rows > 0 ORDER BY namespace')
        .pluck()
        .all() as string[]);
    let n = 0;
    for (const ns of namespaces) {
      n += await this.lexical.warmCommonWords(ns);
      this.written.scored(ns);
    }
    return n;
  }

  /**
   * Merges the FTS5 index's segments, a bounded number of pages per step with the event loop free between
   * steps. A bulk ingest leaves many small segments, and every query reads each one: merging after it
   * made lexical queries ~20% faster at 100k memories (bench/RESULTS.md). Returns the steps taken.
   */
  async compact(pagesPerStep = 2000): Promise<number> {
    let steps = 0;
    // The named fields' index too: a bulk ingest of memories with fields leaves it as fragmented.
    for (const table of ['memories_fts', 'routes_fts']) {
      const merge = this.db.prepare(`INSERT INTO ${table} (${table}, rank) VALUES ('merge', ?)`);
      const changes = this.db.prepare('SELECT total_changes()').pluck();
      for (;;) {
        steps++;
        const before = changes.get() as number;
        // A negative page count merges even levels with few segments, i.e. works toward a single segment.
        merge.run(-pagesPerStep);
        if ((changes.get() as number) - before < 2) break;
        await new Promise((r) => setImmediate(r));
      }
    }
    this.written.merged();
    return steps;
  }
}
