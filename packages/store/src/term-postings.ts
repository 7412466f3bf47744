import { LRUCache } from 'lru-cache';
import type { StatementCache } from './statement-cache.js';
import { type ScoredMatches, type TermScorer, termScoreSql, toScoredMatches } from './term-scoring.js';

/** Tunables of the postings cache. */
export interface TermPostingsOptions {
  /**
   * Postings (one memory's score for one term) kept in memory across all terms, 16 bytes each;
   * the least recently used terms are dropped past it. @defaultValue 4_000_000
   */
  maxEntries: number;
  /**
   * At most this many matches of one term are scored, the most recently stored ones. It bounds what a term
   * costs the first time it is seen (FTS5 scores ~1 µs per match): a term in 20% of 100k memories would
   * otherwise cost 20–25 ms once on a small machine, and a question can hold several. Older matches of such
   * a term miss only that term's contribution (its idf is low: it is common), and memories stored later
   * are always added. @defaultValue 10_000
   */
  maxPerTerm: number;
  /**
   * In-place content updates to already cached memories are patched term by term; past this many pending,
   * the cache starts over. @defaultValue 512
   */
  maxPendingUpdates: number;
}

export const DEFAULT_TERM_POSTINGS_OPTIONS: Readonly<TermPostingsOptions> = Object.freeze({
  maxEntries: 4_000_000,
  maxPerTerm: 10_000,
  maxPendingUpdates: 512,
});

/**
 * Whether a summed bm25 says the memory matches: a memory rewritten so it no longer matches sums back to
 * zero, give or take the rounding of adding and removing the same contributions.
 */
export function isMatch(sum: number): boolean {
  return sum < -1e-12;
}

/**
 * The cache starts over once rows added or rewritten since it last did pass this share of the corpus:
 * scores computed before carry the idf and average length of then.
 */
const MAX_DRIFT = 0.1;

/** One FTS5 term (or phrase) scored alone against every memory it matches, keys ascending. */
interface Postings {
  keys: Float64Array;
  /** FTS5 bm25() of the term alone: negative, lower is better. */
  scores: Float64Array;
  /** Entries used (the arrays grow by doubling when newer memories are appended). */
  length: number;
  /** Every memory with a key up to this one is covered. */
  watermark: number;
  /** Matches with keys below this one were left out (the term was over `maxPerTerm`); 0 when none were. */
  truncatedBelow: number;
  /** The change sequence this term was last brought up to date with. */
  syncedSeq: number;
  /** Scores that replace the base entry of a key rewritten in place (NaN: it no longer matches). */
  patch: Map<number, number>;
}

/** Sees each term's current contributions, one term at a time (see TermPostingsCache.visit). */
export interface TermVisitor {
  beginTerm(): void;
  add(key: number, score: number): void;
  endTerm(): void;
}

/** What a lookup needs to score one term: the FTS5 MATCH of the term (confined to a scope when given). */
export interface TermQuery {
  /** Cache identity: the rendered MATCH expression. */
  match: string;
  /** The bm25() call with the leg's column weights. */
  bm25: string;
}

/**
 * Every term's BM25 contributions, cached. FTS5's bm25() is a sum over the query's phrases, each scored
 * with its own idf against the same length normalisation, so a many-word query is the sum of its words
 * scored alone. Scoring is what costs (~1 µs per matching row, and common words match tens of thousands of
 * rows); summing cached contributions costs a few nanoseconds per row. Terms repeat across queries far
 * more than queries do, so the cache holds terms, not results.
 *
 * Freshness: every lookup first compares the store's change sequence with the one the cache has seen (an
 * indexed max). Memories stored since are appended to each term when it is next used (an FTS5 rowid range
 * query, so only the new rows are scored); memories rewritten in place are re-scored per term and patched
 * in. Which memories match is therefore always exact; scores are exact when a term is scored, and drift a
 * little as the corpus changes (a term's idf, the average length), so the whole cache starts over once a
 * tenth of the corpus was added or rewritten. Deleted or superseded memories may stay in a term's
 * list: the leg checks its winners against the live rows anyway.
 */
