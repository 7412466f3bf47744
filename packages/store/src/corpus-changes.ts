import { corpusRowCount } from './fts5-bm25.js';
import { highestKey } from './highest-key.js';
import type { StatementCache } from './statement-cache.js';
import { MAX_DRIFT } from './term-postings-options.js';

/** A memory rewritten in place, with the change sequence of its last rewrite. */
export interface Rewrite {
  key: number;
  seq: number;
}

/**
 * What changed in the store since the postings cache last looked: the change sequence and highest key it
 * has seen, the memories rewritten in place since it started over, and when it must start over (a tenth of
 * the corpus added or rewritten, or more rewrites pending than it patches). Memories above the highest key
 * seen are new, and each term picks them up by rowid range when next used; the cache patches rewrites.
 */
export class CorpusChanges {
  /** Change sequence and highest key seen at the last sync (-1: none yet). */
  seq = -1;
  maxKey = 0;
  /** Rows in the corpus when the cache last started over. */
  rowsAtReset = 0;
  /** Counts the times the cache started over: a term scored elsewhere before a reset is stale after it. */
  generation = 0;
  /** Keys rewritten in place since the cache started over, with the sequence of their last rewrite. */
  readonly rewritten = new Map<number, number>();
  /** Rows added or rewritten since the cache last started over. */
  private changesSinceReset = 0;
  /** FTS5's row count as of sequence `rowsReadAt` (see `corpusRowsAtSync`). */
  private rowsAtSync: number | null = null;
  private rowsReadAt = Number.NaN;

  constructor(
    private readonly statements: StatementCache,
    /** Rewrites patched before the cache starts over instead (TermPostingsOptions.maxPendingUpdates). */
    private readonly maxPendingUpdates: number,
  ) {}

  /**
   * Brings the view up to the store's change sequence. Both probes are index lookups (a max each), since
   * this runs before every query whenever anything was written; the rows are counted only on a reset.
   * Returns `reset` when the cache must drop what it holds and start over, else `current`.
   */
  sync(): 'current' | 'reset' {
    const head = this.statements.get('SELECT max(change_seq) FROM memories').pluck().get() as number | null;
    const seq = head ?? 0;
    if (seq === this.seq) return 'current';
    const maxKey = highestKey(this.statements);
    const added = Math.max(0, maxKey - this.maxKey);
    if (this.seq < 0 || this.changesSinceReset + added > this.rowsAtReset * MAX_DRIFT) {
      this.reset(seq, maxKey);
      return 'reset';
    }
    // Rows at or below the old top key that changed are rewrites (or a key reused after a purge); rows
    // above it are new.
    const rewrites = this.rewritesSince(this.seq, this.maxKey);
    if (this.rewritten.size + rewrites.length > this.maxPendingUpdates) {
      this.reset(seq, maxKey);
      return 'reset';
    }
    for (const r of rewrites) this.rewritten.set(r.key, r.seq);
    this.changesSinceReset += added + rewrites.length;
    this.seq = seq;
    this.maxKey = maxKey;
    return 'current';
  }

  /**
   * Memories at or below `upToKey` rewritten after sequence `seq`, at most one more than the cache patches
   * (so that a caller can tell it was over).
   */
  rewritesSince(seq: number, upToKey: number): Rewrite[] {
    return this.statements
      .get('SELECT key, change_seq AS seq FROM memories WHERE change_seq > ? AND key <= ? LIMIT ?')
      .all(seq, upToKey, this.maxPendingUpdates + 1) as Rewrite[];
  }

  /** Whether more rewrites are listed than the cache patches (see `rewritesSince`). */
  tooManyRewrites(rewrites: readonly Rewrite[]): boolean {
    return rewrites.length > this.maxPendingUpdates;
  }

  /**
   * The corpus's rows from the triggers' per-namespace counts: counting the table itself took ~30 ms at a
   * million rows, paid by every one-shot `cairn search` on its first query.
   */
  corpusRows(): number {
    return this.statements.get('SELECT coalesce(sum(rows), 0) FROM namespace_rows').pluck().get() as number;
  }

  /**
   * FTS5's row count, read once per sync: after a write every term a search uses is brought up to date and
   * checked for drift, and the count is the same for all of them.
   */
  corpusRowsAtSync(): number | null {
    if (this.rowsReadAt !== this.seq) {
      this.rowsAtSync = corpusRowCount(this.statements);
      this.rowsReadAt = this.seq;
    }
    return this.rowsAtSync;
  }

  private reset(seq: number, maxKey: number): void {
    this.generation++;
    this.rewritten.clear();
    this.seq = seq;
    this.maxKey = maxKey;
    this.rowsAtReset = this.corpusRows();
    this.changesSinceReset = 0;
  }
}

/**
 * How many rows added or rewritten since a term was saved its saved copy tolerates (MAX_DRIFT of the corpus,
 * as the cache itself does); null when the corpus changed size by more than that since.
 */
export function savedDriftBudget(rowsNow: number, savedCorpusRows: number): number | null {
  const budget = Math.max(rowsNow, savedCorpusRows) * MAX_DRIFT;
  return Math.abs(rowsNow - savedCorpusRows) > budget ? null : budget;
}
