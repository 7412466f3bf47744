// Worker-thread task: one large write batch stored on this thread's own connection (see the engine's
// `writeLane`): validated, written in one transaction with its neighbours' context and FTS5 rows, exactly
// as the serving thread's `ingest` would; that thread then only starts the embed pass. Storing costs about
// 0.2 ms a memory, so a request of 1,000 held every search on the serving thread for ~0.2 s.
import { isCairnError } from '@cairn/core';
import { type CaptureResult, captureBatch } from '@cairn/pipeline';
import { MemoryStore, type SessionContextOptions } from '@cairn/store';

export interface CaptureBatchRequest {
  /** The data folder's database file (its writer's: the process that sent this holds the writer lock). */
  path: string;
  /** The engine's contextual indexing options, so that a turn's context is what the serving thread derives. */
  context?: Partial<SessionContextOptions>;
  inputs: unknown[];
  now: number;
}

/** A failure as data: an error's own properties (its code) do not survive the thread boundary. */
export interface CaptureBatchFailure {
  cairn: boolean;
  code?: string;
  message: string;
  field?: string;
}

export type CaptureBatchResponse = { ok: CaptureResult } | { failed: CaptureBatchFailure };

/** A connection unused this long is closed: a burst of large writes reuses it, a quiet server does not keep it. */
const IDLE_CLOSE_MS = 5_000;

const stores = new Map<string, { store: MemoryStore; timer?: NodeJS.Timeout }>();

function storeFor(path: string, context: CaptureBatchRequest['context']) {
  let c = stores.get(path);
  if (!c) {
    // Opened by the process that sent this, so its schema is current. No key catalog: nothing is searched.
    c = { store: new MemoryStore({ path, catalog: false, ...(context ? { context } : {}) }) };
    stores.set(path, c);
  }
  if (c.timer) clearTimeout(c.timer);
  return c;
}

export default function captureBatchTask(req: CaptureBatchRequest): CaptureBatchResponse {
  const c = storeFor(req.path, req.context);
  try {
    return { ok: captureBatch(c.store, req.inputs, req.now) };
  } catch (err) {
    const e = err as Error & { code?: unknown };
    if (isCairnError(err)) {
      const { code, message, field } = err.toJSON();
      return { failed: { cairn: true, code, message, ...(field ? { field } : {}) } };
    }
    return {
      failed: { cairn: false, message: e.message, ...(typeof e.code === 'string' ? { code: e.code } : {}) },
    };
  } finally {
    c.timer = setTimeout(() => {
      stores.delete(req.path);
      c.store.close();
    }, IDLE_CLOSE_MS);
    c.timer.unref();
  }
}
