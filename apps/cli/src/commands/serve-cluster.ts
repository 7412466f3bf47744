import cluster, { type Worker } from 'node:cluster';
import { CairnError, type CairnErrorCode, isCairnError } from '@cairn/core';
import type { CairnEngine } from '@cairn/engine';
import type { WriteForwarder } from '@cairn/service';

// `cairn serve --processes N` in embedded mode: the primary process owns the data folder (the writer:
// it stores, embeds, indexes and saves the index files); N children serve HTTP as readers of the same
// folder and forward every write to the primary over the cluster's IPC channel.

type RequestBody =
  | { t: 'cairn-write'; memories: unknown[] }
  | { t: 'cairn-delete'; namespace: string; memoryId: string }
  | { t: 'cairn-reindex'; embedder: string; activate: boolean };
type Request = RequestBody & { id: number };

type Reply =
  | { t: 'cairn-reply'; id: number; ok: true; result: unknown }
  | {
      t: 'cairn-reply';
      id: number;
      ok: false;
      error: { code: CairnErrorCode; message: string; field?: string };
    };

/** Primary: answers the children's writes and reindex requests from the engine that owns the data folder. */
export function answerChildWrites(engine: CairnEngine): void {
  const answer = async (msg: Request): Promise<unknown> => {
    if (msg.t === 'cairn-write') return engine.ingest(msg.memories).items;
    if (msg.t === 'cairn-delete') return engine.delete(msg.namespace, msg.memoryId);
    const space = await engine.requestReindex(msg.embedder, { activate: msg.activate });
    return { id: space.id, active: space.active };
  };
  cluster.on('message', (worker: Worker, msg: Request) => {
    if (msg?.t !== 'cairn-write' && msg?.t !== 'cairn-delete' && msg?.t !== 'cairn-reindex') return;
    void answer(msg)
      .then(
        (result): Reply => ({ t: 'cairn-reply', id: msg.id, ok: true, result }),
        (err): Reply => {
          const e = isCairnError(err) ? err : new CairnError('INTERNAL', (err as Error).message);
          return { t: 'cairn-reply', id: msg.id, ok: false, error: e.toJSON() };
        },
      )
      .then((reply) => worker.send(reply));
  });
}

/** Child: a WriteForwarder to the primary. If the primary goes away, the child exits (nothing can be stored). */
export function primaryForwarder(): WriteForwarder {
  let next = 0;
  const pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  process.on('message', (msg: Reply) => {
    if (msg?.t !== 'cairn-reply') return;
    const p = pending.get(msg.id);
    pending.delete(msg.id);
    if (!p) return;
    if (msg.ok) p.resolve(msg.result);
    else
      p.reject(
        new CairnError(msg.error.code, msg.error.message, msg.error.field ? { field: msg.error.field } : {}),
      );
  });
  process.once('disconnect', () => {
    for (const p of pending.values())
      p.reject(new CairnError('BACKEND_UNAVAILABLE', 'the process owning the data folder went away'));
    pending.clear();
    process.exitCode = 1;
    process.kill(process.pid, 'SIGTERM');
  });
  const call = <T>(msg: RequestBody): Promise<T> =>
    new Promise((resolve, reject) => {
      const id = ++next;
      pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      process.send!({ ...msg, id });
    });
  return {
    ingest: (memories) => call({ t: 'cairn-write', memories }),
    delete: (namespace, memoryId) => call({ t: 'cairn-delete', namespace, memoryId }),
    reindex: (embedder, activate) => call({ t: 'cairn-reindex', embedder, activate }),
  };
}

/**
 * Primary: starts `n` children with the same command line and waits until each listens. A child that
 * dies is replaced; `stop()` shuts them down (SIGTERM: they finish their requests) and resolves once all
 * are gone.
 */
export async function startChildren(
  n: number,
  onCrash: (code: number | null) => void,
): Promise<{
  address: string;
  stop: () => Promise<void>;
}> {
  let stopping = false;
  const addresses: string[] = [];
  const listening = new Promise<void>((resolve) => {
    cluster.on('listening', (_w, a) => {
      addresses.push(`http://${a.address?.includes(':') ? `[${a.address}]` : a.address}:${a.port}`);
      if (addresses.length === n) resolve();
    });
  });
  cluster.on('exit', (_w, code) => {
    if (stopping) return;
    onCrash(code);
    cluster.fork({ CAIRN_SERVE_CHILD: '1' });
  });
  for (let i = 0; i < n; i++) cluster.fork({ CAIRN_SERVE_CHILD: '1' });
  await listening;
  return {
    address: addresses[0]!,
    stop: async () => {
      stopping = true;
      const all = Object.values(cluster.workers ?? {}).filter((w): w is Worker => Boolean(w));
      await Promise.all(
        all.map(
          (w) =>
            new Promise<void>((resolve) => {
              if (w.isDead()) return resolve();
              w.once('exit', () => resolve());
              w.process.kill('SIGTERM');
            }),
        ),
      );
    },
  };
}
