import { LRUCache } from 'lru-cache';
import { CorpusChanges, savedDriftBudget } from './corpus-changes.js';
import { bm25Idf, corpusRowCount, isConfined, isPlainTerm } from './fts5-bm25.js';
import { highestKey } from './highest-key.js';
import { NamespaceIdf } from './namespace-idf.js';
import { readNewMatches } from './new-matches.js';
import { append, indexOf, type Postings } from './postings.js';
import { patchRewritten } from './rewritten-matches.js';
import type { SavedTermPostings } from './saved-term-postings.js';
import type { Accumulator } from './score-accumulator.js';
import type { StatementCache } from './statement-cache.js';
import {
  DEFAULT_TERM_POSTINGS_OPTIONS,
  INLINE_RESCORE_MATCHES,
  MAX_IDF_DRIFT,
  MAX_SAVED_IDF_DRIFT,
  RESAVE_AFTER_NEW_MATCHES,
  type TermPostingsOptions,
} from './term-postings-options.js';
import type { TermQuery } from './term-query.js';
import { type ScoredMatches, scoreTerm, type TermScorer } from './term-scoring.js';

/** Sees each term's current contributions, one term at a time (see TermPostingsCache.visit). */
export interface TermVisitor {
  beginTerm(): void;
  add(key: number, score: number): void;
  endTerm(): void;
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
  /** What changed in the store since the cache last looked, and when it starts over. */
  private readonly changes: CorpusChanges;
  /** The caller's meta_seq reading that preceded the last sync (NaN: none given). */
  private metaSeqAtSync = Number.NaN;
  /**
   * Set while searches prefetch their costly terms on a scorer (a term thread): a term whose idf drifted is
   * then left to the next prefetch rather than scored again on the calling thread.
   */
  scorerInUse = false;
  /** Puts a namespace's own counts in a confined term's idf (see `TermQuery.within`). */
  private readonly idf: NamespaceIdf;
  /** Terms being scored by a TermScorer, by cache key, so concurrent queries ask once. */
  private readonly inFlight = new Map<string, Promise<void>>();
  private prefetched = 0;
  private loaded = 0;
  private saved = 0;
  private newScoredHere = 0;
  private newScoredByFts5 = 0;

  /** @param disk Where terms are saved and loaded (null: memory only). */
  constructor(
    private readonly statements: StatementCache,
    opts: Partial<TermPostingsOptions> = {},
    private readonly disk: SavedTermPostings | null = null,
  ) {
    this.opts = { ...DEFAULT_TERM_POSTINGS_OPTIONS, ...opts };
    this.idf = new NamespaceIdf(statements);
    this.changes = new CorpusChanges(statements, this.opts.maxPendingUpdates);
    this.terms = new LRUCache<string, Postings>({
      maxSize: this.opts.maxEntries,
      sizeCalculation: (p) => Math.max(1, p.keys.length),
    });
  }

  /** A term is saved once it has this many matches (0: nothing is saved or loaded). */
  get saveFromMatches(): number {
    return this.opts.saveFromMatches;
  }

  /** Matches of one term scored at most (the newest). */
  get maxPerTerm(): number {
    return this.opts.maxPerTerm;
  }

  /**
   * What the cache holds and has done: terms and entries held; terms scored on a scorer, loaded from
   * disk, saved; and batches of new matches scored here (`newScoredHere`) or by FTS5's bm25()
   * (`newScoredByFts5`, each a walk of the term's whole doclist).
   */
  get size(): {
    terms: number;
    entries: number;
    prefetched: number;
    loaded: number;
    saved: number;
    newScoredHere: number;
    newScoredByFts5: number;
  } {
    return {
      terms: this.terms.size,
      entries: this.terms.calculatedSize,
      prefetched: this.prefetched,
      loaded: this.loaded,
      saved: this.saved,
      newScoredHere: this.newScoredHere,
      newScoredByFts5: this.newScoredByFts5,
    };
  }

  /**
   * Has the term in the cache, as scoring it now would (from disk when a saved copy holds, else scored
   * here, and saved when common). For warming a new corpus's common words; a search does this by itself.
   */
  warm(t: TermQuery): number {
    this.sync();
    return this.postings(t).length;
  }

