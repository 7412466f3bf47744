import { CairnError } from '@cairn/core';

/**
 * The entries around a timeline's anchor that fit `budget` tokens together with it. Nearest neighbours
 * first, alternating sides (before, then after), so a tight budget keeps the closest context; a side stops
 * at its first entry that does not fit: a timeline has no holes. Without a budget everything is kept.
 *
 * The anchor is what the caller asked about, so it is never left out; a budget that cannot hold it alone
 * is refused (INVALID_INPUT naming max_tokens and the least that would do) rather than exceeded, so
 * `used <= budget` holds for every answer.
 *
 * @param before oldest first, as the engine reads them
 * @param after oldest first
 */
export function fitTimeline<T>(
  anchor: T,
  before: readonly T[],
  after: readonly T[],
  cost: (entry: T) => number,
  budget: number | undefined,
): { before: T[]; after: T[]; used: number; omitted: number } {
  let used = cost(anchor);
  if (budget !== undefined && used > budget)
    throw new CairnError(
      'INVALID_INPUT',
      `max_tokens ${budget} cannot hold the timeline's anchor, which it always shows: its index line is ${used} tokens; give max_tokens of at least ${used}`,
      { field: 'max_tokens', needed: used },
    );
  const sides = [
    { entries: [...before].reverse(), kept: [] as T[], open: true },
    { entries: [...after], kept: [] as T[], open: true },
  ];
  for (let i = 0; sides.some((s) => s.open && i < s.entries.length); i++) {
    for (const side of sides) {
      const e = side.entries[i];
      if (!side.open || e === undefined) continue;
      const c = cost(e);
      if (budget !== undefined && used + c > budget) side.open = false;
      else {
        side.kept.push(e);
        used += c;
      }
    }
  }
  const [b, a] = sides as [(typeof sides)[0], (typeof sides)[0]];
  return {
    before: b.kept.reverse(),
    after: a.kept,
    used,
    omitted: before.length + after.length - b.kept.length - a.kept.length,
  };
}

/**
 * A fitted timeline's entries in the order `fitTimeline` took them (nearest first, before then after at
 * each distance): the order to give them up in, from the end, when a caller must cut further.
 *
 * @param before oldest first
 * @param after oldest first
 */
export function nearestFirst<T>(before: readonly T[], after: readonly T[]): T[] {
  const b = [...before].reverse();
  const out: T[] = [];
  for (let i = 0; i < Math.max(b.length, after.length); i++) {
    if (i < b.length) out.push(b[i]!);
    if (i < after.length) out.push(after[i]!);
  }
  return out;
}
