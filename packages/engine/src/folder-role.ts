import { DataFolderLock } from './data-folder-lock.js';

/**
 * `writer`: holds the data folder's writer lock; stores, embeds, indexes and saves index files.
 * `follower`: another live process holds the lock; this one stores what it is given (SQLite serialises
 * the writes of every process), reads the writer's vectors and index files, never writes them, and takes
 * the role over as soon as the lock is free (the writer exited or died). `external`: a distributed
 * deployment's read side; its workers embed and index.
 */
export type FolderRoleKind = 'writer' | 'follower' | 'external';

/**
 * This process's part in its data folder, and the one change it can go through: a follower taking the
 * writer role over. The engine does what the role allows; this class only knows who holds what.
 */
export class FolderRole {
  private current: FolderRoleKind;
  /** The store's change sequence the writer last looked at (other processes' writes move it). */
  private seenChangeSeq = -1;

  constructor(
    private readonly dataDir: string,
    opts: {
      /** A distributed deployment's reader: never the writer. */
      external: boolean;
      lock: DataFolderLock | null;
      /** Set when this process opened as a follower because another one writes: who. */
      followerBecause: string | null;
      /** Whether this process, once the writer, embeds what others store (a long-lived one does). */
      embedsOthers: boolean;
    },
  ) {
    this.lock = opts.lock;
    this.followerBecause = opts.followerBecause;
    this.embedsOthers = opts.embedsOthers;
    this.current = !opts.external ? 'writer' : opts.followerBecause ? 'follower' : 'external';
  }

  private lock: DataFolderLock | null;
  private followerBecause: string | null;
  private readonly embedsOthers: boolean;

  get kind(): FolderRoleKind {
    return this.current;
  }

  /** True unless this process holds the writer role (it neither embeds nor writes index files). */
  get external(): boolean {
    return this.current !== 'writer';
  }

  /** The role as the engine reports it; a follower says who writes. */
  get view(): { role: FolderRoleKind; writer: string | null } {
    return { role: this.current, writer: this.current === 'follower' ? this.followerBecause : null };
  }

  /**
   * A follower asks for the writer lock: it is free once the writer exited or died (the OS lets go of a
   * dead process's lock), never while it lives. Returns who held it when this process took it now, else null.
   */
  takeOverIfFree(): { was: string | null } | null {
    if (this.current !== 'follower' || !DataFolderLock.free(this.dataDir)) return null;
    const r = DataFolderLock.acquire(this.dataDir, this.embedsOthers);
    if (!(r instanceof DataFolderLock)) return null;
    this.lock = r;
    this.current = 'writer';
    const was = this.followerBecause;
    this.followerBecause = null;
    return { was };
  }

  /** Whether the store changed since the last look: followers store without embedding, and the writer notices. */
  othersWrote(changeSeq: number): boolean {
    if (changeSeq === this.seenChangeSeq) return false;
    this.seenChangeSeq = changeSeq;
    return true;
  }

  release(): void {
    this.lock?.release();
  }
}
