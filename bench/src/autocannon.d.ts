// The part of autocannon 9's programmatic API the API benchmark uses (the package ships no types, and
// @types/autocannon is not a dependency). Field names follow autocannon's README, "API" and "Results".
declare module 'autocannon' {
  import type { EventEmitter } from 'node:events';

  namespace autocannon {
    interface Request {
      method?: string;
      path?: string;
      headers?: Record<string, string>;
      body?: string | Buffer;
    }

    /** One connection; `setupClient` gets it before it connects. */
    interface Client extends EventEmitter {
      setRequests(requests: Request[]): void;
    }

    interface Options {
      url: string;
      connections?: number;
      /** Seconds. */
      duration?: number;
      method?: string;
      headers?: Record<string, string>;
      requests?: Request[];
      setupClient?: (client: Client) => void;
      /** Seconds before a request counts as a timeout (an error). */
      timeout?: number;
    }

    /** An hdr-histogram-percentiles-obj summary. */
    interface Histogram {
      average: number;
      mean: number;
      stddev: number;
      min: number;
      max: number;
      total: number;
      p50: number;
      p90: number;
      p99: number;
    }

    interface Result {
      /** Per-second samples of completed requests. */
      requests: Histogram & { sent: number };
      /** Response latency (ms) of the 2xx responses, on an integer-millisecond histogram. */
      latency: Histogram & { totalCount: number };
      duration: number;
      errors: number;
      timeouts: number;
      non2xx: number;
      '2xx': number;
      statusCodeStats: Record<string, { count: number }>;
    }

    interface Instance extends EventEmitter, PromiseLike<Result> {
      stop(): void;
    }
  }

  function autocannon(opts: autocannon.Options): autocannon.Instance;
  export = autocannon;
}
