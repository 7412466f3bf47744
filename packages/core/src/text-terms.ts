/**
 * Code-aware term extraction shared by the lexical index, the query sanitizer and the hashing embedder,
 * so that all three agree on what a "word" is.
 *
 * A token is a run of letters, digits and underscores (the FTS5 tokenizer is configured with
 * `tokenchars '_'` to match). `parse_config` and `parseConfig` stay whole as tokens, so exact identifiers
 * match exactly, and their parts (`parse`, `config`) are emitted separately so they match partial queries.
 */
const TOKEN_RE = /[\p{L}\p{N}_]+/gu;
const IDENT_PART_RE = /\p{Lu}?\p{Ll}+|\p{Lu}+(?!\p{Ll})|\p{N}+|\p{Lo}+/gu;
/** A token identifierParts leaves whole: lower-case letters only, or a capital and lower-case letters. */
const PLAIN_WORD = /^\p{Lu}?\p{Ll}+$/u;

/** Lower-cased tokens of `text`, in order. */
export function tokenize(text: string): string[] {
  return (text.match(TOKEN_RE) ?? []).map((t) => t.toLowerCase());
}

/**
 * The parts of a compound identifier: `parseConfig` → [parse, config], `HTTPServer2` → [http, server, 2],
 * `parse_config` → [parse, config]. A plain word returns an empty array.
 */
export function identifierParts(rawToken: string): string[] {
  const pieces = rawToken.split('_').filter(Boolean);
  const parts: string[] = [];
  for (const piece of pieces) {
    const sub = piece.match(IDENT_PART_RE);
    if (sub && sub.length > 1) parts.push(...sub);
    else parts.push(piece);
  }
  return parts.length > 1 ? parts.map((p) => p.toLowerCase()) : [];
}

/** Raw (case-preserving) tokens; camelCase boundaries need the original case. */
export function rawTokens(text: string): string[] {
  return text.match(TOKEN_RE) ?? [];
}

/**
 * The text for the FTS `parts` column: the parts of every compound identifier in `text`, space-separated.
 * Kept in a low-weight column so that a document containing `parseConfig` is found by "config" but ranks
 * below documents that say "config" outright.
 */
export function codeParts(text: string): string {
  const out: string[] = [];
  for (const tok of rawTokens(text)) {
    // Most tokens are plain lower-case words, which have no parts: skip the split (it runs per token).
    if (PLAIN_WORD.test(tok)) continue;
    const parts = identifierParts(tok);
    if (parts.length > 0) out.push(parts.join(' '));
  }
  return out.join(' ');
}
