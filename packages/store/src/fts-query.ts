import { identifierParts, isQueryStopWord, rawTokens } from '@cairn/core';

/**
 * Turns any user string into a valid FTS5 MATCH expression. Every term is emitted as a double-quoted
 * FTS5 string built only from letters, digits and underscores, so operators (AND OR NOT NEAR - + * : ^
 * parentheses, quotes) in the input can never reach the FTS5 parser as syntax.
 */
export interface FtsQueryPlan {
  /** Rendered terms, e.g. `"parseconfig"`, `"parse config"`, `"src auth middleware ts"`. */
  terms: string[];
  /** Terms removed as stop words. */
  stopWords: string[];
}

export interface FtsQueryOptions {
  /** Upper bound on terms, so a pasted essay cannot fan out into thousands of postings. @defaultValue 32 */
  maxTerms: number;
}

export const DEFAULT_FTS_QUERY_OPTIONS: Readonly<FtsQueryOptions> = Object.freeze({ maxTerms: 32 });

const quote = (tokens: readonly string[]) => `"${tokens.join(' ')}"`;

export function planFtsQuery(query: string, opts: FtsQueryOptions = DEFAULT_FTS_QUERY_OPTIONS): FtsQueryPlan {
  const words: string[] = [];
  const phrases: string[] = [];
  for (const chunk of query.split(/\s+/)) {
    const raw = rawTokens(chunk);
    if (raw.length === 0) continue;
    const lowered = raw.map((t) => t.toLowerCase());
    // A chunk such as src/auth/middleware.ts or auth-middleware: the whole path as a phrase ranks exact
    // mentions first; its pieces (added below) still match partial mentions.
    if (lowered.length > 1) phrases.push(quote(lowered));
    for (const [i, token] of raw.entries()) {
      words.push(lowered[i]!);
      const parts = identifierParts(token);
      if (parts.length > 1) phrases.push(quote(parts));
    }
  }
  const content = words.filter((w) => !isQueryStopWord(w));
  const stopWords = words.filter((w) => isQueryStopWord(w));
  // A query made only of stop words ("what is it") still deserves an answer: keep them then.
  const kept = content.length > 0 ? content : words;
  const terms = [...new Set([...kept.map((w) => quote([w])), ...phrases])].slice(0, opts.maxTerms);
  return { terms, stopWords: content.length > 0 ? [...new Set(stopWords)] : [] };
}

/**
 * ORs the terms, confined by the namespace token and filter clauses when given; returns null when nothing
 * searchable is left.
 */
export function renderFtsQuery(
  terms: readonly string[],
  scopeToken?: string,
  clauses: readonly string[] = [],
): string | null {
  if (terms.length === 0) return null;
  const body = terms.join(' OR ');
  const all = [...(scopeToken ? [`scope : "${scopeToken}"`] : []), ...clauses];
  return all.length > 0 ? `${all.join(' AND ')} AND (${body})` : body;
}
