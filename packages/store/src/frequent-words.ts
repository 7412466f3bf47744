import { identifierParts, isQueryStopWord, rawTokens } from '@cairn/core';

/**
 * The words said by at least `minMatches` of `texts`, most frequent first (ties by spelling), stop words
 * left out, at most `maxWords`: the candidates for warming a namespace's common words. A word counts under
 * its lower-case form; a compound identifier (`readGraphSearch`, `read_graph`) also under its raw form, whose
 * plan adds the phrase of its parts ("read graph search"): a query naming the identifier scores that phrase
 * too, walking its common parts' positions (20–50 ms at 100k when cold), so a common one is worth scoring
 * ahead as much as a common word.
 */
export function frequentWords(
  texts: readonly string[],
  opts: { minMatches: number; maxWords: number },
): string[] {
  const df = new Map<string, number>();
  for (const text of texts) {
    const seen = new Set<string>();
    for (const raw of rawTokens(text)) {
      seen.add(raw.toLowerCase());
      if (identifierParts(raw).length > 1) seen.add(raw);
    }
    for (const w of seen) df.set(w, (df.get(w) ?? 0) + 1);
  }
  return [...df]
    .filter(([w, n]) => n >= opts.minMatches && !isQueryStopWord(w))
    .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
    .slice(0, opts.maxWords)
    .map(([w]) => w);
}
