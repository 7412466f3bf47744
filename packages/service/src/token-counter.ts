import { createRequire } from 'node:module';
import { LRUCache } from 'lru-cache';

type Tokenizer = typeof import('gpt-tokenizer');
let o200k: Tokenizer['countTokens'] | null = null;

/**
 * The o200k tokenizer, loaded on the first count. Its tables take about 0.3 s to load, and most one-shot
 * commands (`cairn add`, `ingest`, `stats`, a capture hook) never count a token. A synchronous require
 * (of the package's CommonJS build) keeps `countTokens` synchronous for its callers.
 */
function o200kTokens(text: string): number {
  o200k ??= (createRequire(import.meta.url)('gpt-tokenizer') as Tokenizer).countTokens;
  return o200k(text);
}

/**
 * Counts by text. A search answers with the token count of each hit's full record, and the same records
 * come back query after query: tokenising them again was ~7% of a search's CPU. Bounded by total text
 * length (about 8 MiB of strings), so a few huge records cannot pin much memory.
 */
const counts = new LRUCache<string, number>({
  maxSize: 4_000_000,
  sizeCalculation: (_n, text) => Math.max(1, text.length),
});

/** Texts shorter than this are tokenised directly: caching them costs about as much as counting. */
const CACHE_FROM_CHARS = 64;

/**
 * Tokens of a text as current models count them (o200k_base: GPT-4o and later; other tokenizers land
 * within a few percent on English and code). Budgets are enforced on this count, so an agent can trust
 * `max_tokens`.
 */
export function countTokens(text: string): number {
  if (text.length === 0) return 0;
  if (text.length < CACHE_FROM_CHARS) return o200kTokens(text);
  let n = counts.get(text);
  if (n === undefined) {
    n = o200kTokens(text);
    counts.set(text, n);
  }
  return n;
}
