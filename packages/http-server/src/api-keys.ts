import { readFileSync } from 'node:fs';
import { CairnError, NAMESPACE_PATTERN } from '@cairn/core';
import { NamespaceAccess } from '@cairn/service';

/** API keys and the namespaces each may read and write. */
export type ApiKeys = ReadonlyMap<string, NamespaceAccess>;

const PATTERN = new RegExp(`^(\\*|${NAMESPACE_PATTERN.source.replace(/^\^|\$$/g, '')}\\*?)$`);

/**
 * Parses `key1=nsA,nsB;key2=team/*` (CAIRN_API_KEYS, or the lines of a keys file: one `key=ns,…` per
 * line, `#` comments). A namespace ending in `*` is a prefix; `*` alone is every namespace.
 */
export function parseApiKeys(spec: string, source = 'CAIRN_API_KEYS'): ApiKeys {
  const keys = new Map<string, NamespaceAccess>();
  const entries = spec
    .split(/[;\n]/)
    .map((l) => l.replace(/#.*$/, '').trim())
    .filter(Boolean);
  for (const entry of entries) {
    const eq = entry.indexOf('=');
    const key = entry.slice(0, eq).trim();
    const namespaces = entry
      .slice(eq + 1)
      .split(',')
      .map((n) => n.trim())
      .filter(Boolean);
    if (eq <= 0 || key.length < 8 || namespaces.length === 0)
      throw new CairnError(
        'INVALID_INPUT',
        `${source}: each entry is key=namespace[,namespace…] with a key of at least 8 characters`,
        { field: source },
      );
    for (const ns of namespaces)
      if (!PATTERN.test(ns))
        throw new CairnError('INVALID_INPUT', `${source}: "${ns}" is not a namespace or a prefix pattern`, {
          field: source,
        });
    if (keys.has(key))
      throw new CairnError('INVALID_INPUT', `${source}: a key is listed twice`, { field: source });
    keys.set(key, NamespaceAccess.of(namespaces));
  }
  return keys;
}

/** The keys from CAIRN_API_KEYS and/or the file named by CAIRN_API_KEYS_FILE; null when neither is set. */
export function loadApiKeys(env: { CAIRN_API_KEYS?: string; CAIRN_API_KEYS_FILE?: string }): ApiKeys | null {
  const parts: Array<[string, string]> = [];
  if (env.CAIRN_API_KEYS) parts.push([env.CAIRN_API_KEYS, 'CAIRN_API_KEYS']);
  if (env.CAIRN_API_KEYS_FILE) {
    let text: string;
    try {
      text = readFileSync(env.CAIRN_API_KEYS_FILE, 'utf8');
    } catch (err) {
      throw new CairnError(
        'NOT_FOUND',
        `CAIRN_API_KEYS_FILE: cannot read ${env.CAIRN_API_KEYS_FILE} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`,
        { field: 'CAIRN_API_KEYS_FILE' },
      );
    }
    parts.push([text, env.CAIRN_API_KEYS_FILE]);
  }
  if (parts.length === 0) return null;
  const all = new Map<string, NamespaceAccess>();
  for (const [spec, source] of parts) for (const [k, v] of parseApiKeys(spec, source)) all.set(k, v);
  return all;
}
