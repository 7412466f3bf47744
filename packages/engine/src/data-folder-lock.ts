import { closeSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';

export interface LockHolder {
  pid: number;
  host: string;
  since: number;
}

/**
 * The one-writer rule of an embedded data folder: one process embeds, indexes and writes the index files.
 * A second embedded writer would race the first over index generations, so it is refused (or opened as a
 * reader). The lock is a file created exclusively, holding the owner's pid; a lock whose owner died
 * (kill -9) is taken over at once on the same host, without waiting for a timeout.
 */
export class DataFolderLock {
  private constructor(private readonly path: string) {}

  static file(dataDir: string): string {
    return join(dataDir, 'writer.lock');
  }

  /** The lock, or the live process holding it. */
  static acquire(dataDir: string): DataFolderLock | { heldBy: LockHolder } {
    const path = DataFolderLock.file(dataDir);
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        const fd = openSync(path, 'wx');
        const me: LockHolder = { pid: process.pid, host: hostname(), since: Date.now() };
        writeSync(fd, JSON.stringify(me));
        closeSync(fd);
        return new DataFolderLock(path);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      }
      const holder = readHolder(path);
      if (holder && (holder.host !== hostname() || isAlive(holder.pid))) return { heldBy: holder };
      // Unreadable (a crash between create and write) or its owner is gone: stale, take it over.
      rmSync(path, { force: true });
    }
    const holder = readHolder(path);
    return { heldBy: holder ?? { pid: 0, host: 'unknown', since: 0 } };
  }

  release(): void {
    const holder = readHolder(this.path);
    if (holder?.pid === process.pid && holder.host === hostname()) rmSync(this.path, { force: true });
  }
}

function readHolder(path: string): LockHolder | null {
  try {
    const h = JSON.parse(readFileSync(path, 'utf8')) as LockHolder;
    return Number.isInteger(h.pid) ? h : null;
  } catch {
    return null;
  }
}

function isAlive(pid: number): boolean {
  if (pid === process.pid) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: it exists but belongs to someone else.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