export class TermPostingsCache {
  private readonly opts: TermPostingsOptions;
  private readonly terms: LRUCache<string, Postings>;
  /** Change sequence and highest key seen at the last sync. */
  private seq = -1;
  private maxKey = 0;
  /** Rows in the corpus when the cache started over, and rows added or rewritten since. */
  private rowsAtReset = 0;
  private changesSinceReset = 0;
  /** Keys rewritten in place since the cache started, with the sequence of their last rewrite. */
  private readonly rewritten = new Map<number, number>();
  /** The caller's meta_seq reading that preceded the last sync (NaN: none given). */
  private metaSeqAtSync = Number.NaN;
  /** Counts the times the cache started over: a term scored elsewhere before a reset is stale after it. */
  private generation = 0;
  /** Terms being scored by a TermScorer, by cache key, so concurrent queries ask once. */
  private readonly inFlight = new Map<string, Promise<void>>();
  private prefetched = 0;

  constructor(
    private readonly statements: StatementCache,
    opts: Partial<TermPostingsOptions> = {},
  ) {
    this.opts = { ...DEFAULT_TERM_POSTINGS_OPTIONS, ...opts };
    this.terms = new LRUCache<string, Postings>({
      maxSize: this.opts.maxEntries,
      sizeCalculation: (p) => Math.max(1, p.keys.length),
    });
  }

  /** Matches of one term scored at most (the newest). */
  get maxPerTerm(): number {
    return this.opts.maxPerTerm;
  }

  /** Entries and terms held, and terms taken from a scorer since the cache was made, for stats and tests. */
  get size(): { terms: number; entries: number; prefetched: number } {
    return { terms: this.terms.size, entries: this.terms.calculatedSize, prefetched: this.prefetched };
  }

  /**
   * Adds each term's BM25 contributions into `acc`, bringing the terms up to date first. Returns the
   * highest key below which some term's matches were left out (0: every match of every term was summed).
   * `metaSeq`: the store's highest meta_seq, just read by the caller (the key catalog), if known.
   */
  accumulate(terms: readonly TermQuery[], acc: Accumulator, metaSeq?: number): number {
    // Every statement that moves a change_seq also stamps a new meta_seq: while the store's highest
    // meta_seq is the one seen before the last probe, nothing changed and the probe is skipped.
    if (metaSeq === undefined || metaSeq !== this.metaSeqAtSync) {
      this.sync();
      this.metaSeqAtSync = metaSeq ?? Number.NaN;
    }
    let truncatedBelow = 0;
    for (const t of terms) {
      const p = this.postings(t);
      truncatedBelow = Math.max(truncatedBelow, p.truncatedBelow);
      const { keys, scores } = p;
      for (let i = 0; i < p.length; i++) acc.add(keys[i]!, scores[i]!);
      for (const [key, score] of p.patch) {
        const i = indexOf(keys, p.length, key);
        if (i >= 0) acc.add(key, -scores[i]!);
        if (!Number.isNaN(score)) acc.add(key, score);
      }
    }
    return truncatedBelow;
  }

  /**
   * Has `scorer` score the terms the cache lacks, off the calling thread, and keeps what it returns, so the
   * synchronous `accumulate` that follows finds every term and scores nothing itself. The entry is kept as
   * of the cache's view when it asked (its highest key and change sequence): memories stored or rewritten
   * after that are brought in by `postings`, as for any cached term, so which memories match is exact. The
   * scorer reads the store when it runs, at or after the ask, so a score may reflect a slightly newer corpus
   * (its idf, the average length) than inline scoring at the ask would have: the drift every cached term
   * already has, bounded by the cache starting over. A result that arrives after the cache started over is
   * dropped, and a failed one leaves the term to be scored inline.
   */
  async prefetch(terms: readonly TermQuery[], scorer: TermScorer): Promise<void> {
    const missing = terms.filter((t) => !this.terms.has(keyOf(t)));
    if (missing.length === 0) return;
    // Only forward: a caller's meta_seq shortcut in `accumulate` stays valid after this.
    this.sync();
    const waits: Promise<void>[] = [];
    for (const t of missing) {
      const cacheKey = keyOf(t);
      // Keyed by generation too: a request made before the cache started over is dropped when it lands.
      const flightKey = `${this.generation}\u0000${cacheKey}`;
      let wait = this.inFlight.get(flightKey);
      if (!wait) {
        const asked = { generation: this.generation, seq: this.seq, maxKey: this.maxKey };
        wait = scorer({
          match: t.match,
          bm25: t.bm25,
          maxKey: asked.maxKey,
          maxPerTerm: this.opts.maxPerTerm,
        })
          .then(
            (scored) => {
              if (asked.generation !== this.generation || this.terms.has(cacheKey)) return;
              this.terms.set(cacheKey, this.fromScored(scored, asked.maxKey, asked.seq));
              this.prefetched++;
            },
            () => undefined,
          )
          .finally(() => this.inFlight.delete(flightKey));
        this.inFlight.set(flightKey, wait);
      }
      waits.push(wait);
    }
    await Promise.all(waits);
  }

