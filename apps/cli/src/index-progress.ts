import type { CairnEngine } from '@cairn/engine';
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

/** Reads the engine's kept counts and index states: a few indexed queries per namespace, no scan. */
export function indexProgress(engine: CairnEngine): IndexProgress {
  const out: IndexProgress = { total: 0, embedded: 0, unmerged: 0 };
  for (const [namespace, s] of Object.entries(engine.stats().namespaces)) {
    out.total += s.stored + s.superseded - s.failed;
    out.embedded += s.embedded;
    const vectors = engine.vectors;
    out.unmerged +=
      vectors?.status(namespace).state === 'building' ? s.embedded : (vectors?.unmerged(namespace) ?? 0);
  }
  return out;
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
      return {
        total: Math.max(p.total, 1),
        done: Math.min(Math.max(0, p.embedded - p.unmerged), p.total),
        payload: { embedded: p.embedded, need: p.total, unmerged: p.unmerged },
      };
    } catch {
      return null;
    }
  };
  const first = frame() ?? { total: 1, done: 0, payload: { embedded: 0, need: 0, unmerged: 0 } };
  bar.start(first.total, first.done, first.payload);
  const update = () => {
    const f = frame();
    if (!f) return;
    bar.setTotal(f.total);
    bar.update(f.done, f.payload);
  };
  const timer = setInterval(update, 500);
  try {
    return await work();
  } finally {
    clearInterval(timer);
    // Its last line says where the wait ended: everything in saved graphs, unless the drain failed.
    update();
    bar.stop();
  }
}
