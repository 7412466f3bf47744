import {
  blendFactor,
  type RecencySettings,
  type ResolvedSearch,
  recencyFactor,
  type TemporalIntent,
  timeAffinity,
} from '@cairn/core';
import { type FusedCandidate, rescore } from './fuse-candidates.js';

/** How age enters one search: the router's plan, reported back in the explain. */
export interface RecencyPlan {
  /** The `'auto'` blend weight w; 0 in the other modes. */
  weight: number;
  reach: number;
  intent: TemporalIntent;
  /** See RecencyOptions.peerMargin and peerDepth. */
  peerMargin: number;
  peerDepth: number;
}

/**
 * Multiplies each candidate's relevance by its recency factor, in the search's decay mode:
 * - `'auto'`: the bounded blend `1 − w + w · t` (recency-blend.ts in core), `t` from the time span of the
 *   peers (the close calls, found by recency-peers.ts), every other candidate getting `t = 0`; a query
 *   that names a time gives every candidate its distance from that window instead;
 * - `'fixed'`: the caller's `exp(-age / tau)`, age from "now";
 * - `'off'`: nothing.
 * A kind listed in `kindHalfLives` uses its own curve instead of the fixed one, and in `'auto'` mode its
 * curve multiplies in on top of the blend (a session summary that ages in days beside timeless facts).
 * Returns the peers' span for the explain.
 */
export function applyRecency(
  fused: FusedCandidate[],
  opts: Pick<ResolvedSearch, 'decay' | 'now'> & Partial<Pick<ResolvedSearch, 'kindHalfLives'>>,
  plan: RecencyPlan,
  peers: ReadonlySet<number>,
): RecencySettings['peers'] {
  const kinds = opts.kindHalfLives ?? {};
  if (opts.decay.mode === 'fixed') {
    for (const c of fused) {
      const own = kindHalfLife(kinds, c.memory.kind);
      setRecency(
        c,
        own === undefined
          ? recencyFactor(opts.now, c.memory.ts, opts.decay)
          : kindCurve(opts.now, c.memory.ts, own),
      );
    }
    return null;
  }
  if (opts.decay.mode !== 'auto' || fused.length === 0) return null;
  const span = { newest: Number.NEGATIVE_INFINITY, oldest: Number.POSITIVE_INFINITY, count: 0 };
  for (const c of fused) {
    if (!peers.has(c.key)) continue;
    span.count++;
    span.newest = Math.max(span.newest, c.memory.ts);
    span.oldest = Math.min(span.oldest, c.memory.ts);
  }
  for (const c of fused) {
    // A named time is the caller's own criterion, not a tie-break: every candidate gets its distance from
    // the window, not only the close calls (a turn of the named day that no leg ranks in its top 5 was
    // never lifted before; LoCoMo dev recall@10 0.758 -> 0.763 with this alone, bench/RESULTS.md). The reach
    // still bounds how many ranks it can overturn.
    const t =
      plan.intent.kind === 'window' || peers.has(c.key) ? timeAffinity(c.memory.ts, span, plan.intent) : 0;
    const own = kindHalfLife(kinds, c.memory.kind);
    setRecency(
      c,
      blendFactor(plan.weight, t) * (own === undefined ? 1 : kindCurve(opts.now, c.memory.ts, own)),
    );
  }
  return span.count > 0 ? span : null;
}

/** The kind's own half-life; an own property only, so a kind named `constructor` is just a kind. */
function kindHalfLife(
  kinds: Readonly<Record<string, number | 'off'>>,
  kind: string,
): number | 'off' | undefined {
  return Object.hasOwn(kinds, kind) ? kinds[kind] : undefined;
}

/** A kind's own curve: `exp(−age · ln2 / halfLife)` from now (1 for `'off'`; the future counts as now). */
function kindCurve(now: number, ts: number, halfLife: number | 'off'): number {
  if (halfLife === 'off') return 1;
  return Math.exp((-Math.max(0, now - ts) * Math.LN2) / halfLife);
}

function setRecency(c: FusedCandidate, recency: number): void {
  c.recency = recency;
  c.parts.recency = recency;
  rescore(c);
}
