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
  writeFileSync,
} from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { finished } from 'node:stream/promises';
import { CairnError } from '@cairn/core';

/**
 * How `path` is replaced: through a temporary file beside the file it names (the one a symbolic link points
 * to: the link stays), with that file's mode; `inPlace` for anything that cannot be replaced (a device such
 * as /dev/stdout, a FIFO, a process substitution). `mode` is null for a path not there yet.
 */
function replacementOf(
  path: string,
): { inPlace: true } | { inPlace: false; target: string; mode: number | null } {
  let st: Stats | null = null;
  try {
    st = statSync(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  if (st && !st.isFile()) return { inPlace: true };
  if (!st) return { inPlace: false, target: path, mode: null };
  const target = realpathSync(path);
  // Replacing needs only the folder's permission: a file the user may not write stays refused, as writing
  // it in place refused it.
  accessSync(target, constants.W_OK);
  return { inPlace: false, target, mode: st.mode & 0o7777 };
}

/** A temporary file's name beside `target`, unique to this call. */
function tempBeside(target: string): string {
  return join(dirname(target), `.${basename(target)}.${randomBytes(4).toString('hex')}.partial`);
}

/**
 * Writes `text` to `path` whole or not at all, as WholeFile does for a stream (synchronously, for a small
 * file such as Claude Code's settings.json, which users often keep as a link into their dotfiles).
 */
export function writeWhole(path: string, text: string): void {
  const how = replacementOf(path);
  if (how.inPlace) {
    writeFileSync(path, text);
    return;
  }
  const temp = tempBeside(how.target);
  try {
    const fd = openSync(temp, 'wx', how.mode === null ? 0o666 : 0o600);
    try {
      if (how.mode !== null) fchmodSync(fd, how.mode);
      writeFileSync(fd, text);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(temp, how.target);
  } catch (err) {
    rmSync(temp, { force: true });
    throw err;
  }
}

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
    try {
      const how = replacementOf(path);
      if (how.inPlace) {
        this.target = path;
        this.temp = null;
        this.fd = openSync(path, 'w');
      } else {
        this.target = how.target;
        this.temp = tempBeside(how.target);
        // Private while written, then the replaced file's own mode (a backup of private memories kept
        // 0600 stays so); a new file gets the default mode, as the shell's `>` gives it.
        this.fd = openSync(this.temp, 'wx', how.mode === null ? 0o666 : 0o600);
        if (how.mode !== null) fchmodSync(this.fd, how.mode);
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
