import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { workerExecArgv } from '@cairn/compute';
import { settleWithin } from '@cairn/core';
import { damagedDatabaseError, type IntegrityReport, isDatabaseDamage } from '@cairn/store';

/** Compiled through `../dist/` so the task runs from `src/` (tests) and `dist/` alike. */
const QUICK_CHECK_TASK = fileURLToPath(new URL('../dist/tasks/quick-check.js', import.meta.url));

/** How long `close` waits for the check's thread to open its connection before terminating it anyway. */
const CLOSE_WAIT_MS = 10_000;

type Log = (level: 'debug' | 'info' | 'warn' | 'error', msg: string, data?: Record<string, unknown>) => void;

/** Whether cairn.db can be trusted, as far as this process knows. */
export interface StoreHealthStatus {
  /**
   * `unchecked`: no check has run (one-shot commands skip it); `checking`: the background check runs and
   * requests are served meanwhile; `ok`: it passed; `damaged`: it failed, or SQLite reported damage.
   */
  state: 'unchecked' | 'checking' | 'ok' | 'damaged';
  problems: string[];
  /** When the last check finished (ms since the epoch). */
  checkedAt?: number;
  /** How long it took (ms). */
  ms?: number;
}

/**
 * Guards every operation of an engine against a damaged database. SQLite reads damaged pages without
 * complaint until a query's path crosses a broken b-tree, so a damaged file can answer some searches
 * wrongly and fail others. A long-lived process checks the whole file once at start, off the serving
 * thread; any SQLite damage error seen meanwhile also marks the store damaged. From then on every
 * operation fails with one STORAGE_ERROR that says what is wrong and what to do, and readiness fails.
 */
export class StoreHealth {
  private current: StoreHealthStatus = { state: 'unchecked', problems: [] };
  private worker: Worker | null = null;
  /** Settles once the check's thread has opened its connection (or ended): it may be terminated then. */
  private terminable: Promise<void> = Promise.resolve();

  constructor(
    private readonly path: string,
    private readonly log: Log,
  ) {}

  get status(): StoreHealthStatus {
    return { ...this.current, problems: [...this.current.problems] };
  }

  /** Starts the background quick check; resolves with its report (or null if it could not run). */
  check(): Promise<IntegrityReport | null> {
    if (this.current.state === 'damaged') return Promise.resolve(null);
    this.current = { state: 'checking', problems: [] };
    return new Promise((resolve) => {
      const worker = new Worker(QUICK_CHECK_TASK, {
        workerData: { path: this.path },
        execArgv: workerExecArgv(process.execArgv),
      });
      this.worker = worker;
      // The check must not keep a process alive that is otherwise done.
      worker.unref();
      let markTerminable = () => {};
      this.terminable = new Promise<void>((r) => {
        markTerminable = r;
      });
      worker.once('exit', () => markTerminable());
      worker.on('message', (report: IntegrityReport | 'opened') => {
        if (report === 'opened') return markTerminable();
        if (this.current.state !== 'damaged') {
          this.current = {
            state: report.ok ? 'ok' : 'damaged',
            problems: report.problems,
            checkedAt: Date.now(),
            ms: report.ms,
          };
        }
        if (report.ok) this.log('info', 'database integrity check passed', { ms: report.ms });
        else this.log('error', 'database is damaged', { path: this.path, problems: report.problems });
        resolve(report);
      });
      worker.once('error', (err) => {
        // Not a verdict on the file: say so and serve as before.
        if (this.current.state === 'checking') this.current = { state: 'unchecked', problems: [] };
        this.log('warn', 'database integrity check could not run', { error: err.message });
        resolve(null);
      });
      worker.once('exit', () => {
        if (this.worker === worker) this.worker = null;
        resolve(null);
      });
    });
  }

  /** Runs `fn` unless the store is known to be damaged; SQLite damage errors mark it so and are named. */
  guard<T>(fn: () => T): T {
    this.assertUsable();
    let out: T;
    try {
      out = fn();
    } catch (err) {
      throw this.observe(err);
    }
    if (out instanceof Promise) return out.catch((err: unknown) => Promise.reject(this.observe(err))) as T;
    return out;
  }

  assertUsable(): void {
    if (this.current.state === 'damaged') throw damagedDatabaseError(this.path, this.current.problems);
  }

  /** The error to report for `err`: SQLite damage becomes the named STORAGE_ERROR; the rest is unchanged. */
  observe(err: unknown): unknown {
    if (!isDatabaseDamage(err)) return err;
    if (this.current.state !== 'damaged') {
      this.current = { state: 'damaged', problems: [(err as Error).message], checkedAt: Date.now() };
      this.log('error', 'database is damaged', { path: this.path, error: (err as Error).message });
    }
    return damagedDatabaseError(this.path, this.current.problems, err);
  }

  /**
   * Stops the check. Not while its thread loads its modules or opens its connection: a thread terminated
   * inside better-sqlite3's open aborts the whole process (V8's "ToLocalChecked Empty MaybeLocal", from
   * `Database::JS_new`: an engine closed right after opening lost a test process so). It waits for that,
   * up to CLOSE_WAIT_MS; terminating the check itself, inside PRAGMA quick_check, is safe.
   */
  async close(): Promise<void> {
    const worker = this.worker;
    this.worker = null;
    if (!worker) return;
    await settleWithin(this.terminable, CLOSE_WAIT_MS);
    await worker.terminate();
  }
}
