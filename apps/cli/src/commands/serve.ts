import cluster from 'node:cluster';
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { CairnError } from '@cairn/core';
import type { CairnEngine } from '@cairn/engine';
import { assertAuthAllowed, createHttpServer, EXPLORER_PREFIX, loadApiKeys } from '@cairn/http-server';
import type { CaptureProducer, QueueTopology } from '@cairn/pipeline/distributed';
import { MemoryService, TokenizerThread } from '@cairn/service';
import { closeInOrder } from '../close-in-order.js';
import { loadDistributed } from '../distributed.js';
import type { CliEnv } from '../env.js';
import { resolveDataDir } from '../env.js';
import { numberFlag } from '../flags.js';
import { readJsonl } from '../jsonl.js';
import { createLogger } from '../logger.js';
import { openEngine } from '../open-engine.js';
import { SAMPLE_CORPUS } from './demo.js';
import { answerChildWrites, primaryForwarder, startChildren } from './serve-cluster.js';

/**
 * The built web explorer: apps/explorer/dist beside this app in the monorepo (and the Docker image, which
 * copies it whole), or an `explorer/` folder beside dist/ in a packed copy. A path rather than a package
 * dependency: the HTTP server only needs a folder of static files, and a CLI without it still serves the API.
 */
const EXPLORER_DIRS = [
  new URL('../../../explorer/dist/', import.meta.url),
  new URL('../../explorer/', import.meta.url),
].map((u) => fileURLToPath(u));

function findExplorerDir(): string | null {
  return EXPLORER_DIRS.find((d) => existsSync(`${d}index.html`)) ?? null;
}

/** The start-up line naming the explorer's URL, or saying why there is none. */
function explorerLine(address: string, dir: string | null): string {
  return dir
    ? `Cairn explorer on ${address}${EXPLORER_PREFIX}\n`
    : 'Cairn explorer not served: no built explorer beside this CLI (in the repository: pnpm build)\n';
}

/** A failure to listen that is the user's choice of port or host, not a bug, named as such (it answered INTERNAL). */
function listenError(err: NodeJS.ErrnoException, port: number, host: string): Error {
  if (err.code === 'EADDRINUSE' || err.code === 'EACCES' || err.code === 'EADDRNOTAVAIL')
    return new CairnError(
      'INVALID_INPUT',
      err.code === 'EADDRINUSE'
        ? `port ${port} on ${host} is in use (another cairn serve?): choose another with --port`
        : `cannot listen on ${host}:${port} (${err.code}): choose another --port or --host`,
      { field: 'port' },
    );
  return err;
}

/** Listens on the address and lets it go at once: throws `listenError`'s error when it cannot. */
async function assertCanListen(port: number, host: string): Promise<void> {
  const probe = createServer();
  await new Promise<void>((resolve, reject) => {
    probe.once('error', (err: NodeJS.ErrnoException) => reject(listenError(err, port, host)));
    probe.listen({ port, host, exclusive: true }, () => probe.close(() => resolve()));
  });
}

export interface ServeFlags {
  port: string;
  host: string;
  dataDir?: string;
  auth: boolean;
  demo?: boolean;
  rateLimit: string;
  processes: string;
}

/**
 * `cairn serve`: the HTTP API over one data folder. Embedded (the default): this process stores, embeds,
 * indexes and searches. With REDIS_URL: writes go to the capture queue and searches are served from the
 * shared data folder the workers fill, so any number of API processes can run side by side.
 */
