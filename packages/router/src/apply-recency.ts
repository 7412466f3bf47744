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
 *   peers (the close calls, found by recency-peers.ts); every other candidate gets `t = 0`;
 * - `'fixed'`: the caller's `exp(-age / tau)`, age from "now";
 * - `'off'`: nothing.
 * Returns the peers' span for the explain.
 */
export function applyRecency(
  fused: FusedCandidate[],
  opts: Pick<ResolvedSearch, 'decay' | 'now'>,
  plan: RecencyPlan,
  peers: ReadonlySet<number>,
): RecencySettings['peers'] {
  if (opts.decay.mode === 'fixed') {
    for (const c of fused) setRecency(c, recencyFactor(opts.now, c.memory.ts, opts.decay));
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
    const t = peers.has(c.key) ? timeAffinity(c.memory.ts, span, plan.intent) : 0;
    setRecency(c, blendFactor(plan.weight, t));
  }
  return span.count > 0 ? span : null;
}

function setRecency(c: FusedCandidate, recency: number): void {
  c.recency = recency;
  c.parts.recency = recency;
  rescore(c);
}
