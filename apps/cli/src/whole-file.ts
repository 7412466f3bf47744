import { randomBytes } from 'node:crypto';
import {
  accessSync,
  closeSync,
  constants,
  createWriteStream,
  fchmodSync,
  fsyncSync,
  openSync,
  realpathSync,
  renameSync,
  rmSync,
  type Stats,
  statSync,
  type WriteStream,
} from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { finished } from 'node:stream/promises';
import { CairnError } from '@cairn/core';

/** The user's mistake in an output path, named (exit 2), not an internal error. */
function cannotWrite(path: string, err: unknown): CairnError {
  const e = err as NodeJS.ErrnoException;
  return new CairnError('INVALID_INPUT', `cannot write ${path}: ${e.code ?? e.message}`, { field: 'out' });
}

/**
 * Where a command's `--out` goes. A regular file, or a path not there yet, is written whole or not at all:
 * into a temporary file beside it (beside the file a symbolic link points to, which stays a link) with the
 * file's own mode, flushed to disk, then renamed over it. Written in place, a mistyped namespace emptied
 * yesterday's backup and an interrupted export left a shorter file that reads as whole. Anything else (a
 * device such as /dev/stdout, a FIFO, a process substitution) cannot be replaced: it is written in place.
 */
export class WholeFile {
  readonly stream: WriteStream;
  private readonly fd: number;
  /** Null when written in place. */
  private readonly temp: string | null;
  private readonly target: string;
  private failure: Error | null = null;
  private done = false;

  constructor(private readonly path: string) {
    let st: Stats | null = null;
    try {
      st = statSync(path);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw cannotWrite(path, err);
    }
    try {
      if (st && !st.isFile()) {
        this.target = path;
        this.temp = null;
        this.fd = openSync(path, 'w');
      } else {
        this.target = st ? realpathSync(path) : path;
        // Replacing needs only the folder's permission: a file the user may not write stays refused, as
        // writing in place refused it.
        if (st) accessSync(this.target, constants.W_OK);
        this.temp = join(
          dirname(this.target),
          `.${basename(this.target)}.${randomBytes(4).toString('hex')}.partial`,
        );
        // Private while written, then the replaced file's own mode (a backup of private memories kept
        // 0600 stays so); a new file gets the default mode, as the shell's `>` gives it.
        this.fd = openSync(this.temp, 'wx', st ? 0o600 : 0o666);
        if (st) fchmodSync(this.fd, st.mode & 0o7777);
      }
    } catch (err) {
      throw cannotWrite(path, err);
    }
    this.stream = createWriteStream('', { fd: this.fd, autoClose: false });
    // Kept for `commit`: an error event with no listener would end the process.
    this.stream.on('error', (err) => {
      this.failure ??= err;
    });
  }

  /** Ends the output; a temporary file is flushed to disk and renamed over the target. */
  async commit(): Promise<void> {
    this.stream.end();
    await finished(this.stream).catch(() => undefined);
    try {
      if (this.failure) {
        const e = this.failure as NodeJS.ErrnoException;
        throw new CairnError(
          e.code === 'ENOSPC' ? 'STORAGE_FULL' : 'STORAGE_ERROR',
          `writing ${this.path} failed (${e.code ?? e.message})${this.temp ? '; it was left as it was' : ''}`,
          { field: 'out' },
        );
      }
      if (this.temp) fsyncSync(this.fd);
    } finally {
      this.close();
    }
    if (!this.temp) return;
    try {
      renameSync(this.temp, this.target);
    } catch (err) {
      throw cannotWrite(this.path, err);
    }
    this.done = true;
  }

  /** Gives up: the temporary file is removed and the target left as it was (written in place: as far as it got). */
  abandon(): void {
    if (this.done) return;
    this.stream.destroy();
    this.close();
    if (this.temp) rmSync(this.temp, { force: true });
  }

  private closed = false;

  private close(): void {
    if (this.closed) return;
    this.closed = true;
    closeSync(this.fd);
  }
}
