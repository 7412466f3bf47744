// Closed-loop search clients against a running `cairn serve`, their latencies kept per named phase, and the
// wait for a fresh server to answer: what the benchmarks that load a server while something else happens
// beside it (monitoring-routes, consolidation-beside-search) share.
import type { ServeProcess } from './serve-process.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The p-quantile of `xs` (nearest rank), NaN when empty. */
export function quantile(xs: readonly number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.floor(p * s.length))]! : Number.NaN;
}

/** Listening comes before ready (the engine opens its indexes): waits until /readyz answers 200. */
export async function untilReady(base: string, server: ServeProcess, what: string): Promise<void> {
  for (
    let i = 0;
    !(await fetch(`${base}/readyz`).then(
      (r) => r.ok,
      () => false,
    ));
    i++
  ) {
    if (i > 600) throw new Error(`${what} did not become ready\n${server.tail()}`);
    await sleep(200);
  }
}

/** `clients` lanes, each sending the next search body as soon as its last one is answered. */
export class ClosedLoopSearches {
  /** The phase the latencies are recorded under; change it to start the next one. */
  phase = 'warm';
  private readonly latencies = new Map<string, number[]>();
  private stopped = false;
  private next = 0;
  private readonly lanes: Promise<void>[];

  constructor(
    private readonly base: string,
    private readonly bodies: readonly string[],
    clients: number,
  ) {
    this.lanes = Array.from({ length: clients }, () => this.lane());
  }

  private async lane(): Promise<void> {
    while (!this.stopped) {
      const t = performance.now();
      const res = await fetch(`${this.base}/v1/search`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: this.bodies[this.next++ % this.bodies.length],
      });
      await res.text();
      if (res.status !== 200) throw new Error(`search answered ${res.status}`);
      const phase = this.phase;
      if (!this.latencies.has(phase)) this.latencies.set(phase, []);
      this.latencies.get(phase)!.push(performance.now() - t);
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all(this.lanes);
  }

  /** A phase's searches per second over `seconds`, and its p50 and p99 latency (ms). */
  summary(phase: string, seconds: number): { rate: number; p50: number; p99: number } {
    const xs = this.latencies.get(phase) ?? [];
    return { rate: xs.length / seconds, p50: quantile(xs, 0.5), p99: quantile(xs, 0.99) };
  }
}
