import type { Boost, KeyedMemory } from '@cairn/core';
import { type FusedCandidate, rescore } from './fuse-candidates.js';

/** Whether a memory is about `path`: a prefix of `meta.path` or of one of `meta.files`, or said in its text. */
function aboutPath(m: KeyedMemory, path: string): boolean {
  const meta = m.meta as { path?: unknown; files?: unknown };
  if (typeof meta.path === 'string' && meta.path.startsWith(path)) return true;
  if (Array.isArray(meta.files) && meta.files.some((f) => typeof f === 'string' && f.startsWith(path)))
    return true;
  return m.text.includes(path);
}

/** The product of the factors of the boosts `m` matches (1: none). */
export function boostFactor(m: KeyedMemory, boosts: readonly Boost[]): number {
  let factor = 1;
  for (const b of boosts) {
    if (b.tag !== undefined && !m.tags.includes(b.tag)) continue;
    if (b.kind !== undefined && m.kind !== b.kind) continue;
    if (b.agent !== undefined && m.agent !== b.agent) continue;
    if (b.path !== undefined && !aboutPath(m, b.path)) continue;
    factor *= b.factor;
  }
  return factor;
}

/**
 * Multiplies each candidate's score by its boost factor (shown as `parts.boost`). Needs the candidates'
 * records (tags, meta, text); the caller reads them only when the query has boosts.
 */
export function applyBoosts(
  fused: FusedCandidate[],
  boosts: readonly Boost[],
  records: ReadonlyMap<number, KeyedMemory>,
): void {
  if (boosts.length === 0) return;
  for (const c of fused) {
    const m = records.get(c.key);
    if (!m) continue;
    c.parts.boost = boostFactor(m, boosts);
    rescore(c);
  }
}
