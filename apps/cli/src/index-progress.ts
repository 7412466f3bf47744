import { type CairnEngine, whenWriterEmbedded } from '@cairn/engine';
import { SingleBar } from 'cli-progress';

/** How far a bulk ingest's wait for vectors and saved indexes has come. */
export interface IndexProgress {
  /** Memories that need a vector: live and superseded ones, less those the embedder refused. */
  total: number;
  /** Of those, the ones with a vector in the active space. */
  embedded: number;
  /** Vectors not yet in a saved graph file: a merge's delta, or a whole namespace whose graph is building. */
  unmerged: number;
}

/**
 * Reads kept counts (one row per namespace) and, for each namespace, the loaded index's delta or, for an
 * unloaded namespace that needs a graph, its saved file's count: no scan, whatever the corpus.
 */
export function indexProgress(engine: CairnEngine): IndexProgress {
  const space = engine.space;
  if (!space) return { total: 0, embedded: 0, unmerged: 0 };
  const p = engine.store.spaces.progress(space.id);
  let unmerged = 0;
  const vectors = engine.vectors;
  if (vectors)
    for (const [namespace, stored] of engine.store.embeddings.currentCounts(space.id))
      unmerged += vectors.unmerged(namespace, stored);
  return { total: p.total - p.failed, embedded: p.embedded, unmerged };
}

/**
 * Shows, while `work` (the engine's drain) runs, how many memories are embedded and how many vectors are in
 * a saved graph: after the file's last line is stored, `cairn ingest` waits for both (about 20 s at 100k
 * memories on 2 cores, minutes at a million), and it used to wait in silence.
 */
export async function withIndexProgress<T>(engine: CairnEngine, work: () => Promise<T>): Promise<T> {
  const bar = new SingleBar({
    stream: process.stderr,
    format:
      'index  [{bar}] {percentage}% | {embedded}/{need} embedded | {unmerged} vectors to merge | {duration} s',
    noTTYOutput: true,
    notTTYSchedule: 2000,
  });
  // Done: vectors in a saved graph (or an exact namespace's matrix), of the memories that need one. A store
  // that cannot answer fails the drain too, which says why: the bar only stops moving.
  const frame = () => {
    try {
      const p = indexProgress(engine);
      // Nothing to embed (an empty file, or every memory refused) is done, not 0%.
      if (p.total === 0) return { total: 1, done: 1, payload: { embedded: 0, need: 0, unmerged: 0 } };
      return {
        total: p.total,
        done: Math.min(Math.max(0, p.embedded - p.unmerged), p.total),
        payload: { embedded: p.embedded, need: p.total, unmerged: p.unmerged },
      };
    } catch {
      return null;
    }
  };
  const first = frame() ?? { total: 1, done: 0, payload: { embedded: 0, need: 0, unmerged: 0 } };
  bar.start(first.total, first.done, first.payload);
  // A sample waits at least four times what the last one cost, so the bar never slows the drain it shows.
  let timer: NodeJS.Timeout | undefined;
  const update = () => {
    const t0 = performance.now();
    const f = frame();
    if (f) {
      bar.setTotal(f.total);
      bar.update(f.done, f.payload);
    }
    return performance.now() - t0;
  };
  const tick = () => {
    timer = setTimeout(tick, Math.max(500, 4 * update()));
  };
  timer = setTimeout(tick, 500);
  try {
    return await work();
  } finally {
    clearTimeout(timer);
    // Its last line says where the wait ended: everything in saved graphs, unless the drain failed.
    update();
    bar.stop();
  }
}

/** How a command's wait for the vectors of what it stored ended. */
export interface VectorWait {
  /**
   * Another process held the data folder's writer role (a `cairn serve`, a `cairn mcp`) and embedded them:
   * who (see `CairnEngine.writerRole`). Null: this process did.
   */
  writer: string | null;
  /** Memories still without a vector when the wait ended (a writer busy or stalled; 0 after a drain here). */
  pending: number;
  /** False when the writer is a one-shot command, which embeds only its own writes (nothing was waited for). */
  writerEmbedsOthers: boolean;
}

/**
 * Waits for the vectors of the memories a command stored (`keys`). Beside the folder's running writer (this
 * process opened as its follower), that writer embeds them: the wait follows it, and should the writer go,
 * this process takes its role over and drains the rest itself. Otherwise `drain` runs here. A bar shows the
 * wait when `showBar`.
 */
export async function waitForVectors(
  engine: CairnEngine,
  keys: readonly number[],
  drain: () => Promise<void>,
  showBar: boolean,
  /** Told, as a follower's wait goes, how many of the keys are still without a vector. */
  onPending?: (pending: number) => void,
): Promise<VectorWait> {
  const { role, writer } = engine.writerRole;
  if (role === 'follower') {
    const bar = showBar
      ? new SingleBar({
          stream: process.stderr,
          format:
            'embed  [{bar}] {percentage}% | {value}/{total} embedded by the running writer | {duration} s',
          noTTYOutput: true,
          notTTYSchedule: 2000,
        })
      : null;
    bar?.start(Math.max(1, new Set(keys).size), 0);
    let wait: Awaited<ReturnType<typeof whenWriterEmbedded>>;
    try {
      wait = await whenWriterEmbedded(engine, keys, {
        onProgress: (settled, total) => {
          bar?.update(settled);
          onPending?.(total - settled);
        },
      });
    } finally {
      bar?.stop();
    }
    if (!wait.tookOver) return { writer, pending: wait.pending, writerEmbedsOthers: wait.writerEmbedsOthers };
  }
  await (showBar ? withIndexProgress(engine, drain) : drain());
  return { writer: null, pending: 0, writerEmbedsOthers: true };
}

/** What a command says of vectors another process (the folder's writer) embedded, or is to embed, for it. */
export function byWriter(wait: {
  writer: string | null;
  pending: number;
  writerEmbedsOthers: boolean;
}): string {
  if (wait.pending === 0)
    return `all embedded by the folder's running writer, which indexes them as it stores them (${wait.writer})`;
  if (!wait.writerEmbedsOthers)
    return `${wait.pending} without a vector yet: the folder's writer is a one-shot command that embeds only its own writes (${wait.writer}); they are stored, and the next cairn serve, mcp or ingest embeds them`;
  return `${wait.pending} still waiting for the folder's running writer to embed them (${wait.writer}); they are stored, and it embeds them when it can`;
}
