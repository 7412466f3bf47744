import { constants, setPriority } from 'node:os';
import type { SpaceOut } from '@cairn/api-contract';
import { CairnClient } from '@cairn/client';
import { CairnError, embeddingSpaceOf, isCairnError } from '@cairn/core';
import { resolveEmbedder } from '@cairn/embed';
import type { CairnEngine } from '@cairn/engine';
import {
  MAX_FAILED_SHARE_TO_ACTIVATE,
  type MemoryStore,
  type SpaceInfo,
  type SpaceProgress,
} from '@cairn/store';
import { type ApiTargetFlags, apiTarget } from '../api-target.js';
import { loadDistributed } from '../distributed.js';
import { type CliEnv, resolveDataDir } from '../env.js';
import { numberFlag } from '../flags.js';
import { withEngine, withQueues } from '../open-engine.js';
import { warn, writeJson } from '../output.js';

export interface ReindexFlags extends ApiTargetFlags {
  embedder: string;
  json?: boolean;
  activate: boolean;
  batchSize: string;
  stallTimeout: string;
}

export interface ReindexSummary {
  space: string;
  embedder: string;
  total: number;
  embedded: number;
  failed: number;
  /** Vectors computed by this run (a resumed run skips what an earlier one did). */
  computed: number;
  seconds: number;
  perSecond: number;
  activated: boolean;
  mode: 'embedded' | 'distributed';
  /** Who filled the space: this process, the data folder's running writer, or the embed workers. */
  ranIn: 'this process' | 'the writer' | 'workers';
}

/**
 * Throws when a complete space will not be activated: more of its memories failed to embed than activation
 * allows. Waiting on would wait forever; the writer said why in the space's build error.
 */
function refusedActivation(spaceId: string, p: ProgressCounts): void {
  if (p.embedded + p.failed < p.total || p.failed <= p.total * MAX_FAILED_SHARE_TO_ACTIVATE) return;
  throw new CairnError(
    'INVALID_INPUT',
    `embedding space ${spaceId} is complete but ${p.failed} of ${p.total} memories failed to embed (cairn spaces shows why); fix the embedder and run the reindex again, or cairn spaces activate ${spaceId} --force`,
    { field: 'embedder', reason: 'failures' },
  );
}

/** `label: done/total (pct) rate/s ETA s`, the progress line of a reindex. */
function progressLine(label: string, p: ProgressCounts, doneBefore: number, seconds: number): string {
  const done = p.embedded + p.failed;
  const rate = (done - doneBefore) / Math.max(seconds, 1e-3);
  const eta = rate > 0 ? Math.ceil((p.total - done) / rate) : null;
  const pct = p.total ? ((100 * done) / p.total).toFixed(1) : '100.0';
  return `${label}: ${done}/${p.total} (${pct}%) ${Math.round(rate)}/s${eta === null ? '' : ` ETA ${eta} s`}${p.failed ? `, ${p.failed} failed` : ''}`;
}

type ProgressCounts = Pick<SpaceProgress, 'total' | 'embedded' | 'failed'>;

/** Prints done / rate / ETA to stderr once a second while `work` runs. */
async function withProgress<T>(
  label: string,
  read: () => ProgressCounts,
  json: boolean,
  work: () => Promise<T>,
): Promise<T> {
  const start = read();
  const t0 = performance.now();
  let embeddedAt: number | null = null;
  const tick = () => {
    const p = read();
    const secs = (performance.now() - t0) / 1000;
    if (p.embedded + p.failed < p.total || json)
      return warn(progressLine(label, p, start.embedded + start.failed, secs));
    // Every memory has its vector: what is left is building and saving the new space's vector indexes.
    embeddedAt ??= secs;
    warn(
      `${label}: ${p.total}/${p.total} embedded; building and saving its vector indexes (${Math.round(secs - embeddedAt)} s)`,
    );
  };
  const timer = json ? null : setInterval(tick, 1_000);
  try {
    return await work();
  } finally {
    if (timer) clearInterval(timer);
    if (!json) tick();
  }
}

/**
 * `cairn reindex --embedder <spec>`: fills a new embedding space side by side from the stored text, builds
 * and saves its vector indexes, then activates it in one transaction. Queries keep using the old space until
 * then. Embedded, the data folder's writer runs it (CairnEngine.requestReindex): this process when nothing
 * else writes the folder, else the running `cairn serve` / `cairn mcp`, while this command shows progress;
 * if that writer dies, this process takes its role over and resumes from the space's cursor.
 * Distributed, the embed workers fill it. Killing this command loses nothing.
 */
export async function reindexCommand(flags: ReindexFlags, env: CliEnv): Promise<void> {
  const target = apiTarget(flags, env);
  const summary = target
    ? await reindexThroughApi(new CairnClient(target), flags)
    : await reindexHere(flags, env);
  if (flags.json) writeJson(summary);
  else
    process.stdout.write(
      `space ${summary.space}: ${summary.embedded}/${summary.total} embedded (${summary.computed} in this run, ` +
        `${summary.seconds.toFixed(1)} s, ${summary.perSecond}/s, by ${summary.ranIn})${summary.failed ? `, ${summary.failed} failed` : ''}; ` +
        `${summary.activated ? 'active: queries use it now' : 'not activated yet (cairn spaces activate)'}\n`,
    );
}

