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
  if (o200k === null) o200k = (createRequire(import.meta.url)('gpt-tokenizer') as Tokenizer).countTokens;
  // A memory's text is data, not a prompt: a special token's spelling in it ("<|endoftext|>") is counted as
  // the text it is, where the tokenizer's default throws and failed the whole search.
  return o200k(text, AS_TEXT);
}

const AS_TEXT = Object.freeze({ disallowedSpecial: new Set<string>() });

/**
 * Counts by text. A search answers with the token count of each hit's full record, and the same records
 * come back query after query: tokenising them again was ~7% of a search's CPU. Bounded by total text
 * length (about 8 MiB of strings), so a few huge records cannot pin much memory.
 */
const cache = new LRUCache<string, number>({
  maxSize: 4_000_000,
  sizeCalculation: (_n, text) => Math.max(1, text.length),
});

/** Texts shorter than this are tokenised directly: caching them costs about as much as counting. */
const CACHE_FROM_CHARS = 64;

/** Whether this thread has loaded the tokenizer's tables (a diagnostic: see TokenizerThread). */
export function tokenizerLoaded(): boolean {
  return o200k !== null;
}

/**
 * Takes counts made elsewhere (by the same tokenizer, on a TokenizerThread) for these texts, into the same
 * bounded cache `countTokens` reads first, whatever their length.
 */
export function primeTokenCounts(texts: readonly string[], counts: readonly number[]): void {
  for (const [i, t] of texts.entries()) {
    const n = counts[i];
    if (n !== undefined && t.length > 0) cache.set(t, n);
  }
}

/**
 * Whether `countTokens(text)` would answer without tokenising (a cached or primed count, or empty). A known
 * count is marked as just used: a caller asks because it is about to read it, and a count left oldest
 * while a TokenizerThread counts the caller's other texts was the next one evicted by other searches'
 * counts, so the read that followed loaded the tables on the serving thread (a 0.13–0.22 s stall once a
 * server's cache had filled, about 30 s into a steady load).
 */
export function tokenCountKnown(text: string): boolean {
  return text.length === 0 || cache.get(text) !== undefined;
}

/**
 * Tokens of a text as current models count them (o200k_base: GPT-4o and later; other tokenizers land
 * within a few percent on English and code). Budgets are enforced on this count, so an agent can trust
 * `max_tokens`.
 */
export function countTokens(text: string): number {
  if (text.length === 0) return 0;
  let n = cache.get(text);
  if (n !== undefined) return n;
  n = o200kTokens(text);
  if (text.length >= CACHE_FROM_CHARS) cache.set(text, n);
  return n;
}

/**
 * `countTokens` past the cache: for a text counted once and never again (a tool's whole answer, checked
 * against its budget), which would only push the records' counts out of the cache.
 */
export function countTokensUncached(text: string): number {
  return text.length === 0 ? 0 : o200kTokens(text);
}