  /**
   * Shows `visit` each term's current contributions, one term at a time (every match once, with in-place
   * rewrites applied). For terms just summed by `accumulate`: it reads the postings as they are.
   */
  visit(terms: readonly TermQuery[], visit: TermVisitor): void {
    for (const t of terms) {
      const p = this.postings(t);
      const { keys, scores, patch } = p;
      visit.beginTerm();
      if (patch.size === 0) for (let i = 0; i < p.length; i++) visit.add(keys[i]!, scores[i]!);
      else {
        for (let i = 0; i < p.length; i++) if (!patch.has(keys[i]!)) visit.add(keys[i]!, scores[i]!);
        for (const [key, score] of patch) if (!Number.isNaN(score)) visit.add(key, score);
      }
      visit.endTerm();
    }
  }

  /**
   * The store's change sequence against the cache's: new rows are noted, rewritten rows remembered. Both
   * probes are index lookups (a max each), since this runs before every query whenever anything was
   * written; the rows are counted only when the cache starts over.
   */
  private sync(): void {
    const head = this.statements.get('SELECT max(change_seq) FROM memories').pluck().get() as number | null;
    const seq = head ?? 0;
    if (seq === this.seq) return;
    const maxKey = (this.statements.get('SELECT max(key) FROM memories').pluck().get() as number | null) ?? 0;
    const added = Math.max(0, maxKey - this.maxKey);
    if (this.seq < 0 || this.changesSinceReset + added > this.rowsAtReset * MAX_DRIFT) {
      this.reset(seq, maxKey);
      return;
    }
    // Rows at or below the old top key that changed are rewrites (or a key reused after a purge); rows
    // above it are new, and each term picks those up by rowid range when next used.
    const rewrites = this.statements
      .get('SELECT key, change_seq AS seq FROM memories WHERE change_seq > ? AND key <= ? LIMIT ?')
      .all(this.seq, this.maxKey, this.opts.maxPendingUpdates + 1) as Array<{ key: number; seq: number }>;
    if (this.rewritten.size + rewrites.length > this.opts.maxPendingUpdates) {
      this.reset(seq, maxKey);
      return;
    }
    for (const r of rewrites) this.rewritten.set(r.key, r.seq);
    this.changesSinceReset += added + rewrites.length;
    this.seq = seq;
    this.maxKey = maxKey;
  }

  private reset(seq: number, maxKey: number): void {
    this.generation++;
    this.terms.clear();
    this.rewritten.clear();
    this.seq = seq;
    this.maxKey = maxKey;
    // The triggers' per-namespace counts: counting the table itself took ~30 ms at a million rows, paid by
    // every one-shot `cairn search` on its first query.
    this.rowsAtReset = this.statements
      .get('SELECT coalesce(sum(rows), 0) FROM namespace_rows')
      .pluck()
      .get() as number;
    this.changesSinceReset = 0;
  }

