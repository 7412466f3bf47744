import { type ChildProcess, fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { workerExecArgv } from '@cairn/compute';
import { settleWithin } from '@cairn/core';
import { damagedDatabaseError, type IntegrityReport, isDatabaseDamage, recordIntegrity } from '@cairn/store';

/** Compiled through `../dist/` so the task runs from `src/` (tests) and `dist/` alike. */
const QUICK_CHECK_TASK = fileURLToPath(new URL('../dist/tasks/quick-check.js', import.meta.url));

/** How long `close` waits for the killed check to exit. */
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
  private child: ChildProcess | null = null;
  /** Settles once the check's process has exited. */
  private exited: Promise<void> = Promise.resolve();

  constructor(
    private readonly path: string,
    private readonly log: Log,
  ) {}

  get status(): StoreHealthStatus {
    return { ...this.current, problems: [...this.current.problems] };
  }

  /**
   * Starts the background quick check; resolves with its report (or null if it could not run). It runs in a
   * process of its own, not a thread: a thread terminated while better-sqlite3 is inside a call (opening the
   * file, or throwing the check's verdict on a damaged one) aborts the whole process (V8's "ToLocalChecked
   * Empty MaybeLocal"; a server stopped during its first check on a damaged file died so 2 times in 3), and
   * a check of a large file cannot be interrupted. A process can be killed at any point.
   */
  check(): Promise<IntegrityReport | null> {
    if (this.current.state === 'damaged') return Promise.resolve(null);
    this.current = { state: 'checking', problems: [] };
    return new Promise((resolve) => {
      let child: ChildProcess;
      try {
        child = fork(QUICK_CHECK_TASK, [this.path], {
          execArgv: workerExecArgv(process.execArgv),
          stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
        });
      } catch (err) {
        this.current = { state: 'unchecked', problems: [] };
        this.log('warn', 'database integrity check could not run', { error: (err as Error).message });
        return resolve(null);
      }
      this.child = child;
      // The check must not keep a process alive that is otherwise done.
      child.unref();
      child.channel?.unref();
      // 'close', not 'exit': it comes after the IPC channel has delivered every message.
      this.exited = new Promise<void>((r) => child.once('close', () => r()));
      child.once('message', (message) => {
        const report = message as IntegrityReport;
        // Damage met meanwhile (and recorded then) is not cleared by a check that read past it.
        if (this.current.state !== 'damaged') {
          this.current = {
            state: report.ok ? 'ok' : 'damaged',
            problems: report.problems,
            checkedAt: Date.now(),
            ms: report.ms,
          };
          // Beside the file, for the commands that do not check it (`cairn stats`).
          recordIntegrity(this.path, report, `the start-up check of process ${process.pid}`);
        }
        if (report.ok) this.log('info', 'database integrity check passed', { ms: report.ms });
        else this.log('error', 'database is damaged', { path: this.path, problems: report.problems });
        resolve(report);
      });
      child.once('error', (err) => {
        // Not a verdict on the file: say so and serve as before.
        if (this.current.state === 'checking') this.current = { state: 'unchecked', problems: [] };
        this.log('warn', 'database integrity check could not run', { error: err.message });
        resolve(null);
      });
      child.once('close', () => {
        if (this.child === child) this.child = null;
        if (this.current.state === 'checking') this.current = { state: 'unchecked', problems: [] };
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
      recordIntegrity(
        this.path,
        { ok: false, depth: 'quick', problems: this.current.problems },
        `an operation of process ${process.pid}`,
      );
      this.log('error', 'database is damaged', { path: this.path, error: (err as Error).message });
    }
    return damagedDatabaseError(this.path, this.current.problems, err);
  }

  /** Stops the check, if it still runs: its process is killed, and waited for (at most CLOSE_WAIT_MS). */
  async close(): Promise<void> {
    const child = this.child;
    this.child = null;
    if (!child) return;
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await settleWithin(this.exited, CLOSE_WAIT_MS);
  }
}
