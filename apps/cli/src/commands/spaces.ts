import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { CairnError, embeddingSpaceOf, isCairnError } from '@cairn/core';
import { resolveEmbedder } from '@cairn/embed';
import { EmbeddedPipeline, requeueEmbeds } from '@cairn/pipeline';
import type { MemoryStore, SpaceProgress } from '@cairn/store';
import { VectorIndexManager } from '@cairn/vector';
import type { CliEnv } from '../env.js';
import { withEngine, withQueues } from '../open-engine.js';
import { warn, writeJson } from '../output.js';

export interface ReindexFlags {
  embedder: string;
  dataDir?: string;
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
}

/** Prints done / rate / ETA to stderr once a second while `work` runs. */
async function withProgress<T>(
  label: string,
  read: () => SpaceProgress,
  json: boolean,
  work: () => Promise<T>,
): Promise<T> {
  const start = read();
  const t0 = performance.now();
  const tick = () => {
    const p = read();
    const done = p.embedded + p.failed;
    const secs = (performance.now() - t0) / 1000;
    const rate = (done - start.embedded - start.failed) / Math.max(secs, 1e-3);
    const eta = rate > 0 ? Math.ceil((p.total - done) / rate) : null;
    const pct = p.total ? ((100 * done) / p.total).toFixed(1) : '100.0';
    warn(
      `${label}: ${done}/${p.total} (${pct}%) ${Math.round(rate)}/s${eta === null ? '' : ` ETA ${eta} s`}${p.failed ? `, ${p.failed} failed` : ''}`,
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
 * `cairn reindex --embedder <spec>`: fills a new embedding space side by side from the stored text, then
 * activates it in one transaction. Queries keep using the old space until then. Killing it loses
 * nothing: the space's cursor (embedded) or its missing-vector query (distributed) resumes where it was.
 */
export async function reindexCommand(flags: ReindexFlags, env: CliEnv): Promise<void> {
  const summary = await withEngine(flags.dataDir, env, async (engine) => {
    const store = engine.store;
    const embedder = await resolveEmbedder(flags.embedder, { env: env.raw });
    const space = store.embeddings.ensureSpace(embeddingSpaceOf(embedder), {
      embedder: flags.embedder,
      state: 'building',
    });
    const before = store.embeddings.progress(space.id);
    const t0 = performance.now();
    const label = `reindex ${space.id}`;
    const read = () => store.embeddings.progress(space.id);
    const distributed = Boolean(env.REDIS_URL);
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
            Math.max(1, Number(flags.stallTimeout) || 30) * 1_000,
          );
        else {
          const pipeline = new EmbeddedPipeline(store, store.embeddings, { apply() {} }, embedder, space, {
            embedBatchSize: Math.max(1, Number.parseInt(flags.batchSize, 10) || 512),
          });
          try {
            // Memories stored meanwhile by other processes are past the cursor too: loop until activation
            // (which re-checks completeness inside its transaction) succeeds.
            for (;;) {
              pipeline.kick();
              await pipeline.drain(5);
              if (!flags.activate || tryActivate(store, space.id)) break;
            }
          } finally {
            await pipeline.close();
          }
        }
      });
    }
    let activated = space.active;
    if (!activated && flags.activate) activated = tryActivate(store, space.id);
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
    };
    return s;
  });
  if (flags.json) writeJson(summary);
  else
    process.stdout.write(
      `space ${summary.space}: ${summary.embedded}/${summary.total} embedded (${summary.computed} in this run, ` +
        `${summary.seconds.toFixed(1)} s, ${summary.perSecond}/s)${summary.failed ? `, ${summary.failed} failed` : ''}; ` +
        `${summary.activated ? 'active: queries use it now' : 'not activated yet (cairn spaces activate)'}\n`,
    );
}

function tryActivate(store: MemoryStore, spaceId: string): boolean {
  try {
    store.embeddings.activate(spaceId);
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
      await requeueEmbeds(topology, ref, page);
      after = page.at(-1)!.changeSeq;
    }
    // Wait for the workers, but never forever: with no embed worker, or with jobs dead-lettered, say so.
    let last = progressOf();
    let lastMove = Date.now();
    while (!complete()) {
      await new Promise((r) => setTimeout(r, 500));
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

export async function spacesCommand(
  action: string | undefined,
  id: string | undefined,
  flags: { dataDir?: string; json?: boolean; force?: boolean },
  env: CliEnv,
): Promise<void> {
  await withEngine(flags.dataDir, env, async (engine) => {
    const emb = engine.store.embeddings;
    if (!action || action === 'list') {
      const spaces = emb.listSpaces().map((s) => ({ ...s, progress: emb.progress(s.id) }));
      if (flags.json) return writeJson({ spaces });
      for (const s of spaces)
        process.stdout.write(
          `${s.active ? '*' : ' '} ${s.id}  embedder ${s.embedder ?? '?'}  ${s.state}  ${s.progress.embedded}/${s.progress.total} embedded${s.progress.failed ? `, ${s.progress.failed} failed` : ''}\n`,
        );
      return;
    }
    if (!id) throw new CairnError('INVALID_INPUT', `spaces ${action} needs a space id`, { field: 'id' });
    if (action === 'activate') {
      const s = emb.activate(id, Boolean(flags.force));
      return flags.json ? writeJson({ activated: s.id }) : void process.stdout.write(`activated ${s.id}\n`);
    }
    if (action === 'drop') {
      const n = emb.drop(id);
      rmSync(VectorIndexManager.spaceDir(join(engine.dataDir, 'vectors'), id), {
        recursive: true,
        force: true,
      });
      return flags.json
        ? writeJson({ dropped: id, vectors: n })
        : void process.stdout.write(`dropped ${id} (${n} vectors)\n`);
    }
    throw new CairnError('INVALID_INPUT', `unknown spaces action "${action}"; use list, activate or drop`, {
      field: 'action',
    });
  });
}
