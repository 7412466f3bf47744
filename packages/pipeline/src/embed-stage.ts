import { type Embedder, type EmbeddingSpace, isCairnError } from '@cairn/core';
import type {
  EmbeddedVector,
  EmbeddingSink,
  IndexSink,
  PendingMemory,
  RouteEmbeddingSink,
} from './stage-ports.js';

export interface EmbedStageResult {
  /** Vectors stored in this pass. */
  stored: EmbeddedVector[];
  /** How many came from the content-hash cache instead of the embedder. */
  reused: number;
  /** How many memories were examined. */
  examined: number;
  /** True when the pass drained the backlog. */
  caughtUp: boolean;
}

/** A content-hash → vector cache for one embedding space (SQLite in embedded mode, an LRU in workers). */
export interface VectorCache {
  lookup(hashes: readonly string[]): Map<string, Float32Array>;
  remember?(hash: string, vector: Float32Array): void;
}

export interface EmbeddedMemories {
  /** Memories with a vector of the space's dimensions. */
  items: Array<{ memory: PendingMemory; vector: Float32Array }>;
  /** Memories whose vector can never be stored (the embedder returned the wrong length). */
  failures: Array<{ key: number; error: string }>;
  /** How many vectors came from the cache. */
  reused: number;
}

/** The text a memory is embedded from: its title (if any) and its text. */
export function embeddingText(m: Pick<PendingMemory, 'title' | 'text'>): string {
  return m.title ? `${m.title}\n${m.text}` : m.text;
}

/**
 * Embeds `texts`, in order. A text whose vector has the wrong length gets null: a remote embedder refuses
 * its whole batch for one such vector (DIMENSION_MISMATCH), so the batch is halved until the texts at
 * fault are found, and the others still get their vectors (retrying the batch would fail forever). When
 * every text of a batch of several fails so, the embedder itself answers another length (a model swapped
 * under the same name): that is thrown, not recorded against each memory. Any other error propagates: it
 * is taken as transient, and the caller retries.
 */
export async function embedEach(
  embedder: Embedder,
  texts: readonly string[],
): Promise<Array<Float32Array | null>> {
  if (texts.length === 0) return [];
  try {
    return await embedder.embed(texts);
  } catch (err) {
    if (!isDimensionMismatch(err)) throw err;
    const out = await halves(embedder, texts);
    if (texts.length > 1 && out.every((v) => v === null)) throw err;
    return out;
  }
}

/** Embeds a part of a refused batch, halving it again if it is refused too. */
async function isolate(embedder: Embedder, texts: readonly string[]): Promise<Array<Float32Array | null>> {
  try {
    return await embedder.embed(texts);
  } catch (err) {
    if (!isDimensionMismatch(err)) throw err;
    return halves(embedder, texts);
  }
}

/** A lone text of another length gets null; a longer batch is split in two, each embedded on its own. */
async function halves(embedder: Embedder, texts: readonly string[]): Promise<Array<Float32Array | null>> {
  if (texts.length === 1) return [null];
  const mid = texts.length >> 1;
  return [...(await isolate(embedder, texts.slice(0, mid))), ...(await isolate(embedder, texts.slice(mid)))];
}

const isDimensionMismatch = (err: unknown) => isCairnError(err) && err.code === 'DIMENSION_MISMATCH';

/**
 * The embed stage's logic, shared by both transports: reuses vectors already computed for the same
 * content, embeds each distinct remaining text once in a single embedder call, and sets aside vectors of
 * the wrong length as permanent failures. An embedder error propagates: the caller retries the batch.
 */
export async function embedMemories(
  memories: readonly PendingMemory[],
  embedder: Embedder,
  space: EmbeddingSpace,
  cache: VectorCache,
): Promise<EmbeddedMemories> {
  const cached = cache.lookup(memories.map((p) => p.contentHash));
  const toEmbed = new Map<string, PendingMemory>();
  for (const p of memories)
    if (!cached.has(p.contentHash) && !toEmbed.has(p.contentHash)) toEmbed.set(p.contentHash, p);
  const fresh = await embedEach(embedder, [...toEmbed.values()].map(embeddingText));
  for (const [i, hash] of [...toEmbed.keys()].entries()) {
    const v = fresh[i];
    if (v && v.length === space.dimensions) cache.remember?.(hash, v);
    if (v) cached.set(hash, v);
  }
  const items: EmbeddedMemories['items'] = [];
  const failures: EmbeddedMemories['failures'] = [];
  for (const memory of memories) {
    const vector = cached.get(memory.contentHash);
    if (vector?.length === space.dimensions) items.push({ memory, vector });
    else
      failures.push({
        key: memory.key,
        error: `DIMENSION_MISMATCH: embedder ${embedder.modelId} returned ${vector ? `${vector.length} dimensions` : 'a vector of another length'}, space ${space.id} expects ${space.dimensions}`,
      });
  }
  return { items, failures, reused: memories.length - toEmbed.size };
}

