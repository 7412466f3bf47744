import { createHash } from 'node:crypto';
import { z } from 'zod';
import { CairnError } from './errors.js';
import { DEFAULT_INPUT_LIMITS } from './limits.js';
import { parseTimestamp } from './time.js';
import {
  hasLoneSurrogate,
  isLoneSurrogateIssue,
  loneSurrogateMessage,
  WellFormedString,
} from './well-formed-string.js';

const L = DEFAULT_INPUT_LIMITS;

/** Built-in kinds. Callers may use their own kind names too; these are the ones Cairn treats specially. */
export const BUILTIN_KINDS = ['turn', 'observation', 'summary', 'fact', 'prompt'] as const;

/** Namespaces are path-like names so they can be derived from repos (`acme/api`) or tenants (`t:42`). */
export const NAMESPACE_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:@/-]*$/;

export const NamespaceSchema = WellFormedString.min(1, 'namespace must not be empty')
  .max(L.maxNamespaceChars, `namespace must be at most ${L.maxNamespaceChars} characters`)
  .regex(
    NAMESPACE_PATTERN,
    'namespace may hold only letters, digits and . _ : @ / - and must start with a letter or digit',
  );

const shortText = (what: string, max: number) =>
  z.string().min(1, `${what} must not be empty`).max(max, `${what} must be at most ${max} characters`);

const utf8Bytes = (s: string) => Buffer.byteLength(s, 'utf8');

/**
 * A route name: the name of one of a memory's named fields (`facts`, `user`, `next_turn`). `text` is the
 * route of the memory's own words and cannot be a field.
 */
export const ROUTE_NAME_PATTERN = /^[a-z][a-z0-9_]{0,31}$/;
/** ROUTE_NAME_PATTERN in words, for the refusal of a key that breaks it. */
export const ROUTE_NAME_RULE = 'a field name matches [a-z][a-z0-9_]*, at most 32 characters';
/** The route of a memory's own text (title and text), beside its named fields' routes. */
export const TEXT_ROUTE = 'text';
/** @defaultValue 8 (named fields per memory) */
export const MAX_FIELDS = 8;

const FieldsSchema = z
  .record(
    z
      .string()
      .regex(ROUTE_NAME_PATTERN, ROUTE_NAME_RULE)
      .refine(
        (name) => name !== TEXT_ROUTE,
        `"${TEXT_ROUTE}" names the memory's own text; pick another field name`,
      ),
    z
      .string()
      .refine((s) => s.trim().length > 0, 'a field must not be blank')
      .refine(
        (s) => utf8Bytes(s) <= L.maxTextBytes,
        `a field must be at most ${L.maxTextBytes} bytes of UTF-8`,
      ),
  )
  .refine((f) => Object.keys(f).length <= MAX_FIELDS, `at most ${MAX_FIELDS} fields`);

/** Levels of nested objects and arrays meta may hold. */
const MAX_META_DEPTH = 32;

/** Depth of nested objects and arrays, without recursion (so any input is safe to measure). */
function nestingDepth(value: unknown): number {
  let max = 0;
  const stack: Array<[unknown, number]> = [[value, 1]];
  while (stack.length > 0) {
    const [v, d] = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    if (d > max) max = d;
    if (max > MAX_META_DEPTH) return max;
    for (const child of Object.values(v)) stack.push([child, d + 1]);
  }
  return max;
}

/**
 * The path of a string (or object key) in `value` holding a lone surrogate, or null when there is none.
 * Iterative, so any input is safe to walk (meta's depth is checked before this runs).
 */
function illFormedPath(value: unknown): string | null {
  const stack: Array<[unknown, string]> = [[value, '']];
  while (stack.length > 0) {
    const [v, path] = stack.pop()!;
    if (typeof v === 'string') {
      if (hasLoneSurrogate(v)) return path;
      continue;
    }
    if (v === null || typeof v !== 'object') continue;
    for (const [k, child] of Object.entries(v)) {
      const at = path ? `${path}.${k}` : k;
      if (hasLoneSurrogate(k)) return at;
      stack.push([child, at]);
    }
  }
  return null;
}

/**
 * What a caller sends to store one memory. Unknown fields are refused so a typo never drops data. Its
 * strings are plain `z.string()`, not WellFormedString: normalizeMemory walks the whole memory after
 * this schema, meta's nested values and keys included (which no string schema reaches), and refuses a lone
 * surrogate anywhere with the reason a write cannot take one.
 */
