import { CairnError } from './errors.js';

export const MS_PER_DAY = 86_400_000;

/** The largest time a Date can hold (year 275760): later values cannot be shown as ISO-8601. */
const MAX_EPOCH_MS = 8.64e15;

/**
 * The whole string must be an ISO-8601 date or date-time (a space may stand for the `T`): Date.parse alone
 * falls back to a lenient parser that reads "2024-01-01 junk" as June ("jun") and skips "(comments)".
 */
const ISO_8601 =
  /^(\d{4})-(\d{2})-(\d{2})(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:?\d{2})?)?$/i;

/**
 * Parses a caller's timestamp: epoch milliseconds (number) or an ISO-8601 string. Numeric strings are
 * refused on purpose: "1700000000" could be seconds or milliseconds, and guessing corrupts recency.
 */
export function parseTimestamp(value: unknown, field = 'ts'): number {
  if (typeof value === 'number') {
    if (!Number.isFinite(value) || value < 0 || value > MAX_EPOCH_MS) {
      throw new CairnError(
        'INVALID_INPUT',
        `${field}: epoch milliseconds must be between 0 and ${MAX_EPOCH_MS}`,
        {
          field,
        },
      );
    }
    return Math.round(value);
  }
  const ymd = typeof value === 'string' ? ISO_8601.exec(value) : null;
  if (ymd) {
    const ms = Date.parse(value as string);
    // Date.parse rolls impossible days over (2024-02-30 → March 1); refuse them instead.
    const [y, m, d] = [Number(ymd[1]), Number(ymd[2]), Number(ymd[3])];
    const realDay = new Date(Date.UTC(y, m - 1, d)).getUTCDate() === d && m >= 1 && m <= 12;
    if (Number.isFinite(ms) && ms >= 0 && realDay) return ms;
    if (Number.isFinite(ms) && ms < 0 && realDay)
      throw new CairnError(
        'INVALID_INPUT',
        `${field}: ${JSON.stringify(value)} is before 1970-01-01T00:00:00Z, the earliest time Cairn stores`,
        { field },
      );
  }
  throw new CairnError(
    'INVALID_INPUT',
    `${field}: expected an ISO-8601 date (2024-05-08T13:56:00Z) or epoch milliseconds, got ${JSON.stringify(value)}`,
    { field },
  );
}

/** Parses a duration such as `30d`, `12h`, `90m`, `45s` or plain milliseconds. */
export function parseDuration(value: string | number, field = 'duration'): number {
  if (typeof value === 'number' && Number.isFinite(value) && value > 0) return value;
  const match = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h|d|w)?$/.exec(String(value).trim());
  if (!match) {
    throw new CairnError(
      'INVALID_INPUT',
      `${field}: expected a duration like 30d, 12h or 5000, got ${value}`,
      {
        field,
      },
    );
  }
  const unitMs: Record<string, number> = {
    ms: 1,
    s: 1e3,
    m: 6e4,
    h: 3.6e6,
    d: MS_PER_DAY,
    w: 7 * MS_PER_DAY,
  };
  const ms = Number(match[1]) * (unitMs[match[2] ?? 'ms'] ?? 1);
  if (!(ms > 0)) throw new CairnError('INVALID_INPUT', `${field}: must be greater than zero`, { field });
  return ms;
}

/** A relative time: a duration with its unit (`90d`, `12h`, `2w`), meaning that long before now. */
const RELATIVE = /^\d+(?:\.\d+)?\s*(?:ms|s|m|h|d|w)$/;

/**
 * A time bound of a filter: ISO-8601, epoch ms, or a window relative to `now` (`"90d"` is 90 days before
 * `now`), so a caller can ask for "the last 90 days" without computing a date.
 */
export function parseTimeBound(value: unknown, field: string, now: number): number {
  if (typeof value === 'string' && RELATIVE.test(value.trim()))
    return Math.max(0, now - parseDuration(value, field));
  return parseTimestamp(value, field);
}