/**
 * The index stage's logic, shared by both transports: stores vectors in SQLite (skipping any whose memory
 * changed since it was read) and hands the stored ones to the vector index. `cursor` advances the space's
 * "everything up to here is embedded" mark; only an in-order producer (the embedded loop) may pass it.
 */
export function indexVectors(
  sink: EmbeddingSink,
  index: IndexSink,
  space: EmbeddingSpace,
  embedded: Pick<EmbeddedMemories, 'items' | 'failures'>,
  cursor?: number,
): EmbeddedVector[] {
  // Failures first, without the cursor: were the process killed between the two transactions, the
  // cursor must not have moved past vectors not yet stored.
  if (embedded.failures.length > 0) sink.recordFailures(space.id, embedded.failures);
  const stored = sink.put(space, embedded.items, cursor);
  index.apply(stored, space);
  return stored;
}

/**
 * One pass of the embedded transport: takes up to `batchSize` memories past the space's cursor, embeds
 * them (SQLite's stored vectors are the cache) and indexes them, `storeSlice` memories per transaction
 * with a turn of the event loop between: storing 512 vectors in one transaction held the serving thread
 * for ~20 ms at 100k memories, 64 for ~4 (bench/RESULTS.md). Each slice advances the cursor past its own
 * memories only, so a crash between slices loses nothing. If the embedder throws, nothing is written and
 * the cursor stays: the pass is retried.
 */
export async function embedPending(
  sink: EmbeddingSink,
  index: IndexSink,
  embedder: Embedder,
  space: EmbeddingSpace,
  batchSize: number,
  storeSlice = batchSize,
): Promise<EmbedStageResult> {
  const pending = sink.pending(space.id, batchSize);
  if (pending.length === 0) return { stored: [], reused: 0, examined: 0, caughtUp: true };
  const embedded = await embedMemories(pending, embedder, space, {
    lookup: (hashes) => sink.vectorsByContentHash(space, hashes),
  });
  const slice = Math.max(1, Math.floor(storeSlice));
  const stored: EmbeddedVector[] = [];
  for (let from = 0; from < pending.length; from += slice) {
    if (from > 0) await new Promise((r) => setImmediate(r));
    const part = pending.slice(from, from + slice);
    const keys = new Set(part.map((p) => p.key));
    const mine = {
      items: embedded.items.filter((i) => keys.has(i.memory.key)),
      failures: embedded.failures.filter((f) => keys.has(f.key)),
    };
    stored.push(...indexVectors(sink, index, space, mine, part.at(-1)!.changeSeq));
  }
  return {
    stored,
    reused: embedded.reused,
    examined: pending.length,
    caughtUp: pending.length < batchSize,
  };
}

/**
 * One pass over named-field routes, shared by both transports: embeds up to `batchSize` routes past the
 * space's route cursor (each distinct text once) and stores them with the cursor. Vectors of the wrong
 * length are skipped (the route keeps only its lexical list); an embedder error propagates and nothing
 * is written, so the pass is retried. Route vectors serve the routes' vector lists, not the vector index.
 */
export async function embedPendingRoutes(
  sink: RouteEmbeddingSink,
  embedder: Embedder,
  space: EmbeddingSpace,
  batchSize: number,
): Promise<{ stored: number; examined: number; caughtUp: boolean }> {
  const pending = sink.pendingRoutes(space.id, batchSize);
  if (pending.length === 0) return { stored: 0, examined: 0, caughtUp: true };
  const texts = [...new Set(pending.map((r) => r.text))];
  const vectors = await embedEach(embedder, texts);
  const byText = new Map(texts.map((t, i) => [t, vectors[i]] as const));
  const items = pending.flatMap((route) => {
    const vector = byText.get(route.text);
    return vector ? [{ route, vector }] : [];
  });
  const stored = sink.putRoutes(space, items, pending.at(-1)!.id);
  return { stored, examined: pending.length, caughtUp: pending.length < batchSize };
}
