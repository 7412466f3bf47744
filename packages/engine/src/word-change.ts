/**
 * How far apart two texts are as sequences of words, for the consolidation job: a vector's cosine does not
 * see word order (the built-in hashing embedder holds which words a text has, so "copied production into
 * staging" and "copied staging into production" are at cosine 1) and barely sees a negation (nor do most
 * learned embedders), while a near-duplicate says the same words in the same order, give or take a few.
 */

/** Words whose presence turns a statement around: two texts differing in them are not duplicates. */
const NEGATIONS: ReadonlySet<string> = new Set([
  'not',
  'no',
  'never',
  'none',
  'nothing',
  'nobody',
  'neither',
  'nor',
  'cannot',
  'without',
  "n't",
]);

/** Lower-cased words; a contraction's "n't" is a word of its own ("don't" → "do", "n't"). */
export function wordsOf(text: string): string[] {
  const out: string[] = [];
  for (const w of text
    .toLowerCase()
    .replace(/[’‘]/g, "'")
    .match(/[\p{L}\p{N}']+/gu) ?? []) {
    const bare = w.replace(/^'+|'+$/g, '');
    if (!bare) continue;
    if (bare.endsWith("n't") && bare.length > 3) out.push(bare.slice(0, -3), "n't");
    else out.push(bare);
  }
  return out;
}

function negationCount(words: readonly string[]): number {
  let n = 0;
  for (const w of words) if (NEGATIONS.has(w)) n++;
  return n;
}

/**
 * Whether `b` says `a`'s words in `a`'s order, with at most `maxChange` of the longer one's words inserted,
 * deleted or replaced (a word-level edit distance), and as many negations. Costs O(words × allowed edits).
 */
export function saysTheSameWords(a: string, b: string, maxChange: number): boolean {
  const x = wordsOf(a);
  const y = wordsOf(b);
  if (negationCount(x) !== negationCount(y)) return false;
  const allowed = Math.floor(maxChange * Math.max(x.length, y.length));
  return editDistanceWithin(x, y, allowed);
}

/** Levenshtein distance over words ≤ `k`, computed in the band |i − j| ≤ k with an early exit. */
export function editDistanceWithin(x: readonly string[], y: readonly string[], k: number): boolean {
  if (Math.abs(x.length - y.length) > k) return false;
  const inf = k + 1;
  let prev = new Array<number>(y.length + 1).fill(inf);
  let cur = new Array<number>(y.length + 1).fill(inf);
  for (let j = 0; j <= Math.min(y.length, k); j++) prev[j] = j;
  for (let i = 1; i <= x.length; i++) {
    const from = Math.max(1, i - k);
    const to = Math.min(y.length, i + k);
    // Only the band is computed: the cells just outside it are read as "too far", wherever this row's
    // array held a value two rows ago (a fill of the whole row made it O(words²)).
    cur[0] = i <= k ? i : inf;
    if (from > 1) cur[from - 1] = inf;
    let best = cur[0]!;
    for (let j = from; j <= to; j++) {
      cur[j] = Math.min(prev[j - 1]! + (x[i - 1] === y[j - 1] ? 0 : 1), prev[j]! + 1, cur[j - 1]! + 1, inf);
      if (cur[j]! < best) best = cur[j]!;
    }
    if (to < y.length) cur[to + 1] = inf;
    if (best > k) return false;
    [prev, cur] = [cur, prev];
  }
  return prev[y.length]! <= k;
}
