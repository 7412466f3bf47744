import type Database from 'better-sqlite3';
import type { LexicalSearch } from './lexical-search.js';
import { RESAVE_AFTER_NEW_MATCHES } from './term-postings-options.js';
import type { WriteResult } from './write-result.js';
import { WrittenRows } from './written-rows.js';

/** What `LexicalUpkeep.afterBulkWrite` did. */
export interface UpkeepReport {
  /** FTS5's segments were merged. */
  merged: boolean;
  /** Namespaces whose common words were all scored and saved. */
  scored: string[];
  /** Namespaces whose most said words in the rows written were brought up to date and saved again. */
  refreshed: string[];
}

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
   * After a bulk write (`cairn ingest`), sized to it. FTS5's segments are merged when this process wrote a
   * tenth of the store's rows or more since the last merge; a smaller write leaves a few small segments,
   * which FTS5's automerge bounds. With `scoreCommonWords`, a namespace's common words are scored and saved
   * when this process wrote a tenth of its rows, and every namespace's when the saved words no longer load
   * cleanly (`TermPostingsCache.savedLoadClean`: past their drift budget, the same tenth, or older rows
   * rewritten since, as a write into an existing session rewrites its neighbours' context). Otherwise only
   * the words said by so many of the rows written that every later process would score those new matches
   * on its first search (RESAVE_AFTER_NEW_MATCHES; past 2,000, bm25()'s walk of the whole doclist) are
   * brought up to date and saved again. Returns what was done.
   */
  async afterBulkWrite(opts: { scoreCommonWords?: boolean }): Promise<UpkeepReport> {
    const rows = this.db.prepare('SELECT namespace, rows FROM namespace_rows WHERE rows > 0').all() as Array<{
      namespace: string;
      rows: number;
    }>;
    const merged = this.written.mergeDue(rows.reduce((n, r) => n + r.rows, 0));
    if (merged) await this.compact();
    // Saved words that no longer load cleanly (rows rewritten since, whoever wrote them) are every
    // namespace's: all are scored again, as after a bulk write.
    const stale = opts.scoreCommonWords === true && !this.lexical.postings.savedLoadClean();
    const scored = opts.scoreCommonWords
      ? rows.filter((r) => stale || this.written.scoringDue(r.namespace, r.rows)).map((r) => r.namespace)
      : [];
    if (scored.length > 0) await this.warmCommonWords(scored);
    const refreshed: string[] = [];
    if (opts.scoreCommonWords)
      for (const { namespace } of rows) {
        const written = this.written.since(namespace);
        if (written < RESAVE_AFTER_NEW_MATCHES) continue;
        await this.lexical.warmCommonWords(namespace, {
          sampleRows: written,
          minSampleMatches: RESAVE_AFTER_NEW_MATCHES,
        });
        this.written.scored(namespace);
        refreshed.push(namespace);
      }
    return { merged, scored, refreshed };
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
