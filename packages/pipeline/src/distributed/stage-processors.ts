import { createHash } from 'node:crypto';
import { CairnError, type Embedder, type EmbeddingSpace, isCairnError } from '@cairn/core';
import { UnrecoverableError } from 'bullmq';
import { type CaptureResult, captureBatch } from '../capture-stage.js';
import { embedMemories, indexVectors, type VectorCache } from '../embed-stage.js';
import type { EmbeddingSink, IndexSink, PendingMemory, PendingSource, RecordSink } from '../stage-ports.js';
import { type JobInput, type JobName, MAX_STAGE_BATCH, parsePayload } from './job-catalog.js';
import { decodeVector, encodeVector } from './vector-codec.js';

/** Puts jobs on a stage's queue; ids make re-adding the same work a no-op. */
export type Enqueue<N extends JobName> = (
  jobs: ReadonlyArray<{ id: string; data: JobInput<N>; shard?: number }>,
) => Promise<void>;

/** An embedding space as embed jobs name it: its id, and the spec and dimensions that rebuild its embedder. */
export interface SpaceRef {
  id: string;
  embedder: string;
  dimensions: number;
}

export interface CapturePorts {
  records: RecordSink;
  pending: PendingSource;
  /** Spaces that must embed new memories: the active one and any being built by a reindex. */
  embedSpaces(): SpaceRef[];
}

export interface EmbedPorts {
  /** The embedder of a space, built from the job's spec (throws when the spec no longer builds that space). */
  embedderFor(space: SpaceRef): Promise<{ embedder: Embedder; space: EmbeddingSpace }>;
  cacheFor(spaceId: string): VectorCache;
  shardOf(namespace: string): number;
  /**
   * When this process is the index writer of `shard`, indexes the batch in place and answers true: the
   * vectors skip a round trip through Redis (encode, store, fetch, decode). False: enqueue it.
   */
  indexLocally?(shard: number, batch: DecodedIndexBatch): Promise<boolean>;
}

/** An index batch with its vectors as arrays: what an index job carries, before encoding. */
export interface DecodedIndexBatch {
  space: string;
  items: Array<{ memory: PendingMemory; vector: Float32Array }>;
  failures: Array<{ key: number; error: string }>;
}

export interface IndexPorts {
  embeddings: EmbeddingSink;
  spaceOf(spaceId: string): EmbeddingSpace | undefined;
  /** The vector index to update for a space: the serving index of the active space, a no-op otherwise. */
  indexFor(spaceId: string): IndexSink & { warm?(namespace: string): Promise<void> };
  /**
   * This process stops writing the namespaces of `shard` (handed over, or its lease lost): their index
   * state is saved first when `save`, then forgotten.
   */
  releaseShard?(shard: number, save: boolean): Promise<void>;
  /**
   * Checks the indexes this process writes against the stored vectors and adds any they lack; returns
   * how many were added. Run on the reconcile interval: whatever a crash did, `indexed` converges.
   */
  audit?(): Promise<number>;
}

function payloadOf<N extends JobName>(name: N, data: unknown) {
  const r = parsePayload(name, data);
  // A payload that fails its schema fails the same way on every attempt: dead-letter it now.
  if (!r.ok) throw new UnrecoverableError(r.error);
  return r.value;
}

function batchId(
  prefix: string,
  space: string,
  items: ReadonlyArray<{ key: number; changeSeq: number }>,
): string {
  const h = createHash('sha256').update(space);
  for (const it of items) h.update(`|${it.key}.${it.changeSeq}`);
  return `${prefix}-${h.digest('hex').slice(0, 40)}`;
}

/** Embed jobs for memories that still lack a vector, in batches, with ids derived from (space, key, seq). */
export function embedJobsFor(space: SpaceRef, pending: readonly PendingMemory[], batch = 500) {
  const jobs: Array<{ id: string; data: JobInput<'embed'> }> = [];
  const size = Math.min(batch, MAX_STAGE_BATCH);
  for (let i = 0; i < pending.length; i += size) {
    const items = pending.slice(i, i + size);
    jobs.push({
      id: batchId('emb', space.id, items),
      data: { space: space.id, embedder: space.embedder, dimensions: space.dimensions, items },
    });
  }
  return jobs;
}

/**
 * capture: validate and store the batch (one SQLite transaction: the durability point), then enqueue
 * embedding for every accepted memory that lacks a current vector. A retry after a crash between the two
 * writes nothing (the write's receipt, see WriteReceipts) and re-enqueues the same embed jobs (same ids),
 * so nothing is stored or embedded twice and nothing is skipped.
 */
export async function processCapture(
  data: unknown,
  ports: CapturePorts,
  enqueueEmbed: Enqueue<'embed'>,
  jobId?: string,
): Promise<CaptureResult> {
  const p = payloadOf('capture', data);
  // The job's id names its keys, not one request: a later batch of the same ids reuses it. With the
  // request's own id, the receipt names this request only, and its retries (same data) find it.
  const receipt = jobId === undefined ? undefined : `${jobId}@${p.requestId ?? p.receivedAt}`;
  const result = captureBatch(ports.records, p.memories, p.receivedAt, receipt);
  for (const space of ports.embedSpaces()) {
    const pending = ports.pending.unembedded(space.id, result.keys);
    if (pending.length > 0) await enqueueEmbed(embedJobsFor(space, pending));
  }
  return result;
}

