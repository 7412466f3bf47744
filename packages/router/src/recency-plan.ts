import {
  blendWeight,
  NO_TEMPORAL_INTENT,
  type RecencySettings,
  type ResolvedSearch,
  type TemporalIntent,
} from '@cairn/core';
import type { RecencyPlan } from './apply-recency.js';
import { detectTemporalIntent, withoutTemporalCue } from './temporal-intent.js';

/**
 * In `'auto'` mode the reach, and so the blend weight, follows the query: the tie-break reach unless the
 * query has temporal intent. The other modes need no plan.
 */
export function planRecency(opts: ResolvedSearch): RecencyPlan {
  if (opts.decay.mode !== 'auto')
    return { weight: 0, reach: 0, intent: NO_TEMPORAL_INTENT, peerMargin: 0, peerDepth: 0 };
  const intent = detectTemporalIntent(opts.query, opts.now);
  const reach = intent.kind === 'none' ? opts.recency.tieBreak : opts.recency.intent;
  return {
    weight: blendWeight(reach, opts.rrfK),
    reach,
    intent,
    peerMargin: opts.recency.peerMargin,
    peerDepth: opts.recency.peerDepth,
  };
}

/** How age entered one search, for the explain. */
export function recencySettings(
  opts: ResolvedSearch,
  plan: RecencyPlan,
  peers: RecencySettings['peers'],
): RecencySettings {
  if (opts.decay.mode !== 'auto') {
    return { mode: opts.decay.mode, weight: null, reach: null, options: null, intent: null, peers: null };
  }
  return {
    mode: 'auto',
    weight: plan.weight,
    reach: plan.reach,
    options: opts.recency,
    intent: plan.intent,
    peers,
  };
}

/**
 * The two readings of a query. `topicQuery` is what it asks about, without when: the words the relevance
 * signal, the close calls and a reranker judge. `legQuery` is what the lexical and vector legs search: the
 * topic for a recency cue, but the whole query when it names a time. People narrate a time in the words a
 * later question uses ("last weekend I volunteered at…", "on 9 November we…"), so a memory that says them is
 * likelier the one asked about, and the window's affinity does the rest. On the LoCoMo dev conversations,
 * dropping them lost the turns that said "last weekend" and "the week before" (bench/RESULTS.md).
 */
export function queriesOf(query: string, intent: TemporalIntent): { topicQuery: string; legQuery: string } {
  const topicQuery = withoutTemporalCue(query, intent);
  return { topicQuery, legQuery: intent.kind === 'window' ? query : topicQuery };
}
