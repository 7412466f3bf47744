import { type Accumulator, isMatch } from './score-accumulator.js';
import type { TermVisitor } from './term-postings.js';

/**
 * Which memories count toward a session and which session each is in: the key catalog's arrays as they are
 * (a memory counts when `live[key] === member` and `accept`, if any, takes it; `sessions[key]`, 0 for
 * none, numbers its session), read in place because this is asked for every match of every term; or a
 * function from key to session number (0: does not count).
 */
export type SessionNumbering =
  | {
      live: Int32Array;
      member: number;
      sessions: Int32Array;
      accept: ((key: number) => boolean) | null;
    }
  | ((key: number) => number);

/**
 * Sessions scored as documents: a session's score is the sum, over the query's terms, of the best
 * contribution any of its memories makes to that term (bm25 units, negative: lower is better). A session
 * whose memories between them say most of the query's words scores high even when no single memory says
 * them all — the case of a multi-hop question, or of a question answered across a few turns.
 *
 * Sessions are numbers given by a `SessionNumbering` (0: no session, or not a live memory of the namespace searched
 * that passes the search's filters; never counted), so nothing crosses a namespace or a filter: only those
 * memories add to a session, and only they receive its score.
 *
 * One instance serves every query of a leg: its arrays are indexed by session number, and `begin` resets
 * only the entries the previous query touched, so a query costs what it touches.
 */
export class SessionMatch implements TermVisitor {
  private total = new Float64Array(64);
  private best = new Float64Array(64);
  /** The term each session's `best` belongs to (1-based; 0: not seen yet). */
  private bestTerm = new Int32Array(64);
  private term = 0;
  /**
   * Sessions seen in the current term, and sessions with a non-zero total (reset by the next `begin`):
   * typed arrays with a count, kept across queries. JS arrays emptied by `length = 0` give their storage
   * back and grow it again push by push: that was half of what a search allocated (a heap sampling at a
   * million memories), and so of the collector's work.
   */
  private inTerm = new Int32Array(256);
  private inTermCount = 0;
  private touched = new Int32Array(256);
  private touchedCount = 0;
  /** The numbering as a function (see `SessionNumbering`); null when read from the catalog's arrays. */
  private numbering: ((key: number) => number) | null = () => 0;
  private live: Int32Array = new Int32Array(0);
  private member = 0;
  private sessionIds: Int32Array = new Int32Array(0);
  private accept: ((key: number) => boolean) | null = null;

  /** Starts a query: `numbering` numbers the sessions of the memories that may count. */
  begin(numbering: SessionNumbering): void {
    for (let i = 0; i < this.touchedCount; i++) this.total[this.touched[i]!] = 0;
    this.touchedCount = 0;
    this.inTermCount = 0;
    if (typeof numbering === 'function') {
      this.numbering = numbering;
      return;
    }
    this.numbering = null;
    this.live = numbering.live;
    this.member = numbering.member;
    this.sessionIds = numbering.sessions;
    this.accept = numbering.accept;
  }

  /** The session `key` counts in; 0 when none. */
  sessionOf(key: number): number {
    if (this.numbering) return this.numbering(key);
    if (key >= this.live.length || this.live[key] !== this.member) return 0;
    const s = this.sessionIds[key]!;
    return s !== 0 && (this.accept === null || this.accept(key)) ? s : 0;
  }

  beginTerm(): void {
    // The term numbers outlast any query: at 2^31 (months of a busy server) they start again from 1.
    if (this.term === 0x7fffffff) {
      this.bestTerm.fill(0);
      this.term = 0;
    }
    this.term++;
    this.inTermCount = 0;
  }

  add(key: number, score: number): void {
    const s = this.sessionOf(key);
    if (s === 0) return;
    if (s >= this.total.length) this.grow(s);
    if (this.bestTerm[s] !== this.term) {
      this.bestTerm[s] = this.term;
      this.best[s] = score;
      if (this.inTermCount === this.inTerm.length) this.inTerm = doubled(this.inTerm);
      this.inTerm[this.inTermCount++] = s;
    } else if (score < this.best[s]!) this.best[s] = score;
  }

  endTerm(): void {
    for (let i = 0; i < this.inTermCount; i++) {
      const s = this.inTerm[i]!;
      if (this.total[s] === 0) {
        if (this.touchedCount === this.touched.length) this.touched = doubled(this.touched);
        this.touched[this.touchedCount++] = s;
      }
      this.total[s]! += this.best[s]!;
    }
  }

  /** The session's score; 0 when none of its memories matched. */
  scoreOf(session: number): number {
    return session < this.total.length ? this.total[session]! : 0;
  }

  /**
   * Adds `weight ×` its session's score to every memory that `acc` holds as a match (a memory rewritten so
   * it no longer says any term sums back to 0 and gets nothing) and that belongs to a counted session.
   * Returns the share of a key that was a match (for the explain of the keys returned); it reads this
   * query's scores, so it is valid until the next `begin`.
   */
  spread(acc: Accumulator, weight: number): (key: number) => number {
    acc.forEachKey((key) => {
      const s = this.sessionOf(key);
      if (s === 0 || !isMatch(acc.get(key))) return;
      const share = weight * this.scoreOf(s);
      if (share !== 0) acc.add(key, share);
    });
    return (key) => {
      const s = this.sessionOf(key);
      return s === 0 ? 0 : weight * this.scoreOf(s);
    };
  }

  private grow(s: number): void {
    const cap = Math.max(s + 1, this.total.length * 2);
    const total = new Float64Array(cap);
    total.set(this.total);
    this.total = total;
    const best = new Float64Array(cap);
    best.set(this.best);
    this.best = best;
    const bestTerm = new Int32Array(cap);
    bestTerm.set(this.bestTerm);
    this.bestTerm = bestTerm;
  }
}

function doubled(a: Int32Array) {
  const b = new Int32Array(a.length * 2);
  b.set(a);
  return b;
}