export const MemoryInputSchema = z.strictObject({
  // "." and ".." cannot be addressed in a URL path (clients and servers resolve them away), so a memory
  // with such an id could be written but never read or deleted by id.
  id: shortText('id', L.maxIdChars)
    .refine((id) => id !== '.' && id !== '..', 'id must not be "." or "..": a URL cannot address it')
    .optional(),
  namespace: NamespaceSchema,
  kind: shortText('kind', 64).default('observation'),
  text: z
    .string()
    .refine((s) => s.trim().length > 0, 'text must not be blank')
    .refine((s) => utf8Bytes(s) <= L.maxTextBytes, `text must be at most ${L.maxTextBytes} bytes of UTF-8`),
  title: z.string().max(L.maxTitleChars, `title must be at most ${L.maxTitleChars} characters`).optional(),
  session: shortText('session', L.maxIdChars).optional(),
  agent: shortText('agent', L.maxIdChars).optional(),
  ts: z.union([z.number(), z.string()]).optional(),
  tags: z.array(shortText('tag', 64)).max(L.maxTags, `at most ${L.maxTags} tags`).optional(),
  meta: z
    .record(z.string(), z.unknown())
    // Checked before serialising: JSON.stringify recurses, and thousands of levels overflow the stack.
    .refine((m) => nestingDepth(m) <= MAX_META_DEPTH, {
      message: `meta may nest at most ${MAX_META_DEPTH} levels deep`,
      abort: true,
    })
    .refine(
      (m) => utf8Bytes(JSON.stringify(m)) <= L.maxMetaBytes,
      `meta must serialise to at most ${L.maxMetaBytes} bytes`,
    )
    .optional(),
  importance: z
    .number()
    .min(0, 'importance must be in [0, 1]')
    .max(1, 'importance must be in [0, 1]')
    .optional(),
  /**
   * How sure the writer is that this memory is true (a fact inferred from a hint, an extraction an LLM
   * hedged on): in [0, 1]. It enters the score (SearchOptions.confidenceWeight); absent means unstated,
   * which scores as certain.
   */
  confidence: z
    .number()
    .min(0, 'confidence must be in [0, 1]')
    .max(1, 'confidence must be in [0, 1]')
    .optional(),
  /**
   * When what the memory says became and stopped being true (a fact's validity, not when it was written):
   * ISO-8601 or epoch ms; open-ended when absent. A search `asOf` a time sees only memories valid then.
   */
  validFrom: z.union([z.number(), z.string()]).optional(),
  validTo: z.union([z.number(), z.string()]).optional(),
  /** Ids of older memories in the same namespace that this one replaces; they stop appearing in search. */
  supersedes: z.array(shortText('supersedes id', L.maxIdChars)).max(64).optional(),
  /**
   * Named fields (`{ facts: "…", user: "…" }`): each is indexed and searched as a route of its own, in both
   * legs, and a hit lists the routes that found it. Search returns the memory, not the field.
   */
  fields: FieldsSchema.optional(),
});

export type MemoryInput = z.input<typeof MemoryInputSchema>;

/** A validated memory, normalised and ready to store. */
export interface NormalizedMemory {
  id: string;
  namespace: string;
  kind: string;
  text: string;
  title: string | null;
  session: string | null;
  agent: string | null;
  /** Epoch ms. */
  ts: number;
  /** False when the caller gave no ts and `ts` is the ingest time: a re-ingest then keeps the stored ts. */
  tsGiven: boolean;
  tags: string[];
  meta: Record<string, unknown>;
  importance: number;
  /** In [0, 1]; null when the writer stated none. */
  confidence: number | null;
  /** Epoch ms from which what it says holds; null: always (as far as the writer said). */
  validFrom: number | null;
  /** Epoch ms (exclusive) until which it holds; null: still. */
  validTo: number | null;
  contentHash: string;
  supersedes: string[];
  /** Named fields, each searched as its own route (see MemoryInputSchema.fields); `{}` when none. */
  fields: Record<string, string>;
}

/** A memory as stored, with the bookkeeping columns. */
export interface MemoryRecord extends Omit<NormalizedMemory, 'supersedes' | 'contentHash' | 'tsGiven'> {
  contentHash: string;
  /** Epoch ms when first stored. */
  createdAt: number;
  /** Epoch ms of the last change to content or metadata. */
  updatedAt: number;
  supersededBy: string | null;
  accessCount: number;
  lastAccessed: number | null;
}

/** Importance when the caller gives none: neutral, so it neither boosts nor buries. */
export const DEFAULT_IMPORTANCE = 0.5;

/**
 * The content hash covers what a memory says (kind, title, text), not where or when it was said, so the
 * same words are embedded once however many times they are stored.
 */
export function contentHash(kind: string, title: string | null, text: string): string {
  return createHash('sha256')
    .update(JSON.stringify([kind, title ?? '', text]))
    .digest('hex')
    .slice(0, 32);
}

/** Ids generated from content make a re-run of an id-less ingest file idempotent. */
export function generatedId(hash: string): string {
  return `m_${hash.slice(0, 24)}`;
}

