/**
 * Waits for `work` at most `ms`: true if it settled (either way) in time, false if not. Never rejects.
 * For shutdown steps that must not hang a process: while Redis is down, ioredis queues commands until it
 * comes back, so an unbounded `await` made a worker ignore SIGTERM for as long as the outage lasted; a
 * thread's close waits for it to reach a point where terminating it is safe, but not forever.
 */
export async function settleWithin(work: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      work.then(
        () => true,
        () => true,
      ),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(false), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * `work`'s value if it resolves within `ms`, else null (it rejected, or took longer). Never rejects. For
 * reads a response can do without: a scrape of /metrics while Redis is down leaves the queue series out
 * rather than failing, or hanging, every other metric.
 */
export async function valueWithin<T>(work: Promise<T>, ms: number): Promise<T | null> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      work.catch(() => null),
      new Promise<null>((resolve) => {
        timer = setTimeout(() => resolve(null), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
