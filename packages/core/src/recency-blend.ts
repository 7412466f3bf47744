/**
 * Recency in the default (`decay: 'auto'`) mode: a bounded blend among close calls.
 *
 * The score is `rrf × importance × (1 − w + w · t)`, with `t` in [0, 1] the memory's time affinity and
 * `w` the blend weight. Since `t` stays in [0, 1], age moves a score by at most the factor `1 − w`, so
 * `w` is set by how far down a leg age may reach: with the RRF constant `k`, rank `1 + reach` scores
 * `(k + 1) / (k + 1 + reach)` of rank 1, and `w = reach / (k + 1 + reach)` makes that exactly the most age
 * can take away. A lead of more ranks than the reach, at the top of a leg, is never overturned by age.
 *
 * Only close calls get the benefit of age: the peers, memories that some leg ranks in its top `peerDepth`
 * and that contain as much of the query's words (idf-weighted) as the best of those (the router's
 * recency-peers.ts). Among the peers the newest gets `t = 1` and the oldest `t = 0`, linearly in time
 * between; every other candidate gets `t = 0`, so all of them share the factor `1 − w` and age never lifts
 * a memory that no leg ranks in its top `peerDepth` above one it did not lift. Counting time only among
 * the peers keeps the rule free of any time scale and of "now": a coding session's minutes and a
 * conversation's months are ordered alike, the ranking does not drift as a corpus ages, and a newer memory
 * that merely shares a word with the query cannot ride age past the ones that answer it.
 *
 * A query that names a time ("on 9 November, 2022", "last week") is different: the window is the caller's
 * own criterion, fixed in time, so every candidate gets its distance from it, not only the peers (the
 * router's apply-recency.ts); the reach still bounds how far it lifts one.
 */

/** What a query says about time; detected by the router, used by the blend. */
export type TemporalIntent =
  | { kind: 'none' }
  /** The query asks for the latest or current state ("current deploy target", "what did we decide last?"). */
  | { kind: 'recent'; cue: string }
  /** The query asks for the first or an earlier state ("why did we originally pick X?"): the oldest peer gets 1. */
  | { kind: 'earliest'; cue: string }
  /** The query names a time ("last week", "on 7 March 2024", "in May 2023"): [since, until) in epoch ms. */
  | { kind: 'window'; cue: string; since: number; until: number };

export const NO_TEMPORAL_INTENT: TemporalIntent = Object.freeze({ kind: 'none' });

/** The `'auto'` mode's settings: how far age may reach, and who counts as a close call. */
export interface RecencyOptions {
  /** Without temporal intent: how many ranks age may overturn among peers. @defaultValue 8 */
  tieBreak: number;
  /** With temporal intent (recent, earliest, or a named time). @defaultValue 20 */
  intent: number;
  /**
   * A contender (top `peerDepth` of some leg) is a peer when its query-word coverage is at least
   * `1 − peerMargin` of the best contender's. 0: it covers the same words. @defaultValue 0
   */
  peerMargin: number;
  /**
   * Peers come from the top `peerDepth` of some leg. Every other candidate gets the same factor `1 − w`, so
   * age never lifts a memory that no leg ranks in its top `peerDepth` above one that it did not lift (a
   * named time's window counts for every candidate instead).
   * @defaultValue 5
   */
  peerDepth: number;
}

export const DEFAULT_RECENCY_OPTIONS: Readonly<RecencyOptions> = Object.freeze({
  tieBreak: 8,
  intent: 20,
  peerMargin: 0,
  peerDepth: 5,
});

/** The blend weight `w` that lets age overturn a lead of at most `reach` ranks at the top of a leg. */
export function blendWeight(reach: number, rrfK: number): number {
  if (!(reach > 0)) return 0;
  return reach / (rrfK + 1 + reach);
}

/** The time span of the peers of the best candidate. */
export interface PeerSpan {
  newest: number;
  oldest: number;
}

/**
 * The time affinity `t` in [0, 1].
 * - A window: 1 inside `[since, until)`; outside, it halves with every window length of distance, so
 *   "on 7 March" prefers the 6th and 8th over last year, and a window nothing falls in changes little
 *   (every candidate is far from it).
 * - Earliest: the oldest peer 1, the newest 0, linear between.
 * - Otherwise: the newest peer 1, the oldest 0, linear between.
 * Peers all of one time get 1: nothing to break. Callers give non-peers 0 except for a window (see the header).
 */
export function timeAffinity(tsMs: number, peers: PeerSpan, intent: TemporalIntent): number {
  if (intent.kind === 'window') {
    const distance =
      tsMs < intent.since ? intent.since - tsMs : tsMs >= intent.until ? tsMs - intent.until : 0;
    if (distance === 0) return 1;
    return 2 ** (-distance / (intent.until - intent.since));
  }
  const span = peers.newest - peers.oldest;
  if (!(span > 0)) return 1;
  const fromOldest = Math.min(1, Math.max(0, (tsMs - peers.oldest) / span));
  return intent.kind === 'earliest' ? 1 - fromOldest : fromOldest;
}

/** The multiplier `1 − w + w · t`, in [1 − w, 1]. */
export function blendFactor(weight: number, affinity: number): number {
  return 1 - weight + weight * affinity;
}
