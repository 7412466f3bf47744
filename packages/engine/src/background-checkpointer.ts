import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { workerExecArgv } from '@cairn/compute';
import type { EngineLog } from './engine-options.js';

/** Compiled through `../dist/` so the task runs from `src/` (tests) and `dist/` alike. */
const CHECKPOINT_TASK = fileURLToPath(new URL('../dist/tasks/wal-checkpoint.js', import.meta.url));

/** How long the writer's restart of a long log waits for a checkpoint under way and for readers, ms. */
const RESTART_WAIT_MS = 20;

/** A log longer than this after a pass is restarted by the writer: 64 MiB of 4 KiB pages. */
const DEFAULT_RESTART_FRAMES = 16_384;

/** SQLite's own default: a commit that grows the log past this many pages checkpoints it inline. */
const INLINE_AUTOCHECKPOINT_PAGES = 1_000;

/** The writer connection: its checkpoint settings, and whether a transaction of its own is open. */
interface PragmaTarget {
  pragma(source: string, options?: { simple: true }): unknown;
  readonly open: boolean;
  readonly inTransaction: boolean;
}

/**
 * Moves a writer's WAL checkpoints off its serving thread. SQLite checkpoints inside the commit that
 * grows the log past 1,000 pages: at 100k memories that commit took 20–30 ms instead of 3–4, and a
 * reindex or a bulk ingest made one every few batches, each a stall for every search queued behind it.
 * Here the writer's connection never checkpoints (`wal_autocheckpoint = 0`); a thread with its own
 * connection runs a PASSIVE checkpoint every `intervalMs`. If that thread fails, the writer checkpoints
 * inline again, as SQLite does by default, so the log cannot grow without bound.
 */
export class BackgroundCheckpointer {
  private worker: Worker | null = null;
  private stopping: Promise<void> | null = null;

  constructor(
    private readonly path: string,
    private readonly writer: PragmaTarget,
    private readonly log: EngineLog,
    private readonly intervalMs = 250,
    /** Frames the log may hold after a pass before the writer restarts it (see catchUp). */
    private readonly restartFrames = DEFAULT_RESTART_FRAMES,
  ) {}

  /**
   * Copies what the thread's checkpoints left in a long log, on the writer's own connection, and restarts
   * the log: the writer's next transaction writes it from its start. Runs when the thread reports a log
   * past `restartFrames`; the report is handled between two of the writer's transactions (they are
   * synchronous). SQLite restarts a log only when a writer begins a transaction after a checkpoint copied
   * every frame, which a pass on another thread almost never achieves against a writer that commits batch
   * after batch: the log grew to 4.4 GB in a million-memory `cairn ingest`, and every page read then
   * searched its index. The copy here is only what the thread's passes have not already made.
   */
  private catchUp(): void {
    if (!this.worker || !this.writer.open || this.writer.inTransaction) return;
    // RESTART copies the rest, waits for a pass of the thread's under way and for readers still on the log,
    // and leaves the log to be written from its start. A serving writer must not wait long for a term
    // thread's read of a common word: at most RESTART_WAIT_MS, else the log restarts on a later report.
    // It runs from the thread's message, outside any caller: an error here (a full disk) must be said, not
    // thrown into the event loop, where it would end the process. The next report tries again.
    const previous = this.writer.pragma('busy_timeout', { simple: true });
    this.writer.pragma(`busy_timeout = ${RESTART_WAIT_MS}`);
    try {
      this.writer.pragma('wal_checkpoint(RESTART)');
    } catch (err) {
      this.log('warn', 'restarting a long WAL failed; the next report tries again', {
        error: (err as Error).message,
      });
    } finally {
      this.writer.pragma(`busy_timeout = ${previous}`);
    }
  }

  /** Whether checkpoints currently run on the background thread. */
  get running(): boolean {
    return this.worker !== null;
  }

  start(): void {
    if (this.worker) return;
    const worker = new Worker(CHECKPOINT_TASK, {
      workerData: { path: this.path, intervalMs: this.intervalMs, restartFrames: this.restartFrames },
      execArgv: workerExecArgv(process.execArgv),
    });
    // The thread must never keep a process alive that is otherwise done.
    worker.unref();
    this.worker = worker;
    this.writer.pragma('wal_autocheckpoint = 0');
    worker.on('message', (m: { error?: string; longLog?: number }) => {
      if (m.longLog !== undefined) this.catchUp();
      if (m.error)
        this.log('warn', 'background WAL checkpoints failed; checkpointing inline', { error: m.error });
    });
    worker.once('error', (err) => {
      this.log('warn', 'background WAL checkpoints could not run; checkpointing inline', {
        error: err.message,
      });
    });
    worker.once('exit', () => {
      if (this.worker !== worker) return;
      this.worker = null;
      this.inline();
    });
  }

  /** Ends the thread after one last checkpoint, and gives the writer its inline checkpoints back. */
  stop(): Promise<void> {
    const worker = this.worker;
    if (!worker) return this.stopping ?? Promise.resolve();
    this.worker = null;
    this.stopping = new Promise<void>((resolve) => {
      worker.once('exit', () => resolve());
      // Referenced again while it winds down: a process whose only other handle is this wait would
      // otherwise exit before the thread does (a CLI's last await, unsettled: exit code 13).
      worker.ref();
      worker.postMessage('stop');
      // A thread stuck in a checkpoint must not hold a close forever.
      setTimeout(() => void worker.terminate(), 5_000).unref();
    }).finally(() => this.inline());
    return this.stopping;
  }

  private inline(): void {
    if (this.writer.open) this.writer.pragma(`wal_autocheckpoint = ${INLINE_AUTOCHECKPOINT_PAGES}`);
  }
}
