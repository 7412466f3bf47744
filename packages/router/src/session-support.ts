import { type FusedCandidate, relevance, rescore } from './fuse-candidates.js';

/**
 * Session support: a memory whose session also holds another strong candidate gains a share of that
 * candidate's relevance. A question is usually answered inside one conversation, and a session where
 * several memories match the query is more likely the one it asks about than a session where one memory
 * matches by chance; multi-hop questions, whose evidence is spread over a session's turns, gain most.
 *
 * The support of a candidate is `weight × ` the best relevance among the *other* candidates of its session
 * (so a lone match gets none, and support never exceeds `weight ×` the best candidate of the search). It is
 * added to the candidate's relevance before age and importance, and shown as `parts.session`. Only fused
 * candidates count: they are already confined to the namespace, its live memories and the filters, so
 * support never carries anything across a namespace or past a filter. Memories without a session get none.
 */
export function applySessionSupport(fused: readonly FusedCandidate[], weight: number): void {
  if (!(weight > 0) || fused.length < 2) return;
  // The best and second best relevance per session: a candidate's support comes from the best other one.
  const best = new Map<string, { first: number; second: number; firstKey: number }>();
  for (const c of fused) {
    const s = c.memory.session;
    if (s === null) continue;
    const r = relevance(c);
    const b = best.get(s);
    if (!b) best.set(s, { first: r, second: 0, firstKey: c.key });
    else if (r > b.first) {
      b.second = b.first;
      b.first = r;
      b.firstKey = c.key;
    } else if (r > b.second) b.second = r;
  }
  for (const c of fused) {
    const b = c.memory.session === null ? undefined : best.get(c.memory.session);
    if (!b) continue;
    const other = b.firstKey === c.key ? b.second : b.first;
    if (other > 0) {
      c.parts.session = weight * other;
      rescore(c);
    }
  }
}
