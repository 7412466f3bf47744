import { type Accumulator, isMatch } from './score-accumulator.js';
import type { TermVisitor } from './term-postings.js';

/**
 * Sessions scored as documents: a session's score is the sum, over the query's terms, of the best
 * contribution any of its memories makes to that term (bm25 units, negative: lower is better). A session
 * whose memories between them say most of the query's words scores high even when no single memory says
 * them all — the case of a multi-hop question, or of a question answered across a few turns.
 *
 * Sessions are numbers given by `sessionOf` (0: no session, or not a live memory of the namespace searched
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
  private readonly inTerm: number[] = [];
  /** Sessions with a non-zero total, to reset on `clear`. */
  private readonly touched: number[] = [];
  private sessionOf: (key: number) => number = () => 0;

  /** Starts a query: `sessionOf` numbers the sessions of the memories that may count. */
  begin(sessionOf: (key: number) => number): void {
    for (const s of this.touched) this.total[s] = 0;
    this.touched.length = 0;
    this.inTerm.length = 0;
    this.sessionOf = sessionOf;
  }

  beginTerm(): void {
    this.term++;
    this.inTerm.length = 0;
  }

  add(key: number, score: number): void {
    const s = this.sessionOf(key);
    if (s === 0) return;
    if (s >= this.total.length) this.grow(s);
    if (this.bestTerm[s] !== this.term) {
      this.bestTerm[s] = this.term;
      this.best[s] = score;
      this.inTerm.push(s);
    } else if (score < this.best[s]!) this.best[s] = score;
  }

  endTerm(): void {
    for (const s of this.inTerm) {
      if (this.total[s] === 0) this.touched.push(s);
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
    const { sessionOf } = this;
    acc.forEachKey((key) => {
      const s = sessionOf(key);
      if (s === 0 || !isMatch(acc.get(key))) return;
      const share = weight * this.scoreOf(s);
      if (share !== 0) acc.add(key, share);
    });
    return (key) => {
      const s = sessionOf(key);
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
