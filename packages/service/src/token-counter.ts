import { countTokens as o200kTokens } from 'gpt-tokenizer';

/**
 * Tokens of a text as current models count them (o200k_base: GPT-4o and later; other tokenizers land
 * within a few percent on English and code). Budgets are enforced on this count, so an agent can trust
 * `max_tokens`.
 */
export function countTokens(text: string): number {
  return text.length === 0 ? 0 : o200kTokens(text);
}
