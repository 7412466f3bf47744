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

/**
 * Words that carry no topic in a question, on top of STOP_WORDS: the verb of "which ORM do we use?" or
 * "what are we using for email?". The question asks for the ORM; a memory that says "the marketing team
 * used it" shares the verb, not the topic, yet outranked the newest statement of the ORM, which says
 * "moved the ORM onto Drizzle" (bench/RESULTS.md, the recency set). The SMART stop list (Salton) has the
 * same words. Queries only: memory texts keep them, so the hashing embedder's vectors do not change.
 */
const QUERY_STOP_WORDS: ReadonlySet<string> = new Set(['use', 'used', 'uses', 'using']);

/** A word the legs leave out of a query (STOP_WORDS and QUERY_STOP_WORDS). */
export function isQueryStopWord(term: string): boolean {
  return STOP_WORDS.has(term) || QUERY_STOP_WORDS.has(term);
}