  /**
   * Adds each term's BM25 contributions into `acc` (a confined term's on its namespace's idf: see
   * `NamespaceIdf.weight`), bringing the terms up to date first. Returns the
   * highest key below which some term's matches were left out (0: every match of every term was summed).
   * `metaSeq`: the store's highest meta_seq, just read by the caller (the key catalog), if known.
   * `visitor`, when given, is shown each term's contributions as `visit` would show them, in the same walk
   * (session match walked every match of every term a second time).
   */
  accumulate(terms: readonly TermQuery[], acc: Accumulator, metaSeq?: number, visitor?: TermVisitor): number {
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
      const w = this.idf.weight(t, p, this.changes.seq);
      if (visitor) {
        visitor.beginTerm();
        sumAndVisit(p, w, acc, visitor);
      } else if (w === 1) for (let i = 0; i < p.length; i++) acc.add(keys[i]!, scores[i]!);
      else for (let i = 0; i < p.length; i++) acc.add(keys[i]!, scores[i]! * w);
      for (const [key, score] of p.patch) {
        const i = indexOf(keys, p.length, key);
        if (i >= 0) acc.add(key, -scores[i]! * w);
        if (!Number.isNaN(score)) {
          acc.add(key, score * w);
          visitor?.add(key, score * w);
        }
      }
      visitor?.endTerm();
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
    // A term whose idf drifted at its last use is scored again on the scorer: not from its saved copy,
    // which carries the same old idf (it would be loaded, found drifted and evicted at every search).
    const drifted = new Set<string>();
    for (const t of terms)
      if (this.terms.peek(keyOf(t))?.stale) {
        this.terms.delete(keyOf(t));
        drifted.add(keyOf(t));
      }
    let missing = terms.filter((t) => !this.terms.has(keyOf(t)));
    if (missing.length === 0) return;
    // Only forward: a caller's meta_seq shortcut in `accumulate` stays valid after this.
    this.sync();
    // A saved copy that still holds costs a row read: no round trip to the scorer for it.
    missing = missing.filter((t) => {
      if (drifted.has(keyOf(t))) return true;
      const p = this.loadSaved(t);
      if (p) this.terms.set(keyOf(t), p);
      return !p;
    });
    const waits: Promise<void>[] = [];
    for (const t of missing) {
      const cacheKey = keyOf(t);
      // Keyed by generation too: a request made before the cache started over is dropped when it lands.
      const flightKey = `${this.changes.generation}\u0000${cacheKey}`;
      let wait = this.inFlight.get(flightKey);
      if (!wait) {
        const asked = {
          generation: this.changes.generation,
          seq: this.changes.seq,
          maxKey: this.changes.maxKey,
        };
        wait = scorer({
          match: t.match,
          bm25: t.bm25,
          maxKey: asked.maxKey,
          maxPerTerm: this.opts.maxPerTerm,
        })
          .then(
            (scored) => {
              if (asked.generation !== this.changes.generation || this.terms.has(cacheKey)) return;
              const p = this.fromScored(scored, asked.maxKey, asked.seq);
              this.terms.set(cacheKey, p);
              this.prefetched++;
              this.save(cacheKey, p);
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
      const w = this.idf.weight(t, p, this.changes.seq);
      visit.beginTerm();
      if (patch.size === 0) for (let i = 0; i < p.length; i++) visit.add(keys[i]!, scores[i]! * w);
      else {
        for (let i = 0; i < p.length; i++) if (!patch.has(keys[i]!)) visit.add(keys[i]!, scores[i]! * w);
        for (const [key, score] of patch) if (!Number.isNaN(score)) visit.add(key, score * w);
      }
      visit.endTerm();
    }
  }

  /** Brings the view of the store's changes up to date; starting over drops every term held. */
  private sync(): void {
    if (this.changes.sync() === 'reset') this.terms.clear();
  }

  private postings(t: TermQuery): Postings {
    const cacheKey = keyOf(t);
    let p = this.terms.get(cacheKey);
    if (!p) {
      p = this.loadSaved(t);
      if (!p) {
        p = this.scoreFromScratch(t);
        this.terms.set(cacheKey, p);
        this.save(cacheKey, p);
        return p;
      }
      // Brought up to date below, as a cached term is: newer memories appended, rewrites patched.
      this.terms.set(cacheKey, p);
    }
    // Left stale at an earlier use with a scorer in use, which has been taken away since: scored here. With
    // one, the next search's prefetch scores it off this thread; until then (a second pass of this search,
    // such as session match) it is summed as it is, brought up to date below as any term.
    if (p.stale && !this.scorerInUse) return this.rescore(t, cacheKey);
    if (p.syncedSeq === this.changes.seq) return p;
    // Rewrites first: patched, they leave the term's count known, so its new matches are scored without a
    // walk of its doclist.
    const due: number[] = [];
    for (const [key, seq] of this.changes.rewritten)
      if (seq > p.syncedSeq && key <= p.watermark) due.push(key);
    patchRewritten(this.statements, this.idf, t, p, due);
    p.syncedSeq = this.changes.seq;
    if (this.changes.maxKey > p.watermark) {
      append(p, this.newerMatches(t, p, this.changes.maxKey));
      p.watermark = this.changes.maxKey;
      // The arrays grew: tell the cache, so its bound on entries stays true.
      this.terms.set(cacheKey, p);
    }
    const drift = this.idfDrift(p);
    if (drift > MAX_IDF_DRIFT) {
      // Cheap, or no scorer to take it: scored again here. Otherwise this search sums it as it is, and the
      // next one's prefetch scores it on a term thread.
      if (p.length <= INLINE_RESCORE_MATCHES || !this.scorerInUse) return this.rescore(t, cacheKey);
      p.stale = true;
      return p;
    }
    if (
      p.savedLength >= 0 &&
      p.length - p.savedLength >= RESAVE_AFTER_NEW_MATCHES &&
      drift <= MAX_SAVED_IDF_DRIFT &&
      this.resavable(t, p)
    )
      this.save(cacheKey, p);
    return p;
  }

  private rescore(t: TermQuery, cacheKey: string): Postings {
    const fresh = this.scoreFromScratch(t);
    this.terms.set(cacheKey, fresh);
    this.save(cacheKey, fresh);
    return fresh;
  }

  /**
   * How far the term's idf now (its count of rows among the corpus's) is from the idf its scores were
   * computed with, as a share of the latter or of 1, whichever is more (0 when a count is not known).
   */
  private idfDrift(p: Postings): number {
    if (p.hits < 0 || p.scoredHits < 0 || p.scoredRows < 0) return 0;
    const rows = this.changes.corpusRowsAtSync();
    if (rows === null) return 0;
    const then = bm25Idf(p.scoredRows, p.scoredHits);
    return Math.abs(bm25Idf(rows, p.hits) - then) / Math.max(then, 1);
  }

  /**
   * Whether the terms saved last would load as they were saved, with nothing to patch (see `loadSaved`):
   * what was added since within the drift budget, and no memory at or below their top key rewritten since
   * (a write into an existing session rewrites its neighbours' context; each rewrite is re-scored per term
   * at load and leaves the term's count unknown). A writer's upkeep after a small write scores the common
   * words again only when they would not. True when nothing is saved, or saving is off.
   */
  savedLoadClean(): boolean {
    if (!this.disk || this.opts.saveFromMatches <= 0) return true;
    const newest = this.disk.newest();
    if (!newest) return true;
    const maxKey = highestKey(this.statements);
    const rows = this.changes.corpusRows();
    const budget = savedDriftBudget(rows, newest.corpusRows);
    if (budget === null || maxKey - newest.watermark > budget) return false;
    const rewritten = this.statements
      .get('SELECT 1 FROM memories WHERE change_seq > ? AND key <= ? LIMIT 1')
      .pluck()
      .get(newest.seq, newest.watermark);
    return rewritten === undefined;
  }

  /**
   * A saved copy of the term's postings, if it still holds, patched up to the store's present (call after
   * `sync`). It holds when it was scored under the same cap, at a sequence this cache has reached, and
   * what changed since is what the cache itself tolerates before starting over: memories added plus
   * memories rewritten within a tenth of the corpus, and rewrites no more than `maxPendingUpdates` (each is
   * re-scored for the term here, as `postings` does for rewrites it sees). Memories added since are then
   * appended by `postings`, as for any cached term. So a loaded term is what this cache would hold had it
   * scored the term at the saved sequence itself.
   */
  private loadSaved(t: TermQuery): Postings | undefined {
    if (!this.disk || this.opts.saveFromMatches <= 0 || this.changes.seq < 0) return undefined;
    const saved = this.disk.load(keyOf(t));
    if (!saved || saved.maxPerTerm !== this.opts.maxPerTerm || saved.seq > this.changes.seq) return undefined;
    // Saved without the term's count of rows (a word by a build before migration 21, a phrase by one before
    // phrases were scored here): a writer scores it once more (on a term thread when it has one) and saves
    // it with the count, so that no later process walks the term's doclist on its first search after a write.
    if (saved.hits < 0 && this.disk.writable && saved.keys.length >= saved.maxPerTerm && isPlainTerm(t))
      return undefined;
    // A confined term's scores are weighed by the namespace's count over the idf they carry: without either
    // (saved by a build before migration 28, or cut at the cap without its count), scored again, by any
    // process. Read back from a loaded copy, the idf would absorb what changed since it was saved.
    if (
      isConfined(t.match) &&
      (saved.idf === null || (saved.hits < 0 && saved.keys.length >= saved.maxPerTerm))
    )
      return undefined;
    const budget = savedDriftBudget(this.changes.rowsAtReset, saved.corpusRows);
    const added = Math.max(0, this.changes.maxKey - saved.watermark);
    if (budget === null || added > budget) return undefined;
    const rewrites = this.changes.rewritesSince(saved.seq, saved.watermark);
    if (this.changes.tooManyRewrites(rewrites) || added + rewrites.length > budget) return undefined;
    // Its scores carry the idf of the corpus it was saved from.
    const p = this.fromScored(saved, saved.watermark, saved.seq, saved.corpusRows);
    p.savedLength = p.length;
    patchRewritten(
      this.statements,
      this.idf,
      t,
      p,
      rewrites.map((r) => r.key),
    );
    this.loaded++;
    return p;
  }

  /** The term's new matches up to `upTo` (see new-matches.ts), keeping its count of matches and the counters. */
  private newerMatches(t: TermQuery, p: Postings, upTo: number): Array<[number, number]> {
    // Rewrites up to the watermark are patched first (see `postings`), and their effect on the count with them.
    const read = readNewMatches(this.statements, t, { after: p.watermark, hits: p.hits }, upTo);
    if (read.by === 'here') this.newScoredHere++;
    else if (read.by === 'fts5') this.newScoredByFts5++;
    p.hits = read.hits;
    return this.idf.toCarried(t, p, read.rows, read.reference);
  }

  /**
   * Whether a term can be saved again as it now is and load as the same postings: no rewrites pending (a
   * saved row has no patches); a load infers a cut from the length (`fromScored`), so a term held whole
   * must still be under the cap; and a plain term cut at the cap needs its count (a writer scores such a
   * term anew rather than load it without one).
   */
  private resavable(t: TermQuery, p: Postings): boolean {
    if (p.patch.size > 0) return false;
    if (p.truncatedBelow === 0) return p.length < this.opts.maxPerTerm;
    return p.hits >= 0 || (!isPlainTerm(t) && !isConfined(t.match));
  }

  /** Saves a term just scored, when common enough to be worth a load (a writer only; never waits). */
  private save(cacheKey: string, p: Postings): void {
    if (!this.disk?.writable || this.opts.saveFromMatches <= 0 || p.length < this.opts.saveFromMatches)
      return;
    // A confined term is loaded only with the idf its scores carry (see `loadSaved`).
    const confined = isConfined(cacheKey.slice(cacheKey.indexOf('\u0000') + 1));
    if (confined && typeof p.carriedIdf !== 'number') return;
    const corpusRows = this.changes.corpusRows();
    const ok = this.disk.save(cacheKey, {
      seq: p.syncedSeq,
      watermark: p.watermark,
      maxPerTerm: this.opts.maxPerTerm,
      corpusRows,
      keys: p.keys.subarray(0, p.length),
      scores: p.scores.subarray(0, p.length),
      hits: p.hits,
      idf: confined ? (p.carriedIdf ?? null) : null,
    });
    if (ok) {
      this.saved++;
      p.savedLength = p.length;
    }
  }

  private scoreFromScratch(t: TermQuery): Postings {
    const scored = scoreTerm(this.statements, {
      match: t.match,
      bm25: t.bm25,
      maxKey: this.changes.maxKey,
      maxPerTerm: this.opts.maxPerTerm,
    });
    return this.fromScored(scored, this.changes.maxKey, this.changes.seq);
  }

  /**
   * A term's postings from its scored matches (keys ascending), as of key `watermark` and sequence `seq`;
   * `scoredRows`: the corpus's rows its scores were computed against (default: now).
   */
  private fromScored(scored: ScoredMatches, watermark: number, seq: number, scoredRows?: number): Postings {
    const n = scored.keys.length;
    const hits = n >= this.opts.maxPerTerm ? scored.hits : n;
    return {
      keys: n > 0 ? scored.keys : new Float64Array(1),
      scores: n > 0 ? scored.scores : new Float64Array(1),
      length: n,
      watermark,
      truncatedBelow: n >= this.opts.maxPerTerm ? scored.keys[0]! : 0,
      hits,
      scoredHits: hits,
      scoredRows: scoredRows ?? corpusRowCount(this.statements) ?? -1,
      ...(scored.idf === undefined ? {} : { carriedIdf: scored.idf }),
      stale: false,
      syncedSeq: seq,
      patch: new Map(),
      savedLength: -1,
    };
  }
}

/**
 * A term's base entries into `acc` and `visitor` in one walk. The visitor skips keys the term's patch
 * replaces (the caller shows it their patched scores), as `visit` does; `acc` takes every base entry, and
 * the patch loop corrects it.
 */
function sumAndVisit(p: Postings, w: number, acc: Accumulator, visitor: TermVisitor): void {
  const { keys, scores, patch } = p;
  if (patch.size === 0)
    for (let i = 0; i < p.length; i++) {
      const key = keys[i]!;
      const score = scores[i]! * w;
      acc.add(key, score);
      visitor.add(key, score);
    }
  else
    for (let i = 0; i < p.length; i++) {
      const key = keys[i]!;
      const score = scores[i]! * w;
      acc.add(key, score);
      if (!patch.has(key)) visitor.add(key, score);
    }
}

/** The cache's identity of a term: the bm25 call and the rendered MATCH. */
function keyOf(t: TermQuery): string {
  return `${t.bm25}\u0000${t.match}`;
}