export async function serveCommand(flags: ServeFlags, env: CliEnv): Promise<void> {
  const port = numberFlag(flags.port, 'port', { min: 0, max: 65_535 });
  // `abc` or `-5` once served with the rate-limit plugin's own default, and `0` refused every request.
  const rateLimitPerMinute = numberFlag(flags.rateLimit, 'rate-limit', { min: 1, max: 100_000_000 });
  const keys = loadApiKeys(env.raw);
  if (keys === null && flags.auth)
    throw new CairnError(
      'INVALID_INPUT',
      'no API keys: set CAIRN_API_KEYS ("key1=nsA,nsB;key2=nsC") or CAIRN_API_KEYS_FILE, or pass --no-auth to serve without auth on a loopback address',
      { field: 'CAIRN_API_KEYS' },
    );
  // Before the folder is opened (which creates it): a mistyped --data-dir was left behind by a refusal.
  assertAuthAllowed(keys, flags.host);
  const processes = numberFlag(flags.processes, 'processes', { min: 1, max: 64 });
  if (processes > 1 && cluster.isPrimary) return supervise(flags, env, processes, keys);
  const child = cluster.isWorker;
  // Before the folder is opened: opening creates it, and at a million memories takes seconds, all for a
  // port that was taken from the start. The listen below still answers a port taken in between.
  if (!child && port !== 0) await assertCanListen(port, flags.host);
  const logger = createLogger(env.CAIRN_LOG_LEVEL);
  const distributed = Boolean(env.REDIS_URL);
  // The hits' token counts are made on a thread of their own (see TokenizerThread). Started first, its
  // tables load on the other core while the engine opens: started after, they were still loading when
  // the first search came, which waited 0.3 s for them.
  const tokenizer = TokenizerThread.start();
  let engine: CairnEngine;
  try {
    // A child of `--processes` reads the folder its primary writes; it never writes index files.
    engine = await openEngine(flags.dataDir, env, { serving: true, reader: child });
  } catch (err) {
    await tokenizer.close();
    throw err;
  }
  let topology: QueueTopology | null = null;
  let stopRecording: (() => void) | null = null;
  let producer: CaptureProducer | null = null;
  let transport: Awaited<ReturnType<typeof loadDistributed>> | null = null;
  try {
    if (distributed) transport = await loadDistributed();
    if (transport) {
      const { QueueTopology, CaptureProducer } = transport;
      topology = await QueueTopology.connect({
        redisUrl: env.REDIS_URL!,
        prefix: env.CAIRN_QUEUE_PREFIX,
        shards: env.CAIRN_SHARDS,
      });
      // The folder this server reads must be the one the deployment's workers write.
      const folder = { id: engine.store.folderId(), path: resolveDataDir(flags.dataDir, env) };
      await transport.bindDataFolder(topology, folder);
      stopRecording = transport.keepDeploymentRecorded(topology, folder, (level, msg, data) =>
        logger[level](data ?? {}, msg),
      );
      // A request waits at most 30 s for a capture worker to store its batch, then gets a 503 (the batch
      // stays queued and will be stored).
      producer = new CaptureProducer(topology, { wait: 'stored', waitTimeoutMs: 30_000 });
    }
    if (flags.demo && !child) await seedDemo(engine, distributed);
    const forwarder = child && !distributed ? primaryForwarder() : null;
    const queues = topology && transport ? { topology, ...transport } : null;
    const service = new MemoryService({
      engine,
      producer,
      forwarder,
      tokenizer,
      ...(queues
        ? {
            deadLetters: async () =>
              (await queues.deadLetters(queues.topology)).map((d) => ({
                queue: d.queue,
                job: d.job,
                id: d.id,
                reason: d.reason,
                attempts: d.attempts,
                failed_at: d.failedAt,
                size: d.size,
              })),
          }
        : {}),
    });
    const t = queues;
    const explorerDir = findExplorerDir();
    const app = await createHttpServer({
      service,
      keys,
      ...(explorerDir ? { explorerDir } : {}),
      host: flags.host,
      rateLimitPerMinute,
      onInternalError: (err, route) =>
        logger.error(
          { route, err: err instanceof Error ? (err.stack ?? err.message) : String(err) },
          'internal error',
        ),
      ...(t
        ? {
            queues: {
              ping: () => t.assertRedisReachable(t.topology.connection, t.topology.opts.redisUrl),
              depths: async () => {
                const counts = await t.queueCounts(t.topology);
                // An unknown worker count (Redis refused CLIENT LIST) is left out, not reported as 0.
                return Object.fromEntries(
                  Object.entries(counts).map(([q, { workers, ...jobs }]) => [
                    q,
                    workers === null ? jobs : { ...jobs, workers },
                  ]),
                );
              },
            },
          }
        : {}),
    });
    // Ready means ready: the first searches do not wait on the tokenizer's tables, nor meet the key
    // catalog's load. At most 2 s for the catalog (0.8 s at 100k memories): at a million it takes 6–7 s,
    // and waiting 5 s there bought no better first ten seconds (new words' first scoring dominates them).
    await Promise.all([tokenizer.ready(), engine.whenWarm(2_000)]);
    const address = await app.listen({ port, host: flags.host }).catch((err: NodeJS.ErrnoException) => {
      throw listenError(err, port, flags.host);
    });
    logger.info(
      { address, mode: service.mode, dataDir: engine.dataDir, auth: keys ? `${keys.size} keys` : 'off' },
      'cairn API listening',
    );
    if (!child)
      process.stderr.write(
        `Cairn API on ${address} (${service.mode}, data ${engine.dataDir}, auth ${keys ? `${keys.size} keys` : 'off'}); docs at ${address}/docs\n${explorerLine(address, explorerDir)}`,
      );
    await new Promise<void>((resolve) => {
      const stop = () => resolve();
      process.once('SIGTERM', stop);
      process.once('SIGINT', stop);
    });
    // Closing waits for a vector graph build under way (minutes at a million memories): say so, and that
    // a second signal (the listeners above are spent, so Node's default applies) stops at once.
    if (!child)
      process.stderr.write(
        'Stopping: finishing requests, then saving vector indexes; a graph build under way is waited for (Ctrl-C again stops now, and the build starts over next time)\n',
      );
    // Requests still in flight get 10 s; a write waiting on a capture worker must not hold shutdown.
    await Promise.race([app.close(), new Promise((r) => setTimeout(r, 10_000).unref())]);
  } finally {
    await closeInOrder([
      () => producer?.close(),
      () => {
        stopRecording?.();
        return topology?.close();
      },
      () => tokenizer.close(),
      () => engine.close(),
      // A child's IPC channel to its primary would keep it alive.
      () => (child ? cluster.worker?.disconnect() : undefined),
    ]);
  }
}