/**
 * `cairn reindex --api URL`: the server's writer runs the reindex (POST /v1/spaces/reindex); this command
 * follows it through GET /v1/spaces once a second. Stopping this command does not stop the reindex.
 */
async function reindexThroughApi(client: CairnClient, flags: ReindexFlags): Promise<ReindexSummary> {
  const t0 = performance.now();
  const [started, stats] = await Promise.all([
    client.reindex({ embedder: flags.embedder, activate: flags.activate }),
    client.stats(),
  ]);
  const id = started.space.id;
  const before = started.space.progress;
  let space: SpaceOut = started.space;
  let lastError: string | null = null;
  while (!space.active) {
    const p = space.progress;
    const complete = p.embedded + p.failed >= p.total;
    if (
      !flags.activate &&
      complete &&
      space.build?.phase !== 'embedding' &&
      space.build?.phase !== 'indexing'
    )
      break;
    await new Promise((r) => setTimeout(r, 1_000));
    const now = (await client.spaces()).spaces.find((s) => s.id === id);
    if (!now)
      throw new CairnError('NOT_FOUND', `embedding space ${id} was dropped during its reindex`, {
        field: 'space',
      });
    space = now;
    if (flags.activate) refusedActivation(id, space.progress);
    if (!flags.json)
      warn(
        progressLine(
          `reindex ${id}`,
          space.progress,
          before.embedded + before.failed,
          (performance.now() - t0) / 1000,
        ),
      );
    const err = space.build?.last_error ?? null;
    if (err && err !== lastError) warn(`reindex ${id}: ${err}`);
    lastError = err ?? lastError;
  }
  const seconds = (performance.now() - t0) / 1000;
  const computed = space.progress.embedded - before.embedded;
  return {
    space: id,
    embedder: flags.embedder,
    total: space.progress.total,
    embedded: space.progress.embedded,
    failed: space.progress.failed,
    computed,
    seconds,
    perSecond: Math.round(computed / Math.max(seconds, 1e-3)),
    activated: space.active,
    mode: stats.mode,
    ranIn: 'the writer',
  };
}

/**
 * With REDIS_URL this command is batch work beside the serving processes, often on the same cores: it
 * enqueues every memory and builds the new space's indexes itself. It runs below normal priority (before
 * the engine starts its pool, whose threads inherit it and go lower still), so the server's searches get a
 * core when both want one. Not in the embedded mode: there the command follows the writer and may become
 * the data folder's only writer if the server dies, which must not run starved. Lowering one's own
 * priority needs no privilege; where it fails, nothing changes.
 */
function runBelowServing(): void {
  try {
    setPriority(constants.priority.PRIORITY_BELOW_NORMAL);
  } catch {}
}

async function reindexHere(flags: ReindexFlags, env: CliEnv): Promise<ReindexSummary> {
  const distributed = Boolean(env.REDIS_URL);
  if (distributed) runBelowServing();
  const batchSize = numberFlag(flags.batchSize, 'batch-size', { min: 1, max: 100_000 });
  const stallSeconds = numberFlag(flags.stallTimeout, 'stall-timeout', { min: 1, max: 86_400 });
  return withEngine(
    flags.dataDir,
    env,
    async (engine) => {
      const store = engine.store;
      const t0 = performance.now();
      let space: SpaceInfo;
      if (distributed) {
        // The space is created in this folder and its memories sent to the deployment's workers: it must be
        // the deployment's folder, or the workers would be asked to index into a space they do not have.
        const { bindDataFolder } = await loadDistributed();
        await withQueues(env, (topology) =>
          bindDataFolder(topology, { id: store.folderId(), path: resolveDataDir(flags.dataDir, env) }),
        );
        const embedder = await resolveEmbedder(flags.embedder, { env: env.raw });
        space = store.spaces.ensureSpace(embeddingSpaceOf(embedder), {
          embedder: flags.embedder,
          state: 'building',
          storage: env.CAIRN_VECTOR_STORAGE,
        });
      } else space = await engine.requestReindex(flags.embedder, { activate: flags.activate });
      const before = store.spaces.progress(space.id);
      const label = `reindex ${space.id}`;
      const read = () => store.spaces.progress(space.id);
      const complete = () => {
        const p = read();
        return p.embedded + p.failed >= p.total;
      };
      if (!space.active) {
        await withProgress(label, read, Boolean(flags.json), async () => {
          if (distributed)
            await fillThroughQueues(
              store,
              space.id,
              flags.embedder,
              space.dimensions,
              env,
              complete,
              () => {
                const p = read();
                return p.embedded + p.failed;
              },
              stallSeconds * 1_000,
            );
          else await followBuild(engine, space.id, flags.activate, complete);
        });
      }
      let activated = store.spaces.getSpace(space.id)?.active ?? false;
      if (distributed && !activated && flags.activate) {
        // Built and saved before the switch: index workers and API nodes load files, not a rebuild.
        if (!flags.json) warn(`reindex ${space.id}: building its vector indexes`);
        await engine.buildSpaceIndexes(space.id);
        activated = tryActivate(engine, space.id);
      }
      const after = read();
      const seconds = (performance.now() - t0) / 1000;
      const computed = after.embedded - before.embedded;
      const s: ReindexSummary = {
        space: space.id,
        embedder: flags.embedder,
        total: after.total,
        embedded: after.embedded,
        failed: after.failed,
        computed,
        seconds,
        perSecond: Math.round(computed / Math.max(seconds, 1e-3)),
        activated,
        mode: distributed ? 'distributed' : 'embedded',
        ranIn: distributed ? 'workers' : engine.writerRole.role === 'writer' ? 'this process' : 'the writer',
      };
      return s;
    },
    // Beside a running writer this command asks it to do the work, and takes over if it dies.
    { follow: true, embedBatchSize: batchSize, existing: true },
  );
}

