import { randomUUID } from 'node:crypto';
import { linkSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { type ExclusiveGuard, exclusiveGuardFree, tryExclusiveGuard } from '@cairn/store';

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
  /** Written by a holder of the OS guard (every release since it); absent from older releases' files. */
  guard?: boolean;
}

/** This process's identity in lock files. */
const TOKEN = randomUUID();
/** The holder refreshes the lock file's mtime this often (ms), for releases that judge a lock by its age. */
const HEARTBEAT_MS = 10_000;
/** A lock file not refreshed for this long (ms) is stale, by the rule of releases before the guard. */
const STALE_MS = 60_000;
/** How long `acquire` waits for a guard that no live holder claims (ms): a probe holds it for an instant. */
const GUARD_WAIT_MS = 1_000;
/** Who holds a folder whose holder has not written its lock file yet (it is between the two steps). */
const UNKNOWN_HOLDER: LockHolder = { pid: 0, host: 'unknown', since: 0, token: '' };

/**
 * The one-writer rule of an embedded data folder: one process embeds, indexes and writes the index files.
 * A second embedded writer would race the first over index generations, so it is refused (or opened as a
 * reader). What decides is an OS lock, `writer.lock.db`'s (tryExclusiveGuard): taken atomically, let go
 * when its process dies however it dies, and never taken from a live process however long it is paused.
 * Deciding from a lock file's pid and age instead let two processes take over a dead writer's lock at once
 * (each renamed the other's fresh file away), and a writer paused for a minute lose it without knowing.
 *
 * `writer.lock` says who holds the guard (pid, host, token, whether it embeds others' writes), written
 * after the guard is taken; it carries `guard: true`. A lock file without it is a release from before the
 * guard, still judged as it judged itself (a live pid on this host, or a heartbeat within a minute), so
 * the two never write one folder together; the heartbeat is kept for those releases' sake.
 */
export class DataFolderLock {
  private readonly heartbeat: NodeJS.Timeout;

  private constructor(
    private readonly path: string,
    private readonly guard: ExclusiveGuard,
  ) {
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

  /** The file whose OS lock is the writer role; never deleted (see tryExclusiveGuard). */
  static guardFile(dataDir: string): string {
    return join(dataDir, 'writer.lock.db');
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
      guard: true,
    };
    // Written first: a folder that cannot be written fails here with the file system's own error code
    // (EROFS, EACCES, ENOSPC), which the caller names; SQLite's open would only say it cannot open.
    const aside = `${path}.${TOKEN}.new`;
    writeFileSync(aside, JSON.stringify(me));
    try {
      const guardFile = DataFolderLock.guardFile(dataDir);
      let guard = tryExclusiveGuard(guardFile);
      if (!guard) {
        const holder = readHolder(path);
        if (holder?.guard && !isStale(holder, path)) return { heldBy: holder };
        // No live holder says it holds the guard: a follower's probe (free) holds it for an instant, or a
        // holder is between taking it and writing its file. Either lets go within milliseconds.
        guard = tryExclusiveGuard(guardFile, { waitMs: GUARD_WAIT_MS });
        if (!guard) return { heldBy: readHolder(path) ?? UNKNOWN_HOLDER };
      }
      // Linked, not renamed over: an older release links its file when none is there, so a file found in
      // place is read first. Ours from a dead holder of the guard (or a stale older one) is removed.
      for (let attempt = 0; ; attempt++) {
        try {
          linkSync(aside, path);
          return new DataFolderLock(path, guard);
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== 'EEXIST' || attempt === 3) {
            guard.release();
            throw err;
          }
        }
        const earlier = readHolder(path);
        if (earlier && heldWithoutGuard(earlier, path)) {
          guard.release();
          return { heldBy: earlier };
        }
        rmSync(path, { force: true });
      }
    } finally {
      rmSync(aside, { force: true });
    }
  }

  /**
   * Whether `acquire` could succeed now. A cheap probe for processes that ask every second (followers), so
   * they write nothing while a live writer holds the folder.
   */
  static free(dataDir: string): boolean {
    if (!exclusiveGuardFree(DataFolderLock.guardFile(dataDir))) return false;
    const holder = readHolder(DataFolderLock.file(dataDir));
    return holder === null || !heldWithoutGuard(holder, DataFolderLock.file(dataDir));
  }

  /** The live process holding the folder's lock; null when none does. */
  static holder(dataDir: string): LockHolder | null {
    const path = DataFolderLock.file(dataDir);
    if (DataFolderLock.free(dataDir)) return null;
    return readHolder(path) ?? UNKNOWN_HOLDER;
  }

  release(): void {
    clearInterval(this.heartbeat);
    // The file first: once the guard is let go, the next holder may already be writing its own.
    if (this.ours()) rmSync(this.path, { force: true });
    this.guard.release();
  }

  private ours(): boolean {
    return readHolder(this.path)?.token === TOKEN;
  }
}

/**
 * A lock file written by a release from before the guard, whose holder is alive by that release's rule.
 * One with `guard: true` never is: its writer held the guard, and the guard was free.
 */
function heldWithoutGuard(holder: LockHolder, path: string): boolean {
  return holder.guard !== true && !isStale(holder, path);
}

function isStale(holder: LockHolder, path: string): boolean {
  if (holder.host === hostname()) {
    if (holder.pid === process.pid) return holder.token !== TOKEN;
    if (!isAlive(holder.pid)) return true;
  }
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
