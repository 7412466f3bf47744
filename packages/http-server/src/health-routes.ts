// The probes an orchestrator polls: liveness (the process answers) and readiness (what it needs works).
import { HealthResponseSchema } from '@cairn/api-contract';
import { valueWithin } from '@cairn/core';
import type { MemoryService } from '@cairn/service';
import type { FastifyInstance } from 'fastify';
import { QUEUE_READ_MS } from './server-metrics.js';

/** Distributed mode: Redis's reachability, and jobs and workers per queue. */
export interface QueueProbe {
  ping(): Promise<void>;
  depths(): Promise<Record<string, Record<string, number>>>;
}

/** `/healthz` (the process answers) and `/readyz` (the store, the key catalog, the index and, distributed, Redis). */
export function registerHealthRoutes(
  app: FastifyInstance,
  service: MemoryService,
  queues: QueueProbe | undefined,
): void {
  app.get('/healthz', { schema: { response: { 200: HealthResponseSchema } } }, async () => ({
    status: 'ok' as const,
  }));
  app.get(
    '/readyz',
    { schema: { response: { 200: HealthResponseSchema, 503: HealthResponseSchema } } },
    async (_req, reply) => {
      const checks: Record<string, { ok: boolean; detail?: string }> = {};
      // `SELECT 1` answers from a damaged file too; the engine's integrity check and the damage it has
      // met decide. A check still running is not a failure: requests are served meanwhile.
      const health = service.engine.health.status;
      try {
        service.engine.store.db.prepare('SELECT 1').get();
        checks.store =
          health.state === 'damaged'
            ? { ok: false, detail: `cairn.db is damaged: ${health.problems[0] ?? 'see the log'}` }
            : { ok: true, detail: `integrity ${health.state}` };
      } catch (err) {
        checks.store = { ok: false, detail: (err as Error).message };
      }
      // Not a failure either: while the key catalog loads, filters and session match are answered from
      // SQLite, more slowly. `cairn serve` listens once it is loaded, or 2 s after opening.
      try {
        const catalog = service.engine.store.catalogState();
        checks.catalog = {
          ok: true,
          detail: {
            loaded: 'loaded',
            loading: 'loading (filters and sessions answered from SQLite meanwhile)',
            off: 'off (filters and sessions answered from SQLite)',
          }[catalog.state],
        };
      } catch (err) {
        // Its rows are unreadable: the store's check above says why, and this one must not hide it.
        checks.catalog = { ok: false, detail: (err as Error).message };
      }
      const embedder = service.engine.embedder;
      checks.index = embedder
        ? { ok: true, detail: service.engine.space?.id ?? 'no embedding space yet' }
        : { ok: true, detail: 'lexical only (no embedder)' };
      if (queues) {
        try {
          await queues.ping();
          checks.redis = { ok: true };
        } catch (err) {
          checks.redis = { ok: false, detail: (err as Error).message };
        }
        if (checks.redis.ok) checks.workers = await workersCheck(queues);
      }
      const ok = Object.values(checks).every((c) => c.ok);
      return reply.code(ok ? 200 : 503).send({ status: ok ? 'ok' : 'unavailable', checks });
    },
  );
}

/**
 * What a write will meet in distributed mode. Never a failure of this server (it reads, and queues
 * writes), so always `ok`; but with no capture worker a `wait=stored` write times out unconfirmed.
 */
async function workersCheck(queues: QueueProbe): Promise<{ ok: boolean; detail: string }> {
  try {
    const read = await valueWithin(queues.depths(), QUEUE_READ_MS);
    if (read === null) return { ok: true, detail: 'workers unknown: Redis did not answer in time' };
    const depths = Object.entries(read);
    if (depths.some(([, c]) => c.workers === undefined))
      return { ok: true, detail: 'workers unknown: Redis refused CLIENT LIST' };
    const idle = depths.filter(([, c]) => c.workers === 0).map(([q]) => q);
    return {
      ok: true,
      detail:
        idle.length === 0
          ? 'every queue has a worker'
          : `no worker takes ${idle.join(', ')}: those jobs wait until a cairn worker of that stage starts`,
    };
  } catch (err) {
    return { ok: true, detail: `workers unknown: ${(err as Error).message}` };
  }
}
