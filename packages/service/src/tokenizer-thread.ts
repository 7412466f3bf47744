import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { type SearchResponse, settleWithin } from '@cairn/core';
import { type Headed, indexLine, recordTexts, toIndexEntry } from './index-entry.js';
import { primeTokenCounts, tokenCountKnown } from './token-counter.js';

const WORKER_FILE = fileURLToPath(new URL('../dist/token-count-worker.js', import.meta.url));

/** The thread {@link TokenizerThread.startEarly} started, until {@link TokenizerThread.start} takes it. */
let startedEarly: TokenizerThread | null = null;

/**
 * Loads the tokenizer on a thread of its own while the calling thread does something else, and counts
 * texts there; the counts come back into `countTokens`'s cache, which then answers without tokenising.
 * For one-shot commands: the o200k tables take 140 ms to load at best (over 400 ms on a busy machine), on
 * the critical path of a `cairn search` that counts the tokens of ten hits; started first, the load runs
 * on the second core while this one opens the folder and searches. For a server: the hits of a search at
 * a million memories are mostly records never counted before, ~1.3 ms of tokenising a search on the serving
 * thread. Any failure only loses the head start: `countTokens` counts itself. The thread keeps the process
 * alive until {@link TokenizerThread.close}.
 */
export class TokenizerThread {
  private worker: Worker | null;
  private readonly pending = new Map<number, (counts: number[] | null) => void>();
  private nextId = 1;
  /** Settles once the thread has loaded its modules and tables (or is gone). */
  private readonly loaded: Promise<void>;
  private tablesLoaded = false;

  /**
   * Starts the thread before the command that counts tokens has loaded its own modules: `cairn search
   * --json` loaded its command's modules for about 0.5 s, started the thread, then waited another 0.6 s for
   * its tables with nothing left to do (1.2 s on a small folder, half of it idle). Until the command takes
   * it with {@link TokenizerThread.start}, the thread does not keep the process alive, so a command that
   * fails first exits as before (the thread runs only JavaScript, which is safe to stop at exit).
   */
  static startEarly(): void {
    if (startedEarly !== null) return;
    startedEarly = new TokenizerThread();
    startedEarly.worker?.unref();
  }

  /** The thread started early for this command, if any, else a new one; it keeps the process alive until closed. */
  static start(): TokenizerThread {
    const thread = startedEarly ?? new TokenizerThread();
    startedEarly = null;
    thread.worker?.ref();
    return thread;
  }

  constructor() {
    let worker: Worker | null = null;
    let settleLoaded: () => void = () => undefined;
    this.loaded = new Promise<void>((resolve) => {
      settleLoaded = resolve;
    });
    try {
      // Not unref'd: a prime still waiting would be dropped by an exiting process. Call close().
      worker = new Worker(WORKER_FILE);
      worker.on('message', (m: { id: number; counts: number[] } | { ready: true }) => {
        if ('ready' in m) {
          this.tablesLoaded = true;
          return settleLoaded();
        }
        this.pending.get(m.id)?.(m.counts);
        this.pending.delete(m.id);
      });
      const fail = () => {
        this.worker = null;
        settleLoaded();
        for (const settle of this.pending.values()) settle(null);
        this.pending.clear();
      };
      worker.on('error', fail);
      worker.on('exit', fail);
    } catch {
      worker = null;
      settleLoaded();
    }
    this.worker = worker;
  }

  /** Whether the thread has loaded its modules and tables (it stays so once closed). */
  get isLoaded(): boolean {
    return this.tablesLoaded;
  }

  /**
   * Settles once the thread has loaded its tables, or is gone, or after `timeoutMs`: a server listens
   * after it, so its first searches do not wait for the load (0.3 s on a busy machine).
   */
  async ready(timeoutMs = 10_000): Promise<void> {
    await settleWithin(this.loaded, timeoutMs);
  }

  /** Counts `texts` on the thread and hands the counts to `countTokens`. */
  async prime(texts: readonly string[]): Promise<void> {
    const unique = [...new Set(texts)].filter((t) => !tokenCountKnown(t));
    if (!this.worker || unique.length === 0) return;
    const id = this.nextId++;
    const counts = await new Promise<number[] | null>((resolve) => {
      this.pending.set(id, resolve);
      this.worker?.postMessage({ id, texts: unique });
    });
    if (counts) primeTokenCounts(unique, counts);
  }

  /**
   * Counts on the thread every text `searchResponseOut(res)` counts: each hit's record (and named fields) and neighbours,
   * then each hit's index line (which holds the record's count).
   */
  async primeSearch(res: SearchResponse): Promise<void> {
    await this.prime(
      res.hits.flatMap((h) => [
        ...recordTexts(h),
        ...[...(h.neighbors?.before ?? []), ...(h.neighbors?.after ?? [])].map((n) => n.text),
      ]),
    );
    await this.prime(res.hits.map((h) => indexLine(toIndexEntry(h))));
  }

  /** Counts on the thread what a timeline of `records` counts: each record as read in full, then its index line. */
  async primeTimeline(records: readonly Headed[]): Promise<void> {
    await this.prime(records.flatMap(recordTexts));
    await this.prime(records.map((m) => indexLine(toIndexEntry(m))));
  }

  /** Counts on the thread what a `get` of `records` counts: each record as read in full, and its named fields. */
  async primeGet(records: readonly Headed[]): Promise<void> {
    await this.prime(records.flatMap(recordTexts));
  }

  /**
   * Stops the thread, once it has loaded what it loads (a server stopped right after it started): a thread
   * terminated while it loads modules can take the process down, as a pool's thread did (a V8 fatal error).
   * Waits at most 10 s for that.
   */
  async close(): Promise<void> {
    const worker = this.worker;
    if (!worker) return;
    await this.ready();
    this.worker = null;
    await worker.terminate();
  }
}
