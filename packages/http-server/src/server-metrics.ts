import { valueWithin } from '@cairn/core';
import type { MemoryService } from '@cairn/service';
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';

/**
 * The event-loop delay histogram's timer interval. Node records the time between its timer's runs, so the
 * exported `nodejs_eventloop_lag_*` values include it: an idle server reports a p99 of about this much
 * (10–13 ms), and the delay beyond schedule is the value minus this.
 */
export const EVENT_LOOP_SAMPLING_MS = 10;

/**
 * Prometheus metrics of one API process. Storage gauges are totals, never per namespace: /metrics is an
 * operator endpoint, and namespace names are tenants' data.
 */
export class ServerMetrics {
  readonly registry = new Registry();
  readonly requests: Counter<'method' | 'route' | 'status'>;
  readonly latency: Histogram<'method' | 'route'>;

  constructor(
    service: MemoryService,
    queueDepths?: () => Promise<Record<string, Record<string, number>>>,
    /** How long the memory totals of one scrape serve the next ones (ms). @defaultValue STATS_MAX_AGE_MS */
    statsMaxAgeMs = STATS_MAX_AGE_MS,
  ) {
    // engine.stats() runs several queries per namespace (0.6–0.75 s of the serving thread at 10,000
    // namespaces), and /metrics needs no key: scraped in a loop, it held every search behind it (a search
    // of 5 ms took 9 s). Its totals are read at most once per `statsMaxAgeMs`, whoever scrapes.
    let totals: { at: number; value: Record<string, number> } | null = null;
    const memoryTotals = () => {
      const now = performance.now();
      if (totals && now - totals.at < statsMaxAgeMs) return totals.value;
      const value = { stored: 0, embedded: 0, indexed: 0, pending: 0, failed: 0 };
      for (const s of Object.values(service.engine.stats().namespaces))
        for (const k of Object.keys(value) as Array<keyof typeof value>) value[k] += s[k];
      totals = { at: performance.now(), value };
      return value;
    };
    // The process's own health: resident memory, CPU, heap, GC pauses and event-loop delay. The lag
    // percentiles (`nodejs_eventloop_lag_p99_seconds`, …) cover the time since the previous scrape: a
    // synchronous stall of the serving thread (a long query, an index load) shows up in the next one.
    collectDefaultMetrics({ register: this.registry, eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLING_MS });
    this.requests = new Counter({
      name: 'cairn_http_requests_total',
      help: 'HTTP requests by route and status',
      labelNames: ['method', 'route', 'status'],
      registers: [this.registry],
    });
    this.latency = new Histogram({
      name: 'cairn_http_request_duration_seconds',
      help: 'HTTP request latency',
      labelNames: ['method', 'route'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers: [this.registry],
    });
    new Gauge({
      name: 'cairn_memories',
      help: 'Memories in the store by state (all namespaces)',
      labelNames: ['state'],
      registers: [this.registry],
      collect() {
        for (const [state, n] of Object.entries(memoryTotals())) this.set({ state }, n);
      },
    });
    new Gauge({
      name: 'cairn_namespaces',
      help: 'Namespaces with at least one memory',
      registers: [this.registry],
      collect() {
        // A row count, not engine.stats(): that one costs several queries per namespace.
        this.set(service.engine.store.namespaces().length);
      },
    });
    // Embedding spaces: a live reindex's progress (embedded / total) and which space serves.
    new Gauge({
      name: 'cairn_embedding_space_memories',
      help: 'Live memories of each embedding space: total, embedded (with a current vector), failed',
      labelNames: ['space', 'measure'],
      registers: [this.registry],
      collect() {
        this.reset();
        for (const s of service.engine.listSpaces())
          for (const measure of ['total', 'embedded', 'failed'] as const)
            this.set({ space: s.id, measure }, s.progress[measure]);
      },
    });
    new Gauge({
      name: 'cairn_embedding_space_state',
      help: '1 for each embedding space, labelled with its state (building, ready) and whether searches use it',
      labelNames: ['space', 'state', 'active'],
      registers: [this.registry],
      collect() {
        this.reset();
        // The rows only: no progress counting, which the gauge above already did for this scrape.
        for (const s of service.engine.store.spaces.listSpaces())
          this.set({ space: s.id, state: s.state, active: s.active ? 'true' : 'false' }, 1);
      },
    });
    if (queueDepths) {
      // Both gauges come from one read of Redis per scrape (a scrape collects every metric at once: they
      // share the read in flight). Redis down must not take every other metric with it (a rejected collect
      // fails the whole scrape, and a queue whose connection never came up waits without end): that scrape
      // has no queue series, and /readyz names Redis.
      let inFlight: Promise<QueueDepths | null> | null = null;
      const depths = () => {
        inFlight ??= valueWithin(queueDepths(), QUEUE_READ_MS).finally(() => {
          inFlight = null;
        });
        return inFlight;
      };
      new Gauge({
        name: 'cairn_queue_jobs',
        help: 'Jobs in each pipeline queue by state (distributed mode)',
        labelNames: ['queue', 'state'],
        registers: [this.registry],
        async collect() {
          this.reset();
          for (const [queue, counts] of Object.entries((await depths()) ?? {}))
            for (const [state, n] of Object.entries(counts))
              if (state !== 'workers') this.set({ queue, state }, n);
        },
      });
      new Gauge({
        name: 'cairn_queue_workers',
        help: "Workers taking each pipeline queue's jobs (distributed mode); 0: its jobs wait",
        labelNames: ['queue'],
        registers: [this.registry],
        async collect() {
          this.reset();
          for (const [queue, counts] of Object.entries((await depths()) ?? {}))
            if (counts.workers !== undefined) this.set({ queue }, counts.workers);
        },
      });
    }
  }
}

type QueueDepths = Record<string, Record<string, number>>;

/** How long a scrape's memory totals serve the next scrapes (ms): Prometheus scrapes every 15–60 s. */
export const STATS_MAX_AGE_MS = 5_000;

/** How long a scrape waits for Redis's queue counts before leaving them out (ms). */
export const QUEUE_READ_MS = 2_000;
