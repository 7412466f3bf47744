// Worker-thread task: one embed pass of a space that is not the serving one (a reindex's new space, or the
// previous space kept current after a switch) with a CPU-bound local embedder. It reads the memories past the
// space's cursor, embeds them and stores their vectors on this thread's own connection, a slice per
// transaction, exactly as the serving thread's pass would (`embedPending`): the serving thread then only
// applies what was stored to the space's indexes.
import type { EmbeddingSpace } from '@cairn/core';
import { threadEmbedder } from '@cairn/embed';
import { type EmbedStageResult, embedPending } from '@cairn/pipeline';
import { EmbeddingStore, openDatabase } from '@cairn/store';

export interface SpacePassRequest {
  /** The data folder's database file. */
  path: string;
  /** The embedder's spec (`hash:384`): a local one, built once per thread. */
  spec: string;
  space: EmbeddingSpace;
  batchSize: number;
  storeSlice: number;
  /**
   * Only load: this task's modules and the embedder, on the thread that runs it, and answer an empty pass.
   * A server warms its embed lane so before it listens, not in its first requests.
   */
  warm?: boolean;
}

/**
 * A connection unused this long is closed: a reindex's passes follow each other within milliseconds, and a
 * finished one should not keep a writer's connection (and its page cache) open on the pool's thread.
 */
const IDLE_CLOSE_MS = 5_000;

const connections = new Map<string, { store: EmbeddingStore; close(): void; timer?: NodeJS.Timeout }>();

function connectionTo(path: string) {
  let c = connections.get(path);
  if (!c) {
    // The folder is open in the process that sent this task, so its schema is current: opening runs no
    // migration, only the connection's pragmas (WAL, busy timeout, foreign keys).
    const db = openDatabase(path);
    c = { store: new EmbeddingStore(db), close: () => db.close() };
    connections.set(path, c);
  }
  if (c.timer) clearTimeout(c.timer);
  return c;
}

export default async function spacePass(req: SpacePassRequest): Promise<EmbedStageResult> {
  if (req.warm) {
    await threadEmbedder(req.spec, req.space.dimensions).embed(['warm']);
    return { stored: [], reused: 0, examined: 0, caughtUp: true };
  }
  const c = connectionTo(req.path);
  try {
    // The index is the sender's to update (it holds the space's loaded indexes): nothing is applied here.
    return await embedPending(
      c.store,
      { apply: () => {} },
      threadEmbedder(req.spec, req.space.dimensions),
      req.space,
      req.batchSize,
      req.storeSlice,
    );
  } finally {
    c.timer = setTimeout(() => {
      connections.delete(req.path);
      c.close();
    }, IDLE_CLOSE_MS);
    c.timer.unref();
  }
}
