import { type FusedCandidate, rescore } from './fuse-candidates.js';

const WORD_RE = /[\p{L}\p{N}]+/gu;

/**
 * A query that names who said or did something ("What did Caroline paint?", "what did the deploy-bot
 * report?") is most likely answered by that agent's own memories. A memory whose `agent` the query names
 * (every word of the agent's name appears among the query's words, case-insensitive) has its legs' RRF
 * multiplied by `1 + boost`, shown as `parts.agent`. A query naming no agent keeps its order; memories
 * without an agent are never boosted.
 */
export function applyNamedAgent(fused: readonly FusedCandidate[], query: string, boost: number): void {
  if (!(boost > 0) || fused.length === 0) return;
  const words = new Set(query.toLowerCase().match(WORD_RE) ?? []);
  if (words.size === 0) return;
  const named = new Map<string, boolean>();
  for (const c of fused) {
    const agent = c.memory.agent;
    if (agent === null) continue;
    let hit = named.get(agent);
    if (hit === undefined) {
      const parts = agent.toLowerCase().match(WORD_RE) ?? [];
      hit = parts.length > 0 && parts.every((p) => words.has(p));
      named.set(agent, hit);
    }
    if (!hit) continue;
    c.parts.agent = 1 + boost;
    rescore(c);
  }
}
