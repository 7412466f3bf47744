import type { CairnEngine } from './cairn-engine.js';
import { DataFolderLock } from './data-folder-lock.js';

export interface WriterWaitOptions {
  /**
   * Stop waiting once no memory settled for this long (the writer busy with a build, its embedder down):
   * what is left is stored all the same, and the writer embeds it when it can. @defaultValue 120_000
   */
  stallMs: number;
  /** Between two looks at the store. @defaultValue 250 */
  pollMs: number;
  /** Told, after each look that found some settled, how many of the keys are. */
  onProgress?: (settled: number, total: number) => void;
}

export const DEFAULT_WRITER_WAIT_OPTIONS: Readonly<WriterWaitOptions> = Object.freeze({
  stallMs: 120_000,
  pollMs: 250,
});

/** Keys looked up per look: the oldest still waiting, which the writer embeds first. */
const LOOK_AHEAD = 20_000;

/** How a follower's wait for the writer ended. */
export interface WriterWaitResult {
  /** Of the keys, the memories still without a vector (or a recorded failure) in the active space. */
  pending: number;
  /**
   * The writer went away meanwhile and this process took its role over: what is pending is now this
   * process's to embed (its `drain`).
   */
  tookOver: boolean;
  /**
   * False when the folder's writer is a one-shot command (a `cairn search --queries` reading a pipe, say),
   * which embeds only its own writes: nothing was waited for, and the next long-lived writer embeds them.
   */
  writerEmbedsOthers: boolean;
}

/**
 * Waits, in a follower (a process beside the data folder's writer: a `cairn ingest` while `cairn serve`
 * runs), until the memories it stored (`keys`) are embedded by the writer, which notices every process's
 * writes by the change sequence and indexes what it embeds. If the writer exits or dies meanwhile, this
 * process takes its role over (as a long-lived follower's refresh does) and returns at once, `tookOver`,
 * with the rest to embed itself. Memories the embedder refused count as settled, as deleted ones do.
 */
export async function whenWriterEmbedded(
  engine: CairnEngine,
  keys: readonly number[],
  options: Partial<WriterWaitOptions> = {},
): Promise<WriterWaitResult> {
  const o = { ...DEFAULT_WRITER_WAIT_OPTIONS, ...options };
  let outstanding = [...new Set(keys)];
  const total = outstanding.length;
  let progressAt = Date.now();
  const stillWaiting = (spaceId: string) => {
    let n = 0;
    for (let i = 0; i < outstanding.length; i += LOOK_AHEAD)
      n += engine.store.embeddings.unsettled(spaceId, outstanding.slice(i, i + LOOK_AHEAD)).length;
    return n;
  };
  for (;;) {
    engine.refresh();
    if (engine.writerRole.role === 'writer')
      return { pending: outstanding.length, tookOver: true, writerEmbedsOthers: true };
    const space = engine.space;
    if (!space || outstanding.length === 0)
      return { pending: outstanding.length, tookOver: false, writerEmbedsOthers: true };
    if (DataFolderLock.holder(engine.dataDir)?.embedsOthers === false)
      return { pending: stillWaiting(space.id), tookOver: false, writerEmbedsOthers: false };
    // The writer embeds in the order memories changed, so the oldest waiting settle first: looking at them
    // alone is enough until they have all settled, whatever the file's size.
    const front = outstanding.slice(0, LOOK_AHEAD);
    const waiting = new Set(engine.store.embeddings.unsettled(space.id, front));
    if (waiting.size < front.length) {
      outstanding = [...front.filter((k) => waiting.has(k)), ...outstanding.slice(LOOK_AHEAD)];
      progressAt = Date.now();
      o.onProgress?.(total - outstanding.length, total);
      if (outstanding.length === 0) return { pending: 0, tookOver: false, writerEmbedsOthers: true };
    } else if (Date.now() - progressAt > o.stallMs) {
      // Counted over every key left, not only the ones looked at so far.
      return { pending: stillWaiting(space.id), tookOver: false, writerEmbedsOthers: true };
    }
    await new Promise((r) => setTimeout(r, o.pollMs));
  }
}
