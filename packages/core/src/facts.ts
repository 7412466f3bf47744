import { CairnError } from './errors.js';

/**
 * The id of the fact `(slot, key)`, so that writing the same slot and key again replaces the fact.
 *
 * It must be one-to-one: `fact:<slot>:<key>` alone is not, since (`user:home`, `city`) and (`user`,
 * `home:city`) both give `fact:user:home:city`, and the second write silently replaced the first. A slot
 * without a colon keeps that form (the first colon after the prefix ends the slot), so facts stored
 * before keep their ids. A slot with a colon is written length-first, `fact::<length>:<slot>:<key>`:
 * the empty slot the double colon stands for is never valid, so the two forms never meet. At most 202
 * characters for a 64-character slot and a 128-character key.
 */
export function factId(slot: string, key: string): string {
  return slot.includes(':') ? `fact::${slot.length}:${slot}:${key}` : `fact:${slot}:${key}`;
}

/** How long a fact's slot and key may be, on every face (the HTTP schema, MCP, `cairn ingest`). */
export const FACT_LIMITS = Object.freeze({
  /** @defaultValue 64 */
  maxSlotChars: 64,
  /** @defaultValue 128 */
  maxKeyChars: 128,
});

/** What a fact may carry besides its text: the fields {@link asFactMemory} reads and writes. */
export interface FactFields {
  slot?: unknown;
  key?: unknown;
  id?: unknown;
  kind?: unknown;
  meta?: unknown;
}

/**
 * Turns a memory that names a `slot` and `key` into a plain memory: the id is derived from them
 * ({@link factId}), the kind defaults to `fact`, and `meta` records both. A memory without either is
 * returned without them, unchanged. `field` prefixes the field an error names (`memories.3`, or `''`).
 * Slot and key are checked here (strings within FACT_LIMITS), the rest by the memory's own validation.
 */
export function asFactMemory<T extends FactFields>(m: T, field = ''): Omit<T, 'slot' | 'key'> {
  const { slot, key, ...rest } = m;
  const at = (name: string) => (field ? `${field}.${name}` : name);
  if (slot === undefined && key === undefined) return rest;
  if (slot === undefined || key === undefined)
    throw new CairnError('INVALID_INPUT', 'a fact needs both slot and key', {
      field: at(slot === undefined ? 'slot' : 'key'),
    });
  for (const [name, v, max] of [
    ['slot', slot, FACT_LIMITS.maxSlotChars],
    ['key', key, FACT_LIMITS.maxKeyChars],
  ] as const) {
    if (typeof v !== 'string' || v.trim() === '')
      throw new CairnError('INVALID_INPUT', `a fact's ${name} must be a non-empty string`, {
        field: at(name),
      });
    if (v.length > max)
      throw new CairnError('INVALID_INPUT', `a fact's ${name} must be at most ${max} characters`, {
        field: at(name),
      });
  }
  if (rest.id !== undefined)
    throw new CairnError('INVALID_INPUT', 'give either id or slot/key: a fact’s id is derived from them', {
      field: at('id'),
    });
  if (
    rest.meta !== undefined &&
    (rest.meta === null || typeof rest.meta !== 'object' || Array.isArray(rest.meta))
  )
    throw new CairnError('INVALID_INPUT', 'meta must be an object', { field: at('meta') });
  const meta = (rest.meta ?? {}) as Record<string, unknown>;
  return {
    ...rest,
    id: factId(slot as string, key as string),
    kind: rest.kind ?? 'fact',
    meta: { ...meta, slot, key },
  };
}
