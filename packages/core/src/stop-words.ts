/**
 * English function words that carry no topical signal. Used by the lexical leg to prune queries (FTS5
 * scores every row that matches any term, so "the" in a query means scoring most of the corpus) and by
 * the hashing embedder to down-weight them. Contractions appear split, as the tokenizer splits them.
 */
export const STOP_WORDS: ReadonlySet<string> = new Set(
  (
    'a about above after again against all am an and any are as at be because been before being below between ' +
    'both but by can could did do does doing down during each few for from further had has have having he her ' +
    'here hers herself him himself his how i if in into is it its itself just me more most my myself no nor not ' +
    'now of off on once only or other our ours ourselves out over own same she should so some such than that the ' +
    'their theirs them themselves then there these they this those through to too under until up very was we ' +
    'were what when where which while who whom why will with would you your yours yourself yourselves s t d ll m ' +
    're ve don didn doesn isn wasn aren weren won wouldn couldn shouldn also get got let like may might must ' +
    'shall us via yes yeah oh ok okay'
  ).split(/\s+/),
);

export function isStopWord(term: string): boolean {
  return STOP_WORDS.has(term);
}