/** Loads the sample corpus into an empty data folder, so a first `curl` has something to find. */
async function seedDemo(engine: CairnEngine, distributed: boolean): Promise<void> {
  if (distributed || Object.keys(engine.stats().namespaces).length > 0 || !existsSync(SAMPLE_CORPUS)) return;
  const inputs: unknown[] = [];
  for await (const l of readJsonl(SAMPLE_CORPUS)) if (l.value !== undefined) inputs.push(l.value);
  engine.ingest(inputs);
  await engine.drain(5);
}

/**
 * `--processes N`: this process supervises N children that serve HTTP on the same port. In embedded mode
 * it also owns the data folder (stores, embeds, indexes) and answers the children's writes; searches run
 * in the children, on as many cores as there are children.
 */
async function supervise(
  flags: ServeFlags,
  env: CliEnv,
  n: number,
  keys: ReturnType<typeof loadApiKeys>,
): Promise<void> {
  const logger = createLogger(env.CAIRN_LOG_LEVEL);
  const distributed = Boolean(env.REDIS_URL);
  const engine = distributed ? null : await openEngine(flags.dataDir, env, { serving: true });
  try {
    if (engine) {
      if (flags.demo) await seedDemo(engine, false);
      answerChildWrites(engine);
    }
    const children = await startChildren(n, (code) =>
      logger.warn({ code }, 'an API process died; starting another'),
    );
    const mode = distributed ? 'distributed' : 'embedded';
    process.stderr.write(
      `Cairn API on ${children.address} (${mode}, ${n} processes, data ${resolveDataDir(flags.dataDir, env)}, auth ${keys ? `${keys.size} keys` : 'off'}); docs at ${children.address}/docs\n${explorerLine(children.address, findExplorerDir())}`,
    );
    await new Promise<void>((resolve) => {
      process.once('SIGTERM', () => resolve());
      process.once('SIGINT', () => resolve());
    });
    await children.stop();
  } finally {
    await engine?.close();
  }
}