/**
 * Waits for the writer's build of a space: until it is active, or (without --activate) complete and
 * indexed. Each round refreshes the engine: a follower takes the writer role over when the writer is
 * gone, and then runs the build itself from the space's cursor.
 */
async function followBuild(
  engine: CairnEngine,
  spaceId: string,
  activate: boolean,
  complete: () => boolean,
): Promise<void> {
  let lastError: string | null = null;
  for (;;) {
    engine.refresh();
    const s = engine.store.spaces.getSpace(spaceId);
    if (!s)
      throw new CairnError('NOT_FOUND', `embedding space ${spaceId} was dropped during its reindex`, {
        field: 'space',
      });
    if (s.active) return;
    const build = engine.build;
    if (!activate && complete() && (build === null || build.phase === 'waiting')) return;
    if (activate) refusedActivation(spaceId, engine.store.spaces.progress(spaceId));
    if (build?.lastError && build.lastError !== lastError) warn(`reindex ${spaceId}: ${build.lastError}`);
    lastError = build?.lastError ?? lastError;
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Activates the filled space, with the grace period for the one it replaces; false while it is incomplete. */
function tryActivate(engine: CairnEngine, spaceId: string): boolean {
  try {
    // The engine reads a distributed deployment: it tolerates the writes still in the queues
    // (DISTRIBUTED_IN_FLIGHT), and keeps the replaced space current for CAIRN_PREVIOUS_SPACE_GRACE so
    // `cairn spaces activate <old>` switches back at once, as in embedded mode.
    engine.activateSpace(spaceId);
    return true;
  } catch (err) {
    if (isCairnError(err) && err.data.reason === 'incomplete') return false;
    throw err;
  }
}

/** Enqueues every memory the space lacks as embed jobs (ids make re-running a no-op), then waits for the workers. */
async function fillThroughQueues(
  store: MemoryStore,
  spaceId: string,
  embedder: string,
  dimensions: number,
  env: CliEnv,
  complete: () => boolean,
  progressOf: () => number,
  stallMs: number,
): Promise<void> {
  await withQueues(env, async (topology) => {
    const ref = { id: spaceId, embedder, dimensions };
    let after = 0;
    for (;;) {
      const page = store.embeddings.unembeddedAfter(spaceId, after, 5_000);
      if (page.length === 0) break;
      await (await loadDistributed()).requeueEmbeds(topology, ref, page);
      after = page.at(-1)!.changeSeq;
    }
    // Wait for the workers, but never forever: with no embed worker, or with jobs dead-lettered, say so.
    let last = progressOf();
    let lastMove = Date.now();
    while (!complete()) {
      await new Promise((r) => setTimeout(r, 500));
      // Dropped meanwhile (cairn spaces drop): its jobs are refused, so it would never complete.
      if (!store.spaces.getSpace(spaceId))
        throw new CairnError('NOT_FOUND', `embedding space ${spaceId} was dropped during its reindex`, {
          field: 'space',
        });
      const now = progressOf();
      if (now !== last) {
        last = now;
        lastMove = Date.now();
        continue;
      }
      if (Date.now() - lastMove < stallMs) continue;
      const embed = topology.queue('embed');
      const [workers, failed] = await Promise.all([embed.getWorkersCount(), embed.getFailedCount()]);
      const why =
        workers === 0
          ? 'no embed worker is running (start one: cairn worker --stages embed)'
          : failed > 0
            ? `${failed} embed jobs are dead-lettered (cairn dead-letters shows why; --retry re-runs them)`
            : null;
      if (why)
        throw new CairnError(
          'BACKEND_UNAVAILABLE',
          `reindex of ${spaceId} stalled at ${last} memories: ${why}; run the reindex again to resume`,
          { backend: 'embed-worker' },
        );
      lastMove = Date.now();
    }
  });
}
