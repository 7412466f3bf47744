import { CairnError, parseTimestamp } from '@cairn/core';

/** The `--namespace` a command needs, or INVALID_INPUT naming the flag. */
export function requireNamespace(namespace: string | undefined): string {
  if (!namespace) throw new CairnError('INVALID_INPUT', '--namespace is required', { field: 'namespace' });
  return namespace;
}

/** A time flag: ISO-8601, or epoch milliseconds written as digits; undefined when not given (or empty). */
export function timeFlag(value: string | undefined, field: string): number | undefined {
  return value === undefined || value === ''
    ? undefined
    : parseTimestamp(/^\d+$/.test(value) ? Number(value) : value, field);
}