  private postings(t: TermQuery): Postings {
    const cacheKey = keyOf(t);
    let p = this.terms.get(cacheKey);
    if (!p) {
      p = this.scoreFromScratch(t);
      this.terms.set(cacheKey, p);
      return p;
    }
    if (p.syncedSeq === this.seq) return p;
    if (this.maxKey > p.watermark) {
      const fresh = this.statements
        .get(
          `SELECT rowid AS key, ${t.bm25} AS score FROM memories_fts WHERE memories_fts MATCH ? AND rowid > ? ORDER BY rowid`,
        )
        .raw()
        .all(t.match, p.watermark) as Array<[number, number]>;
      append(p, fresh);
      p.watermark = this.maxKey;
      // The arrays grew: tell the cache, so its bound on entries stays true.
      this.terms.set(cacheKey, p);
    }
    // BETWEEN, not `rowid = ?`: with a MATCH, FTS5 answers `rowid = ?` with the first match at or after
    // that rowid (seen with SQLite 3.53), so the row is also checked.
    const rescore = this.statements.get(
      `SELECT rowid, ${t.bm25} FROM memories_fts WHERE memories_fts MATCH ? AND rowid BETWEEN ? AND ?`,
    );
    for (const [key, seq] of this.rewritten) {
      if (seq <= p.syncedSeq || key > p.watermark) continue;
      const row = rescore.raw().get(t.match, key, key) as [number, number] | undefined;
      p.patch.set(key, row && row[0] === key ? row[1] : Number.NaN);
    }
    p.syncedSeq = this.seq;
    return p;
  }

  private scoreFromScratch(t: TermQuery): Postings {
    const rows = this.statements
      .get(termScoreSql(t.bm25))
      .raw()
      .all(t.match, this.maxKey, this.opts.maxPerTerm) as Array<[number, number]>;
    return this.fromScored(toScoredMatches(rows), this.maxKey, this.seq);
  }

  /** A term's postings from its scored matches (keys ascending), as of key `watermark` and sequence `seq`. */
  private fromScored(scored: ScoredMatches, watermark: number, seq: number): Postings {
    const n = scored.keys.length;
    return {
      keys: n > 0 ? scored.keys : new Float64Array(1),
      scores: n > 0 ? scored.scores : new Float64Array(1),
      length: n,
      watermark,
      truncatedBelow: n >= this.opts.maxPerTerm ? scored.keys[0]! : 0,
      syncedSeq: seq,
      patch: new Map(),
    };
  }
}

/** The cache's identity of a term: the bm25 call and the rendered MATCH. */
function keyOf(t: TermQuery): string {
  return `${t.bm25}\u0000${t.match}`;
}

function append(p: Postings, rows: ReadonlyArray<readonly [number, number]>): void {
  if (rows.length === 0) return;
  const need = p.length + rows.length;
  if (need > p.keys.length) {
    const cap = Math.max(need, p.keys.length * 2);
    const keys = new Float64Array(cap);
    const scores = new Float64Array(cap);
    keys.set(p.keys.subarray(0, p.length));
    scores.set(p.scores.subarray(0, p.length));
    p.keys = keys;
    p.scores = scores;
  }
  for (const [key, score] of rows) {
    p.keys[p.length] = key;
    p.scores[p.length] = score;
    p.length++;
  }
}

/** Binary search in the first `length` (ascending) keys; -1 when absent. */
function indexOf(keys: Float64Array, length: number, key: number): number {
  let lo = 0;
  let hi = length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    const k = keys[mid]!;
    if (k === key) return mid;
    if (k < key) lo = mid + 1;
    else hi = mid - 1;
  }
  return -1;
}

/**
 * Per-key score sums for one query: a dense array indexed by key, reused across queries, plus the list of
 * keys touched so only those are read and cleared. Sorting every touched key would cost more than the
 * sums (tens of thousands of rows for common words); `top` selects the best n in linear time instead.
 */
export class Accumulator {
  private sums = new Float64Array(1024);
  private seen = new Uint8Array(1024);
  private touchedKeys = new Float64Array(1024);
  private count = 0;

  get touched(): number {
    return this.count;
  }

  /** Calls `fn` with every key touched so far (adding to them meanwhile is allowed; new keys are not visited). */
  forEachKey(fn: (key: number) => void): void {
    const n = this.count;
    for (let i = 0; i < n; i++) fn(this.touchedKeys[i]!);
  }

  /** The keys touched so far. */
  keys(): number[] {
    return Array.from(this.touchedKeys.subarray(0, this.count));
  }

  /** The sum for a key; 0 when no term matched it. */
  get(key: number): number {
    return key < this.sums.length ? this.sums[key]! : 0;
  }