/**
 * embed: vectors for a batch (cache first, one embedder call for the rest), sent on to the index queue
 * of each namespace's shard. Embedder errors that retrying cannot fix (a bad key, an unknown model) are
 * dead-lettered; the others are retried with backoff.
 */
export async function processEmbed(
  data: unknown,
  ports: EmbedPorts,
  enqueueIndex: Enqueue<'index'>,
): Promise<{ embedded: number; reused: number; failed: number }> {
  const p = payloadOf('embed', data);
  let target: { embedder: Embedder; space: EmbeddingSpace };
  try {
    target = await ports.embedderFor({ id: p.space, embedder: p.embedder, dimensions: p.dimensions });
  } catch (err) {
    throw new UnrecoverableError(`embed job for space ${p.space}: ${(err as Error).message}`);
  }
  let embedded: Awaited<ReturnType<typeof embedMemories>>;
  try {
    embedded = await embedMemories(p.items, target.embedder, target.space, ports.cacheFor(target.space.id));
  } catch (err) {
    if (isCairnError(err) && err.data.retryable === false) throw new UnrecoverableError(err.message);
    throw err;
  }
  const byShard = new Map<number, DecodedIndexBatch>();
  const shardFor = (namespace: string) => {
    const shard = ports.shardOf(namespace);
    let batch = byShard.get(shard);
    if (!batch) {
      batch = { space: p.space, items: [], failures: [] };
      byShard.set(shard, batch);
    }
    return batch;
  };
  for (const it of embedded.items) shardFor(it.memory.namespace).items.push(it);
  const nsOf = new Map(p.items.map((m) => [m.key, m.namespace]));
  for (const f of embedded.failures) shardFor(nsOf.get(f.key)!).failures.push(f);
  const id = batchId('idx', p.space, p.items);
  const remote: Array<{ id: string; data: JobInput<'index'>; shard: number }> = [];
  for (const [shard, batch] of byShard) {
    if (batch.items.length === 0 && batch.failures.length === 0) continue;
    if (await ports.indexLocally?.(shard, batch)) continue;
    remote.push({
      id: `${id}-${shard}`,
      shard,
      data: {
        space: batch.space,
        shard,
        failures: batch.failures,
        items: batch.items.map(({ memory, vector }) => ({
          key: memory.key,
          namespace: memory.namespace,
          contentHash: memory.contentHash,
          changeSeq: memory.changeSeq,
          vector: encodeVector(vector),
        })),
      },
    });
  }
  await enqueueIndex(remote);
  return { embedded: embedded.items.length, reused: embedded.reused, failed: embedded.failures.length };
}

/**
 * index: store the vectors in SQLite (skipping memories that changed since they were read) and apply
 * them to the shard's vector index. Only the holder of the shard's lease runs this.
 */
export async function processIndex(data: unknown, ports: IndexPorts): Promise<{ stored: number }> {
  const p = payloadOf('index', data);
  const space = ports.spaceOf(p.space);
  // A space dropped while its jobs were in flight (`cairn spaces drop` mid-reindex): nothing is left to
  // index into, and that is no failure, so the job completes instead of becoming a dead letter for good.
  if (!space) return { stored: 0 };
  const items = p.items.map((it) => {
    const vector = decodeVector(it.vector);
    return {
      memory: {
        key: it.key,
        namespace: it.namespace,
        contentHash: it.contentHash,
        changeSeq: it.changeSeq,
        kind: '',
        title: null,
        text: '',
      },
      vector,
    };
  });
  const stored = await indexBatch({ space: p.space, items, failures: p.failures }, space, ports);
  return { stored: stored ?? 0 };
}

/**
 * The index stage proper, for a queued job or an embed worker's local batch: vectors into SQLite and the
 * shard's vector index. `stillWriter` is checked after the last await and before the synchronous write,
 * so a shard handed over meanwhile is never written (null: the caller enqueues the batch instead).
 */
export async function indexBatch(
  batch: DecodedIndexBatch,
  space: EmbeddingSpace,
  ports: IndexPorts,
  stillWriter: () => boolean = () => true,
): Promise<number | null> {
  for (const { memory, vector } of batch.items)
    if (vector.length !== space.dimensions)
      throw new UnrecoverableError(
        new CairnError(
          'DIMENSION_MISMATCH',
          `index job: vector for key ${memory.key} has ${vector.length} dimensions but space ${space.id} expects ${space.dimensions}`,
        ).message,
      );
  const index = ports.indexFor(batch.space);
  if (index.warm) for (const ns of new Set(batch.items.map((i) => i.memory.namespace))) await index.warm(ns);
  if (!stillWriter()) return null;
  return indexVectors(ports.embeddings, index, space, { items: batch.items, failures: batch.failures })
    .length;
}
