import { CairnError } from '@cairn/core';

/**
 * SQLite's disk-level failures as named CairnErrors (better-sqlite3 puts SQLite's extended code in `code`).
 * Anything else is returned as it is: it is not a storage condition and must not be dressed as one.
 */
export function storageFailure(err: unknown): unknown {
  const code = (err as { code?: unknown })?.code;
  if (typeof code !== 'string' || !code.startsWith('SQLITE_')) return err;
  if (code === 'SQLITE_FULL')
    return new CairnError(
      'STORAGE_FULL',
      'the disk holding the data folder is full: nothing of this write was stored; free space and retry',
      { sqlite: code },
      { cause: err },
    );
  if (
    code.startsWith('SQLITE_IOERR') ||
    code === 'SQLITE_CORRUPT' ||
    code === 'SQLITE_NOTADB' ||
    code === 'SQLITE_READONLY'
  )
    return new CairnError(
      'STORAGE_ERROR',
      `the data folder could not be written (${code}): nothing of this write was stored`,
      { sqlite: code },
      { cause: err },
    );
  return err;
}
