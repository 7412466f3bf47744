import { createHash } from 'node:crypto';

/**
 * The FTS token standing for a namespace: a fixed-length hex digest, because namespace names contain
 * characters (`/`, `:`, `.`) that the tokenizer would split. 64 bits make collisions negligible, and a
 * collision would only cost speed: every query is also filtered on the namespace column.
 */
export function scopeToken(namespace: string): string {
  return `ns${createHash('sha256').update(namespace).digest('hex').slice(0, 16)}`;
}
