type Log = (level: 'debug' | 'info' | 'warn' | 'error', msg: string, data?: Record<string, unknown>) => void;

/** Distinct errors remembered at once; past it the oldest is forgotten (logged again when it comes back). */
const MAX_REMEMBERED = 64;

/**
 * Logs an error that repeats once, then at most once per `everyMs`, saying how many were held back. A
 * worker whose Redis is down gets `error` events from BullMQ many times a second (ECONNREFUSED on every
 * reconnect of every queue): 425 lines in 20 s buried the one line that said what was wrong.
 */
export class RepeatedErrorLog {
  private readonly seen = new Map<string, { at: number; held: number }>();

  constructor(
    private readonly log: Log,
    /** @defaultValue 10_000 */
    private readonly everyMs = 10_000,
    private readonly now: () => number = Date.now,
  ) {}

  error(msg: string, err: Error): void {
    const key = `${msg}\u0000${err.message}`;
    const t = this.now();
    const last = this.seen.get(key);
    if (last && t - last.at < this.everyMs) {
      last.held++;
      return;
    }
    this.log('error', msg, {
      error: err.message,
      ...(last && last.held > 0 ? { repeated: last.held, sinceMs: t - last.at } : {}),
    });
    this.seen.delete(key);
    this.seen.set(key, { at: t, held: 0 });
    if (this.seen.size > MAX_REMEMBERED) this.seen.delete(this.seen.keys().next().value!);
  }
}
