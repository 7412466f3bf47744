import { CairnError } from '@cairn/core';

/** Runs `fn`, which must throw a CairnError, and returns that error for assertions on code and field. */
export function cairnErrorFrom(fn: () => unknown): CairnError {
  try {
    fn();
  } catch (err) {
    if (err instanceof CairnError) return err;
    throw new Error(`expected a CairnError, got ${String(err)}`, { cause: err });
  }
  throw new Error('expected a CairnError, but nothing was thrown');
}
