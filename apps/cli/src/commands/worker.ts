import { CairnError } from '@cairn/core';
import { StageWorkerHost } from '@cairn/engine/distributed';
import { deadLetters, retryDeadLetters, STAGE_NAMES, type StageName } from '@cairn/pipeline/distributed';
import type { CliEnv } from '../env.js';
import { resolveDataDir } from '../env.js';
import { numberFlag } from '../flags.js';
import { createLogger } from '../logger.js';
import { withQueues } from '../open-engine.js';
import { EXIT, writeJson } from '../output.js';

/** After the shutdown deadline, how long the rest of the stop may take before the process exits anyway (ms). */
const FORCE_EXIT_AFTER_MS = 10_000;

export interface WorkerFlags {
  stages: string;
  concurrency: string;
  dataDir?: string;
  shutdownTimeout: string;
  reconcileInterval: string;
  embedRate?: string;
}

function requireRedis(env: CliEnv, what: string): void {
  if (!env.REDIS_URL)
    throw new CairnError('INVALID_INPUT', `${what} needs REDIS_URL (e.g. REDIS_URL=redis://127.0.0.1:6379)`, {
      field: 'REDIS_URL',
    });
}

export function parseStages(spec: string): StageName[] {
  const stages = spec
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  for (const s of stages)
    if (!STAGE_NAMES.includes(s as StageName))
      throw new CairnError('INVALID_INPUT', `unknown stage "${s}"; stages are ${STAGE_NAMES.join(', ')}`, {
        field: 'stages',
      });
  if (stages.length === 0) throw new CairnError('INVALID_INPUT', 'no stages given', { field: 'stages' });
  return stages as StageName[];
}

/**
 * `cairn worker`: runs the chosen stages until SIGTERM/SIGINT, then stops taking jobs and lets active ones
 * finish within --shutdown-timeout (jobs still running after that are retried by another worker once
 * their lock lapses).
 */
export async function workerCommand(flags: WorkerFlags, env: CliEnv): Promise<void> {
  requireRedis(env, 'cairn worker');
  const stages = parseStages(flags.stages);
  // Every number is checked before anything starts: a mistyped value once turned the crash-recovery sweep
  // off (NaN) or made SIGTERM exit at once without draining.
  const concurrency = numberFlag(flags.concurrency, 'concurrency', { min: 1, max: 64 });
  const embedRate =
    flags.embedRate === undefined ? undefined : numberFlag(flags.embedRate, 'embed-rate', { min: 1 });
  const reconcileSeconds = numberFlag(flags.reconcileInterval, 'reconcile-interval', { min: 0, max: 86_400 });
  const shutdownSeconds = numberFlag(flags.shutdownTimeout, 'shutdown-timeout', { min: 0, max: 3_600 });
  const logger = createLogger(env.CAIRN_LOG_LEVEL === 'warn' ? 'info' : env.CAIRN_LOG_LEVEL);
  const host = await StageWorkerHost.start({
    dataDir: resolveDataDir(flags.dataDir, env),
    redisUrl: env.REDIS_URL!,
    stages,
    concurrency,
    reconcileIntervalMs: reconcileSeconds * 1000,
    // BullMQ's limiter is global to the queue: the rate holds however many workers run.
    ...(embedRate ? { embedLimiter: { max: embedRate, duration: 1_000 } } : {}),
    queue: { prefix: env.CAIRN_QUEUE_PREFIX, shards: env.CAIRN_SHARDS },
    embedderSpec: env.CAIRN_EMBEDDER,
    vectorStorage: env.CAIRN_VECTOR_STORAGE,
    buildThreads: env.CAIRN_BUILD_THREADS,
    consolidation: env.CAIRN_CONSOLIDATE_EVERY > 0 ? { intervalMs: env.CAIRN_CONSOLIDATE_EVERY } : false,
    ...(env.CAIRN_PRUNE_POLICIES.length > 0 ? { prune: { policies: env.CAIRN_PRUNE_POLICIES } } : {}),
    env: env.raw,
    log: (level, msg, data) => logger[level](data ?? {}, msg),
  });
  logger.info(
    { stages, concurrency, shards: env.CAIRN_SHARDS, prefix: env.CAIRN_QUEUE_PREFIX },
    'worker started',
  );
  const report = setInterval(() => logger.info(host.status, 'worker status'), 30_000);
  report.unref();
  await new Promise<void>((resolve) => {
    let stopping = false;
    const stop = (signal: string) => {
      if (stopping) {
        // A second signal means "now": what was not finished is retried by another worker.
        logger.warn({ signal }, 'worker stopping at once on a second signal');
        process.exit(EXIT.failure);
      }
      stopping = true;
      logger.info({ signal }, 'worker stopping: no new jobs, draining active ones');
      clearInterval(report);
      const deadline = shutdownSeconds * 1000;
      // close() bounds each step that needs Redis; this is the backstop should anything else hang.
      setTimeout(() => {
        logger.error({ afterMs: deadline + FORCE_EXIT_AFTER_MS }, 'worker did not stop in time; exiting');
        process.exit(EXIT.failure);
      }, deadline + FORCE_EXIT_AFTER_MS).unref();
      void host.close(deadline).then(
        (r) => {
          logger.info({ graceful: r.graceful, status: host.status }, 'worker stopped');
          resolve();
        },
        // Unhandled, a failed close ended the process with Node's own exit 1 and no word of why.
        (err: Error) => {
          logger.error({ error: err.message }, 'worker stopped, but its close failed');
          process.exitCode = EXIT.failure;
          resolve();
        },
      );
    };
    process.on('SIGTERM', stop);
    process.on('SIGINT', stop);
  });
  // Everything is closed; a BullMQ connection that was mid-reconnect when Redis went away can still hold
  // the event loop open, and a stopped worker has nothing left to do.
  process.exit(process.exitCode ?? EXIT.ok);
}

export async function deadLettersCommand(
  flags: { json?: boolean; retry?: boolean; limit: string },
  env: CliEnv,
): Promise<void> {
  requireRedis(env, 'cairn dead-letters');
  const limit = numberFlag(flags.limit, 'limit', { min: 1, max: 100_000 });
  await withQueues(env, async (topology) => {
    if (flags.retry) {
      const n = await retryDeadLetters(topology);
      if (flags.json) writeJson({ retried: n });
      else process.stdout.write(`retried ${n} dead-lettered jobs\n`);
      return;
    }
    const dead = await deadLetters(topology, limit);
    if (flags.json) {
      writeJson({ deadLetters: dead });
      return;
    }
    if (dead.length === 0) process.stdout.write('no dead-lettered jobs\n');
    for (const d of dead)
      process.stdout.write(
        `${d.queue} ${d.id} (${d.size} memories, ${d.attempts} attempts${d.failedAt ? `, ${new Date(d.failedAt).toISOString()}` : ''}): ${d.reason}\n`,
      );
  });
}
