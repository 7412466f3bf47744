import { CairnError, parseTimeBound, type SearchFilters } from '@cairn/core';

/** The `--namespace` a command needs, or INVALID_INPUT naming the flag. */
export function requireNamespace(namespace: string | undefined): string {
  if (!namespace) throw new CairnError('INVALID_INPUT', '--namespace is required', { field: 'namespace' });
  return namespace;
}

/**
 * A whole-number flag within [min, max], or INVALID_INPUT naming it (`--before abc` was read as 0).
 * `field` is the error's field when it is not the flag's own name (`batchSize` for `--batch-size`).
 */
export function integerFlag(value: string, flag: string, min: number, max: number, field = flag): number {
  const n = Number(value);
  if (value.trim() === '' || !Number.isInteger(n) || n < min || n > max)
    throw new CairnError('INVALID_INPUT', `--${flag} must be an integer in [${min}, ${max}]`, { field });
  return n;
}

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
