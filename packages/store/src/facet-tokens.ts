import { createHash } from 'node:crypto';
import type { SearchFilters } from '@cairn/core';
import { scopeToken } from './scope-token.js';

/**
 * Filter facets as FTS tokens. Each memory's `scope` column (bm25 weight 0) holds its namespace token plus
 * one token per kind, agent, session, tag and week of its timestamp, so a filtered search narrows the
 * match inside FTS5 (an AND of doclists) instead of joining every match to the memories table. Tokens are
 * hex digests because values may hold characters the tokenizer splits. Week granularity is coarse on
 * purpose (few tokens per window); exact bounds are still checked on the winners.
 */
const WEEK_MS = 7 * 86_400_000;
/** A time window spanning more weeks than this is not expressed in FTS (too many OR terms to help). */
const MAX_WEEK_TOKENS = 64;

const cache = new Map<string, string>();

function facetToken(prefix: 'k' | 'a' | 's' | 't' | 'f', value: string): string {
  const id = `${prefix}\u0000${value}`;
  let token = cache.get(id);
  if (token === undefined) {
    token = `${prefix}${createHash('sha256').update(value).digest('hex').slice(0, 12)}`;
    if (cache.size >= 50_000) cache.clear();
    cache.set(id, token);
  }
  return token;
}

const weekToken = (ts: number) => `w${Math.floor(ts / WEEK_MS)}`;

/** The `scope` column text of a memory. */
export function scopeText(m: {
  namespace: string;
  kind: string;
  agent: string | null;
  session: string | null;
  tags: readonly string[];
  ts: number;
  /** A fact's slot (`meta.slot`). */
  slot?: string | null;
}): string {
  const tokens = [scopeToken(m.namespace), facetToken('k', m.kind), weekToken(m.ts)];
  if (m.agent !== null) tokens.push(facetToken('a', m.agent));
  if (m.session !== null) tokens.push(facetToken('s', m.session));
  for (const t of m.tags) tokens.push(facetToken('t', t));
  if (typeof m.slot === 'string') tokens.push(facetToken('f', m.slot));
  return tokens.join(' ');
}

/** FTS5 clauses (to AND with the query) that every memory passing `filters` satisfies. */
export function facetClauses(filters: SearchFilters): string[] {
  const anyOf = (tokens: string[]) => `scope : (${tokens.map((t) => `"${t}"`).join(' OR ')})`;
  const clauses: string[] = [];
  if (filters.kinds?.length) clauses.push(anyOf(filters.kinds.map((v) => facetToken('k', v))));
  if (filters.agents?.length) clauses.push(anyOf(filters.agents.map((v) => facetToken('a', v))));
  if (filters.sessions?.length) clauses.push(anyOf(filters.sessions.map((v) => facetToken('s', v))));
  if (filters.tags?.length) clauses.push(anyOf(filters.tags.map((v) => facetToken('t', v))));
  if (filters.slots?.length) clauses.push(anyOf(filters.slots.map((v) => facetToken('f', v))));
  if (filters.since !== undefined && filters.until !== undefined) {
    const first = Math.floor(filters.since / WEEK_MS);
    const last = Math.floor((filters.until - 1) / WEEK_MS);
    if (last < first) clauses.push('scope : "w_none"');
    else if (last - first < MAX_WEEK_TOKENS) {
      clauses.push(anyOf(Array.from({ length: last - first + 1 }, (_, i) => `w${first + i}`)));
    }
  }
  return clauses;
}
