import type { Accumulator, TermVisitor } from './term-postings.js';

/**
 * Sessions scored as documents: a session's score is the sum, over the query's terms, of the best
 * contribution any of its memories makes to that term (bm25 units, negative: lower is better). A session
 * whose memories between them say most of the query's words scores high even when no single memory says
 * them all — the case of a multi-hop question, or of a question answered across a few turns.
 *
 * Sessions are numbers given by `sessionOf` (0: no session, or not a live memory of the namespace searched,
 * which is never counted), so nothing crosses a namespace: only the namespace's own live memories add to
 * a session, and only they receive its score.
 */
export class SessionMatch implements TermVisitor {
  private total = new Float64Array(64);
  private best = new Float64Array(64);
  /** The term each session's `best` belongs to (1-based; 0: not seen yet). */
  private bestTerm = new Int32Array(64);
  private term = 0;
  private readonly inTerm: number[] = [];

  constructor(private readonly sessionOf: (key: number) => number) {}

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
    for (const s of this.inTerm) this.total[s]! += this.best[s]!;
  }

  /** The session's score; 0 when none of its memories matched. */
  scoreOf(session: number): number {
    return session < this.total.length ? this.total[session]! : 0;
  }

  /**
   * Adds `weight ×` its session's score to every memory summed in `acc` that belongs to a session, and
   * returns each key's share (for the explain of the few keys returned; 0 for keys without a session).
   */
  spread(acc: Accumulator, weight: number): (key: number) => number {
    const { sessionOf } = this;
    acc.forEachKey((key) => {
      const s = sessionOf(key);
      if (s !== 0) {
        const share = weight * this.scoreOf(s);
        if (share !== 0) acc.add(key, share);
      }
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
