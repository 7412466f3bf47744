import { createHash } from 'node:crypto';

/** Namespaces are few and repeat on every row and query: memoise their tokens (bounded). */
const cache = new Map<string, string>();
const CACHE_LIMIT = 10_000;

/**
 * The FTS token standing for a namespace: a fixed-length hex digest, because namespace names contain
 * characters (`/`, `:`, `.`) that the tokenizer would split. 64 bits make collisions negligible, and a
 * collision would only cost speed: every query is also filtered on the namespace column.
 */
export function scopeToken(namespace: string): string {
  let token = cache.get(namespace);
  if (token === undefined) {
    token = `ns${createHash('sha256').update(namespace).digest('hex').slice(0, 16)}`;
    if (cache.size >= CACHE_LIMIT) cache.clear();
    cache.set(namespace, token);
  }
  return token;
}
