import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { CairnError } from '@cairn/core';
import { parseRerankerSpec } from '@cairn/embed';
import { CairnEngine } from '@cairn/engine';
import type { QueueTopology } from '@cairn/pipeline/distributed';
import { loadDistributed } from './distributed.js';
import type { CliEnv } from './env.js';
import { resolveDataDir } from './env.js';
import { createLogger } from './logger.js';

export interface OpenEngineOptions {
  /**
   * A long-lived process (`mcp`): searches serve lexical-only (flagged degraded) while a vector index
   * builds, vector deltas are merged on the engine's timer, and an external engine keeps catching up with
   * the workers. @defaultValue false (one-shot: wait for indexes, no timers)
   */
  serving?: boolean;
  /**
   * When another process (a `cairn serve`, another `cairn mcp`) holds the data folder's writer role, open
   * beside it as a follower (it stores and reads, the writer embeds and indexes) instead of refusing. For
   * every command that does not need to wait for indexing. @defaultValue false
   */
  follow?: boolean;
  /**
   * The command only reads: the data folder must already hold a database. A mistyped `--data-dir` is named
   * (NOT_FOUND, exit 2) instead of silently becoming a new, empty folder. Not checked with REDIS_URL (a
   * distributed deployment's folder is created by its first worker). @defaultValue false
   */
  existing?: boolean;
  /**
   * Read the folder another process of this deployment writes (a `serve --processes` child): never embed
   * or write index files, even without REDIS_URL. @defaultValue false
   */
  reader?: boolean;
  /**
   * The command asks one question and exits (`cairn search "…"`): no key catalog, whose load would cost
   * it more than the one search saves (see the engine's `catalog`), and a namespace whose graph file is
   * missing is searched exactly instead of built first (the engine's `unbuiltSearch`: a build held one
   * question for 390 s at a million memories), and a graph file it maps is not audited (the audit never
   * served the answer; at 100k it cost a quarter of the command). A batch (`--queries`) builds: it
   * amortises the graph.
   * @defaultValue false
   */
  oneQuery?: boolean;
  /** Memories per embedder call when this process embeds. @defaultValue the engine's (256) */
  embedBatchSize?: number;
}

/**
 * The one place the CLI builds an engine: a one-shot process waits for vector indexes rather than degrade.
 * With REDIS_URL set the workers own embedding and the index files, so the engine only reads.
 */
export async function openEngine(
  dataDirFlag: string | undefined,
  env: CliEnv,
  opts: OpenEngineOptions = {},
): Promise<CairnEngine> {
  const logger = createLogger(env.CAIRN_LOG_LEVEL);
  const dataDir = resolveDataDir(dataDirFlag, env);
  const exists = existsSync(join(dataDir, 'cairn.db'));
  // With REDIS_URL the folder is the deployment's, and may not exist before its first process has run;
  // once the deployment has one (recorded in Redis), a missing folder is a mistyped path, not a new one.
  if (env.REDIS_URL && !exists) {
    const { assertDeploymentFolder } = await loadDistributed();
    await withQueues(env, (topology) =>
      assertDeploymentFolder(topology, dataDir, () => existsSync(join(dataDir, 'cairn.db'))),
    );
  }
  if (opts.existing && !env.REDIS_URL && !exists) {
    throw new CairnError(
      'NOT_FOUND',
      `no Cairn data folder at ${dataDir} (it holds no cairn.db): check --data-dir or CAIRN_DATA_DIR; a read never creates one`,
      { field: 'dataDir' },
    );
  }
  const engine = await CairnEngine.open({
    dataDir,
    // Serving: the engine's own defaults (no waiting, persist and refresh timers on). A one-shot command
    // audits no graph it loads: the audit's repairs are the next server's (which audits every file it maps),
    // and at a million vectors its look-up held the pool's one thread ~1 s, which a `cairn ingest` of 10,000
    // memories into the folder waited for (bench/RESULTS.md, "An index audit's keys read off the serving
    // thread").
    ...(opts.serving
      ? {}
      : { waitForIndex: true, persistIntervalMs: 0, refreshIntervalMs: 0, auditOnLoad: false }),
    pipeline: env.REDIS_URL || opts.reader ? 'external' : 'embedded',
    ifWriterRunning: opts.follow ? 'read' : 'fail',
    ...(opts.embedBatchSize ? { embedBatchSize: opts.embedBatchSize } : {}),
    ...(opts.oneQuery ? { catalog: false as const, unbuiltSearch: 'exact' as const } : {}),
    previousSpaceGraceMs: env.CAIRN_PREVIOUS_SPACE_GRACE * 1_000,
    // Hygiene schedules run in long-lived writers only; a one-shot command runs them when asked.
    consolidation:
      opts.serving && env.CAIRN_CONSOLIDATE_EVERY > 0 ? { intervalMs: env.CAIRN_CONSOLIDATE_EVERY } : false,
    ...(opts.serving && env.CAIRN_PRUNE_POLICIES.length > 0
      ? { prune: { policies: env.CAIRN_PRUNE_POLICIES } }
      : {}),
    embedderSpec: env.CAIRN_EMBEDDER,
    vectorStorage: env.CAIRN_VECTOR_STORAGE,
    buildThreads: env.CAIRN_BUILD_THREADS,
    ...(env.CAIRN_RERANKER ? { reranker: parseRerankerSpec(env.CAIRN_RERANKER, env.raw) } : {}),
    env: env.raw,
    log: (level, msg, data) => logger[level](data ?? {}, msg),
  });
  // An existing folder must be the deployment's: a mistyped --data-dir that names another deployment's
  // folder (or an old embedded one) would answer from it. A new deployment has none recorded yet.
  if (env.REDIS_URL && exists) {
    try {
      const { assertFolderOfDeployment } = await loadDistributed();
      await withQueues(env, (topology) =>
        assertFolderOfDeployment(topology, { id: engine.store.folderId(), path: dataDir }),
      );
    } catch (err) {
      // Redis down: the binding cannot be read, and what cairn.db holds is still worth answering (stats
      // prints its counts and names Redis); the command meets Redis itself where it needs it.
      if (!(err instanceof CairnError && err.code === 'BACKEND_UNAVAILABLE')) {
        await engine.close();
        throw err;
      }
    }
  }
  return engine;
}

export async function withEngine<T>(
  dataDir: string | undefined,
  env: CliEnv,
  fn: (e: CairnEngine) => Promise<T>,
  opts: OpenEngineOptions = {},
): Promise<T> {
  const engine = await openEngine(dataDir, env, opts);
  try {
    return await fn(engine);
  } finally {
    await engine.close();
  }
}

/** The deployment's queues (REDIS_URL must be set); Redis is pinged first so a dead one is named at once. */
export async function connectQueues(env: CliEnv): Promise<QueueTopology> {
  const { QueueTopology } = await loadDistributed();
  return QueueTopology.connect({
    redisUrl: env.REDIS_URL!,
    prefix: env.CAIRN_QUEUE_PREFIX,
    shards: env.CAIRN_SHARDS,
  });
}

export async function withQueues<T>(env: CliEnv, fn: (q: QueueTopology) => Promise<T>): Promise<T> {
  const topology = await connectQueues(env);
  try {
    return await fn(topology);
  } finally {
    await topology.close();
  }
}
