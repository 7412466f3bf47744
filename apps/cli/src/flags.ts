import { CairnError, parseTimeBound, type SearchFilters } from '@cairn/core';

/** The `--namespace` a command needs, or INVALID_INPUT naming the flag. */
export function requireNamespace(namespace: string | undefined): string {
  if (!namespace) throw new CairnError('INVALID_INPUT', '--namespace is required', { field: 'namespace' });
  return namespace;
}

export interface NumberFlagOptions {
  /** Whole numbers only. @defaultValue true */
  whole?: boolean;
  /** The least value taken. @defaultValue none */
  min?: number;
  /** Whether `min` itself is refused (a timeout of 0 s). @defaultValue false */
  minExclusive?: boolean;
  /** The greatest value taken. @defaultValue none */
  max?: number;
  /** The error's field. @defaultValue the flag's name in camelCase (`batchSize` for `--batch-size`) */
  field?: string;
}

/**
 * The one parser of the CLI's numeric flags: the number written, or INVALID_INPUT naming the flag, what it
 * takes and the value given, worded as the API words a bad query integer (`--max-tokens must be an
 * integer in [1, 100000], got "abc"`). `Number()` alone read `abc` as NaN, refused as "got NaN", and an
 * empty value as 0, "too small"; `parseInt` read `7411abc` as 7411.
 */
export function numberFlag(value: string, flag: string, opts: NumberFlagOptions = {}): number {
  const { whole = true, min, minExclusive = false, max } = opts;
  const n = Number(value);
  const ok =
    value.trim() !== '' &&
    Number.isFinite(n) &&
    (!whole || Number.isSafeInteger(n)) &&
    (min === undefined || (minExclusive ? n > min : n >= min)) &&
    (max === undefined || n <= max);
  if (!ok)
    throw new CairnError(
      'INVALID_INPUT',
      `--${flag} must be ${whole ? 'an integer' : 'a number'}${rangeOf(min, minExclusive, max)}, got ${JSON.stringify(value)}`,
      { field: opts.field ?? camelCase(flag) },
    );
  return n;
}

/** numberFlag of a flag that may be left out: undefined then. */
export function optionalNumberFlag(
  value: string | undefined,
  flag: string,
  opts: NumberFlagOptions = {},
): number | undefined {
  return value === undefined ? undefined : numberFlag(value, flag, opts);
}

function rangeOf(min: number | undefined, minExclusive: boolean, max: number | undefined): string {
  if (min !== undefined && max !== undefined) return ` in ${minExclusive ? '(' : '['}${min}, ${max}]`;
  if (min !== undefined) return minExclusive ? ` above ${min}` : ` of at least ${min}`;
  if (max !== undefined) return ` of at most ${max}`;
  return '';
}

const camelCase = (flag: string) => flag.replace(/-([a-z])/g, (_m, c: string) => c.toUpperCase());

/**
 * A time flag: ISO-8601, epoch milliseconds written as digits, or a window back from now (`90d`, `12h`);
 * undefined when not given (or empty).
 */
export function timeFlag(value: string | undefined, field: string, now = Date.now()): number | undefined {
  return value === undefined || value === ''
    ? undefined
    : parseTimeBound(/^\d+$/.test(value) ? Number(value) : value, field, now);
}

/** The filter flags `search` and `list` share (each repeatable one is an "any of" list). */
export interface FilterFlags {
  kind?: string[];
  session?: string[];
  agent?: string[];
  tag?: string[];
  since?: string;
  until?: string;
  slot?: string[];
  asOf?: string;
}

export function filtersFromFlags(f: FilterFlags, now?: number): SearchFilters {
  const filters: SearchFilters = {};
  if (f.kind?.length) filters.kinds = f.kind;
  if (f.session?.length) filters.sessions = f.session;
  if (f.agent?.length) filters.agents = f.agent;
  if (f.tag?.length) filters.tags = f.tag;
  const since = timeFlag(f.since, 'since', now);
  const until = timeFlag(f.until, 'until', now);
  if (since !== undefined) filters.since = since;
  if (until !== undefined) filters.until = until;
  if (f.slot?.length) filters.slots = f.slot;
  const asOf = timeFlag(f.asOf, 'asOf', now);
  if (asOf !== undefined) filters.asOf = asOf;
  return filters;
}