function describeZodIssue(issue: z.core.$ZodIssue, fieldPrefix?: string): { field: string; message: string } {
  const path = [...(fieldPrefix ? [fieldPrefix] : []), ...issue.path.map(String)];
  const field = path.join('.');
  if (issue.code === 'unrecognized_keys') {
    const keys = issue.keys.map((k) => [...path, k].join('.'));
    return { field: keys.join(','), message: `unknown field(s): ${keys.join(', ')}` };
  }
  if (isLoneSurrogateIssue(issue)) return { field, message: loneSurrogateMessage(field || 'value') };
  if (issue.code === 'invalid_key') {
    // A record's key broke the key schema: zod says only "Invalid key in record". Name the key and the rule
    // (`fields: key "Bad": a field name matches …`); the nested issue's path is relative to the key.
    const nested = issue.issues[0];
    if (nested && isLoneSurrogateIssue(nested)) return { field, message: loneSurrogateMessage(field) };
    const key = String(issue.path[issue.path.length - 1]);
    const parent = path.slice(0, -1).join('.') || 'value';
    return { field, message: `${parent}: key ${JSON.stringify(key)}: ${nested?.message ?? 'not allowed'}` };
  }
  if (issue.code === 'invalid_union') {
    // A union's own message is "Invalid input". A lone surrogate in its string branch (`since`, `decay`)
    // is what was wrong whatever the other branches wanted: say so, as for any other string.
    const surrogate = issue.errors.flat().find(isLoneSurrogateIssue);
    if (surrogate) return describeZodIssue(surrogate, field || undefined);
  }
  if (issue.code === 'invalid_type') {
    // zod 4 does not keep the input on the issue; its message says what was received.
    const received = /received (\w+)/.exec(issue.message)?.[1];
    const name = field || 'value';
    if (received === 'undefined') return { field, message: `${name} is required` };
    return { field, message: `${name} must be ${issue.expected}${received ? `, got ${received}` : ''}` };
  }
  const msg = issue.message.startsWith(field) ? issue.message : `${field}: ${issue.message}`;
  return { field, message: field ? msg : issue.message };
}

/** Turns a zod failure into a CairnError that names the first offending field. */
export function zodToCairnError(error: z.ZodError, context?: string, fieldPrefix?: string): CairnError {
  const first = error.issues[0];
  let { field, message } = first
    ? describeZodIssue(first, fieldPrefix)
    : { field: fieldPrefix ?? '', message: 'invalid input' };
  // A required field missing beside an unknown one is most often a misspelling ("txt" for "text"): name
  // both, where zod's first issue named only the missing one.
  const unknown = error.issues.find((i) => i.code === 'unrecognized_keys');
  if (first && unknown && first !== unknown && message.endsWith(' is required'))
    message = `${message}; got ${describeZodIssue(unknown, fieldPrefix).message}`;
  return new CairnError(
    'INVALID_INPUT',
    context ? `${context}: ${message}` : message,
    field ? { field } : {},
  );
}

/** Validates and normalises one memory. Throws CairnError(INVALID_INPUT) naming the field at fault. */
export function normalizeMemory(input: unknown, now: number = Date.now()): NormalizedMemory {
  if (input === null || typeof input !== 'object' || Array.isArray(input)) {
    throw new CairnError('INVALID_INPUT', 'a memory must be a JSON object');
  }
  const parsed = MemoryInputSchema.safeParse(input);
  if (!parsed.success) throw zodToCairnError(parsed.error);
  const m = parsed.data;
  const illFormed = illFormedPath(m);
  if (illFormed !== null)
    throw new CairnError('INVALID_INPUT', `${loneSurrogateMessage(illFormed)}, it would be stored altered`, {
      field: illFormed,
    });
  const title = m.title?.trim() ? m.title : null;
  const hash = contentHash(m.kind, title, m.text);
  return {
    id: m.id ?? generatedId(hash),
    namespace: m.namespace,
    kind: m.kind,
    text: m.text,
    title,
    session: m.session ?? null,
    agent: m.agent ?? null,
    ts: m.ts === undefined ? now : parseTimestamp(m.ts),
    tsGiven: m.ts !== undefined,
    tags: [...new Set(m.tags ?? [])],
    meta: m.meta ?? {},
    importance: m.importance ?? DEFAULT_IMPORTANCE,
    confidence: m.confidence ?? null,
    ...validity(m.validFrom, m.validTo),
    contentHash: hash,
    supersedes: m.supersedes ?? [],
    fields: sortedFields(m.fields ?? {}),
  };
}

/** The validity window, parsed; refused (naming the field) when it ends before it starts. */
function validity(from: unknown, to: unknown): { validFrom: number | null; validTo: number | null } {
  const validFrom = from === undefined ? null : parseTimestamp(from, 'validFrom');
  const validTo = to === undefined ? null : parseTimestamp(to, 'validTo');
  if (validFrom !== null && validTo !== null && validTo <= validFrom)
    throw new CairnError('INVALID_INPUT', 'validTo must be after validFrom', { field: 'validTo' });
  return { validFrom, validTo };
}

/** Fields in name order, so equal fields compare and serialise equal whatever order they came in. */
export function sortedFields(fields: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of Object.keys(fields).sort()) out[name] = fields[name]!;
  return out;
}
