import { createHash } from 'node:crypto';
import { DEFAULT_INPUT_LIMITS, NAMESPACE_PATTERN } from '@cairn/core';

/** Eight hex digits of SHA-256: enough to tell apart the repositories of one machine. */
export function shortHash(s: string): string {
  return createHash('sha256').update(s).digest('hex').slice(0, 8);
}

/**
 * `prefix` + `raw`, made into a valid namespace (core's NAMESPACE_PATTERN, at most maxNamespaceChars):
 * characters outside the pattern become `-`, empty path segments go, and a name too long is cut and
 * suffixed with a hash of the whole so two long names never collide. Null when nothing usable remains.
 */
export function toNamespace(prefix: string, raw: string): string | null {
  const clean = (s: string) =>
    s
      .replace(/[^A-Za-z0-9._:@/-]+/g, '-')
      .split('/')
      .map((seg) => seg.replace(/^[-.]+|[-.]+$/g, ''))
      .filter((seg) => seg.length > 0)
      .join('/');
  let name = clean(raw);
  if (!name) return null;
  const room = DEFAULT_INPUT_LIMITS.maxNamespaceChars - prefix.length;
  if (name.length > room) name = `${clean(name.slice(0, room - 9))}-${shortHash(raw)}`;
  const ns = `${prefix}${name}`;
  return NAMESPACE_PATTERN.test(ns) ? ns : null;
}
