import { randomUUID } from 'node:crypto';
import { linkSync, readFileSync, renameSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';

export interface LockHolder {
  pid: number;
  host: string;
  since: number;
  /** Random per process: tells this process from an earlier one that had the same pid (PID 1 in a container). */
  token: string;
  /**
   * Whether the holder embeds what other processes store as it comes (a long-lived writer: `cairn serve`,
   * `cairn mcp`); false for a one-shot command, which embeds only its own writes. Absent (an older
   * holder): taken as true.
   */
  embedsOthers?: boolean;
}

/** This process's identity in lock files. */
const TOKEN = randomUUID();
/** The holder refreshes the lock file's mtime this often (ms). */
const HEARTBEAT_MS = 10_000;
/** A lock not refreshed for this long (ms) is stale whoever holds it: another host, a reused pid. */
const STALE_MS = 60_000;

/**
 * The one-writer rule of an embedded data folder: one process embeds, indexes and writes the index files.
 * A second embedded writer would race the first over index generations, so it is refused (or opened as a
 * reader). The lock file is created atomically with its content (written aside, then hard-linked into
 * place). It is stale when its owner is gone: on this host at once (its pid is dead, or it is an earlier
 * process with our pid), anywhere after a minute without a heartbeat. A stale lock is renamed away before
 * it is replaced, so two processes can never both take it over.
 */
export class DataFolderLock {
  private readonly heartbeat: NodeJS.Timeout;

  private constructor(private readonly path: string) {
    this.heartbeat = setInterval(() => {
      if (this.ours()) {
        const now = new Date();
        utimesSync(this.path, now, now);
      }
    }, HEARTBEAT_MS);
    this.heartbeat.unref();
  }

  static file(dataDir: string): string {
    return join(dataDir, 'writer.lock');
  }

  /**
   * The lock, or the live process holding it. `embedsOthers`: whether this process will embed what others
   * store (see LockHolder.embedsOthers).
   */
  static acquire(dataDir: string, embedsOthers = true): DataFolderLock | { heldBy: LockHolder } {
    const path = DataFolderLock.file(dataDir);
    const me: LockHolder = {
      pid: process.pid,
      host: hostname(),
      since: Date.now(),
      token: TOKEN,
      embedsOthers,
    };
    for (let attempt = 0; attempt < 5; attempt++) {
      const aside = `${path}.${TOKEN}.new`;
      writeFileSync(aside, JSON.stringify(me));
      try {
        linkSync(aside, path);
        return new DataFolderLock(path);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      } finally {
        rmSync(aside, { force: true });
      }
      const holder = readHolder(path);
      if (holder && !isStale(holder, path)) return { heldBy: holder };
      // Move the stale lock out of the way atomically; whoever loses this race retries and finds the
      // winner's fresh lock.
      const graveyard = `${path}.${TOKEN}.stale`;
      try {
        renameSync(path, graveyard);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
        continue;
      }
      const moved = readHolder(graveyard);
      rmSync(graveyard, { force: true });
      // A fresh lock slipped in between our read and the rename: give it back.
      if (moved && holder && moved.token !== holder.token && !isStale(moved, null)) {
        writeFileSync(aside, JSON.stringify(moved));
        try {
          linkSync(aside, path);
        } catch {
          // Someone else holds it now; the next attempt sees them.
        } finally {
          rmSync(aside, { force: true });
        }
      }
    }
    const holder = readHolder(path);
    return { heldBy: holder ?? { pid: 0, host: 'unknown', since: 0, token: '' } };
  }

  /**
   * Whether `acquire` could succeed now: no lock file, or a stale one. A cheap read for processes that ask
   * every second (followers), so they write nothing while a live writer holds the folder.
   */
  static free(dataDir: string): boolean {
    const path = DataFolderLock.file(dataDir);
    const holder = readHolder(path);
    return holder === null || isStale(holder, path);
  }

  /** The live process holding the folder's lock; null when none does (no lock file, or a stale one). */
  static holder(dataDir: string): LockHolder | null {
    const path = DataFolderLock.file(dataDir);
    const holder = readHolder(path);
    return holder === null || isStale(holder, path) ? null : holder;
  }

  release(): void {
    clearInterval(this.heartbeat);
    if (this.ours()) rmSync(this.path, { force: true });
  }

  private ours(): boolean {
    return readHolder(this.path)?.token === TOKEN;
  }
}

function isStale(holder: LockHolder, path: string | null): boolean {
  if (holder.host === hostname()) {
    if (holder.pid === process.pid) return holder.token !== TOKEN;
    if (!isAlive(holder.pid)) return true;
  }
  if (path === null) return false;
  try {
    return Date.now() - statSync(path).mtimeMs > STALE_MS;
  } catch {
    return true;
  }
}

function readHolder(path: string): LockHolder | null {
  try {
    const h = JSON.parse(readFileSync(path, 'utf8')) as LockHolder;
    return Number.isInteger(h.pid) && typeof h.token === 'string' ? h : null;
  } catch {
    return null;
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    // EPERM: it exists but belongs to someone else (a zombie of theirs is as dead).
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  return !isZombie(pid);
}

/**
 * A process that has exited but was not yet reaped by its parent still answers `kill(pid, 0)`. In a
 * container without an init, or under a parent that never waits, a killed writer stays so for good, and
 * its lock was kept until the minute of staleness ran out. Linux says so in /proc (state Z); elsewhere, or
 * when it cannot be read, the process counts as alive.
 */
function isZombie(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // pid (comm) state …: comm may hold spaces and parentheses, so the state follows the last ')'.
    return stat
      .slice(stat.lastIndexOf(')') + 1)
      .trim()
      .startsWith('Z');
  } catch {
    return false;
  }
}