  add(key: number, score: number): void {
    if (key >= this.sums.length) this.grow(key);
    if (this.seen[key] === 0) {
      this.seen[key] = 1;
      if (this.count === this.touchedKeys.length) {
        const t = new Float64Array(this.count * 2);
        t.set(this.touchedKeys);
        this.touchedKeys = t;
      }
      this.touchedKeys[this.count++] = key;
    }
    this.sums[key]! += score;
  }

  /**
   * The best (lowest bm25) `n` keys touched, best first; ties go to the newer memory, so the order is
   * deterministic; keys that no longer match are left out (see `isMatch`), and so are keys `accept`
   * refuses (a filter tested in memory against every match). A bounded heap
   * keeps the n best seen so far: most keys are rejected by one comparison with its worst.
   */
  top(n: number, accept?: (key: number) => boolean): Array<{ key: number; bm25: number }> {
    const heap = new TopHeap(n);
    for (let i = 0; i < this.count; i++) {
      const key = this.touchedKeys[i]!;
      const bm25 = this.sums[key]!;
      // The filter is tested only for keys good enough to enter the heap: once it is full, most are not.
      if (isMatch(bm25) && heap.admits(key, bm25) && (!accept || accept(key))) heap.offer(key, bm25);
    }
    return heap.sorted();
  }

  /** Empties the accumulator for the next query. */
  clear(): void {
    for (let i = 0; i < this.count; i++) {
      const key = this.touchedKeys[i]!;
      this.sums[key] = 0;
      this.seen[key] = 0;
    }
    this.count = 0;
  }

  private grow(key: number): void {
    const cap = Math.max(key + 1, this.sums.length * 2);
    const sums = new Float64Array(cap);
    sums.set(this.sums);
    this.sums = sums;
    const seen = new Uint8Array(cap);
    seen.set(this.seen);
    this.seen = seen;
  }
}

/**
 * The n lowest scores offered, as a binary max-heap on typed arrays (the root is the worst kept), with
 * ties broken toward the higher key, as the final order is.
 */
class TopHeap {
  private readonly keys: Float64Array;
  private readonly scores: Float64Array;
  private size = 0;

  constructor(private readonly capacity: number) {
    this.keys = new Float64Array(Math.max(1, capacity));
    this.scores = new Float64Array(Math.max(1, capacity));
  }

  /** Whether `offer` would keep this entry. */
  admits(key: number, score: number): boolean {
    if (this.size < this.capacity) return true;
    return this.capacity > 0 && this.worse(this.scores[0]!, this.keys[0]!, score, key);
  }

  offer(key: number, score: number): void {
    if (this.capacity === 0) return;
    if (this.size < this.capacity) {
      let i = this.size++;
      while (i > 0) {
        const parent = (i - 1) >> 1;
        if (!this.worse(score, key, this.scores[parent]!, this.keys[parent]!)) break;
        this.keys[i] = this.keys[parent]!;
        this.scores[i] = this.scores[parent]!;
        i = parent;
      }
      this.keys[i] = key;
      this.scores[i] = score;
      return;
    }
    if (!this.worse(this.scores[0]!, this.keys[0]!, score, key)) return;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= this.size) break;
      const r = l + 1;
      const c =
        r < this.size && this.worse(this.scores[r]!, this.keys[r]!, this.scores[l]!, this.keys[l]!) ? r : l;
      if (!this.worse(this.scores[c]!, this.keys[c]!, score, key)) break;
      this.keys[i] = this.keys[c]!;
      this.scores[i] = this.scores[c]!;
      i = c;
    }
    this.keys[i] = key;
    this.scores[i] = score;
  }

  sorted(): Array<{ key: number; bm25: number }> {
    const out = new Array<{ key: number; bm25: number }>(this.size);
    for (let i = 0; i < this.size; i++) out[i] = { key: this.keys[i]!, bm25: this.scores[i]! };
    return out.sort((a, b) => a.bm25 - b.bm25 || b.key - a.key);
  }

  /** Whether (s1, k1) ranks below (s2, k2): a higher bm25, or the same and an older key. */
  private worse(s1: number, k1: number, s2: number, k2: number): boolean {
    return s1 > s2 || (s1 === s2 && k1 < k2);
  }
}
