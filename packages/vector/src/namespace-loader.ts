import type { EmbeddingSpace } from '@cairn/core';
import { ExactMatrix } from './exact-matrix.js';
import { type GenerationFiles, NEVER_SAVED, type Sidecar } from './generation-files.js';
import type { ExactState, GraphState, NamespaceState } from './namespace-state.js';
import type { EmbeddingSource, LogFn } from './sources.js';
import type { Tombstones } from './tombstones.js';
import { releaseIndexSoon } from './usearch-index.js';

/** Rows copied per event-loop turn while collecting vectors for a build (about 1.5 MB of 384-d vectors: a few ms). */
const COLLECT_CHUNK = 1_000;

export interface NamespaceLoaderOptions {
  space: EmbeddingSpace;
  embeddings: EmbeddingSource;
  /** Deleted memories: a mapped file lets go of those deleted after it was written. */
  tombstones: Tombstones;
  files: GenerationFiles;
  /** A reader catches up any backlog and never writes or deletes a file. */
  role: 'writer' | 'reader';
  /** More vectors newer than the saved file than this, and a writer rebuilds instead of catching up. */
  maxCatchUp: number;
  log: LogFn;
  /** Takes one stored vector into a state (the manager also drops its cached copy of the key). */
  apply(state: NamespaceState, key: number, writeSeq: number, vector: Float32Array): void;
}

/**
 * How a namespace's index comes into memory, from the embeddings in SQLite (the truth) and the graph files
 * (derived): whole into an exact matrix when small, mapped from the current graph generation with the
 * newer vectors caught up into its delta, or built from scratch on the builder when there is no usable
 * file. Which state a namespace is in, and when to load, is the manager's concern.
 */
export class NamespaceLoader {
  /** What `deadInFile` last found for each unloaded namespace: the file, the deletes since it, how many it held. */
  private readonly deadCounts = new Map<string, { file: string; keys: number[]; dead: number }>();

  constructor(private readonly o: NamespaceLoaderOptions) {}

  /** Every stored vector of the namespace, in one exact matrix. */
  loadExact(namespace: string, count: number): ExactState {
    const matrix = new ExactMatrix(this.o.space.dimensions, count + 64);
    let watermark = 0;
    for (const e of this.o.embeddings.iterate(this.o.space.id, namespace, 0)) {
      matrix.upsert(e.key, e.vector);
      watermark = Math.max(watermark, e.writeSeq);
    }
    return { kind: 'exact', matrix, watermark };
  }

  /**
   * Maps the current graph file and reads newer vectors into the delta; null means "no usable file"
   * (logged, as the rebuild that follows unless `then` is `'scan'`: a reader's or a one-shot search's
   * exact matrix).
   */
  loadFile(namespace: string, catchUp = true, then: 'build' | 'scan' = 'build'): GraphState | null {
    const { files, space, log } = this.o;
    const why = (reason: string) => {
      // A first build (a new namespace, a new space being filled by a reindex) is expected, not a repair.
      const first = reason === NEVER_SAVED;
      const what =
        then === 'scan' ? 'no usable vector index' : `${first ? 'building' : 'rebuilding'} vector index`;
      log(first ? 'info' : 'warn', `${what}: ${reason}`, {
        namespace,
        space: space.id,
        dir: files.dir,
      });
      return null;
    };
    const opened = files.open(namespace);
    if (typeof opened === 'string') return why(opened);
    const { graph, side } = opened;
    const state: GraphState = {
      kind: 'hnsw',
      graph,
      graphSize: side.count,
      generation: side.generation,
      graphWatermark: side.watermark,
      delta: new ExactMatrix(space.dimensions, 256),
      deltaSeq: new Map(),
      watermark: side.watermark,
      fresh: 0,
      dropped: new Set(),
      merging: null,
    };
    // Memories deleted after the file was written, by any process, leave it now (see `dropVector`).
    for (const key of this.o.tombstones.since(namespace, side.metaSeq ?? 0))
      if (graph.contains(BigInt(key))) state.dropped.add(key);
    const limit = this.o.role === 'reader' ? Number.POSITIVE_INFINITY : this.o.maxCatchUp;
    if (catchUp && !this.catchUpSync(namespace, state, limit)) {
      void releaseIndexSoon(graph);
      return why(`more than ${this.o.maxCatchUp} vectors newer than the saved file`);
    }
    if (this.o.role === 'writer') void files.removeStale(namespace, side.file);
    return state;
  }

  /** How many vectors an unloaded namespace would hold once loaded (what stats count as indexed). */
  sizeOnLoad(namespace: string, exactThreshold: number): number {
    const { embeddings, space, files, role } = this.o;
    const side = files.sidecar(namespace);
    if (!side) {
      // No file: a load reads a small namespace (or any, as a reader) from SQLite whole, at once; a large
      // one must be built first, and until then its searches have no vector leg: nothing is indexed.
      const count = embeddings.count(space.id, namespace);
      return count <= exactThreshold || role === 'reader' ? count : 0;
    }
    // The file plus the vectors written since it (a load catches those up: new keys added, rewritten ones
    // replaced, so those count once), less the deleted memories it would drop.
    const since = embeddings.countWrittenAfter(space.id, namespace, side.watermark);
    const rewritten = since > 0 ? embeddings.countRewrittenAfter(space.id, namespace, side.watermark) : 0;
    return side.count + since - rewritten - this.deadInFile(namespace, side);
  }

  /**
   * How many of the namespace's saved graph's vectors belong to memories deleted since it was written.
   * Maps the file only when there are such deletes, and once for the same file and deletes: a stats call
   * per unloaded namespace must not map its graph every time (70 ms at 200k vectors), and nothing moves a
   * file's claim while no process loads and saves it.
   */
  private deadInFile(namespace: string, side: Sidecar): number {
    const dead = this.o.tombstones.since(namespace, side.metaSeq ?? 0);
    if (dead.length === 0) return 0;
    const known = this.deadCounts.get(namespace);
    if (known?.file === side.file && sameKeys(known.keys, dead)) return known.dead;
    const opened = this.o.files.open(namespace);
    let n = 0;
    if (typeof opened === 'string')
      this.o.log('warn', 'vector index file unusable: a load rebuilds it', { namespace, reason: opened });
    else {
      n = dead.filter((key) => opened.graph.contains(BigInt(key))).length;
      void releaseIndexSoon(opened.graph);
    }
    this.deadCounts.set(namespace, { file: side.file, keys: dead, dead: n });
    return n;
  }

  /** Applies stored vectors newer than the state's watermark; false if there were more than `limit`. */
  catchUpSync(namespace: string, state: NamespaceState, limit = Number.POSITIVE_INFINITY): boolean {
    let n = 0;
    for (const e of this.o.embeddings.iterate(this.o.space.id, namespace, state.watermark)) {
      if (++n > limit) return false;
      this.o.apply(state, e.key, e.writeSeq, e.vector);
    }
    return true;
  }

  /** The same, a page per event-loop turn: after a long build the backlog can be tens of thousands. */
  async catchUpAsync(namespace: string, state: NamespaceState): Promise<void> {
    for (;;) {
      let n = 0;
      for (const e of this.o.embeddings.iterate(this.o.space.id, namespace, state.watermark)) {
        this.o.apply(state, e.key, e.writeSeq, e.vector);
        if (++n >= COLLECT_CHUNK) break;
      }
      if (n < COLLECT_CHUNK) return;
      await new Promise((r) => setImmediate(r));
    }
  }

  /**
   * Builds the namespace's graph from SQLite as a new generation, on the builder, then maps it and
   * catches up what was stored meanwhile. Vectors stored after the last catch-up page are the caller's to
   * apply, in the turn that makes the index visible.
   */
  async build(namespace: string): Promise<GraphState> {
    const started = Date.now();
    // A delete removes the memory's vectors in its own transaction: those made before this read are not
    // collected; those made after are dropped when the file is mapped.
    const metaSeq = this.o.tombstones.top();
    const { embeddings, space } = this.o;
    // Where it can, the build reads the vectors on its own thread: reading and copying them here held the
    // serving thread for a second at 100k (see namespace-vectors-reader.ts in @cairn/store).
    const reader = embeddings.offThreadReader?.(space.id, namespace);
    const data = reader
      ? {
          keys: new BigUint64Array(0),
          vectors: new Float32Array(0),
          watermark: 0,
          read: {
            module: reader.module,
            args: {
              ...reader.args,
              limit: embeddings.count(space.id, namespace),
              dimensions: space.dimensions,
            },
          },
        }
      : await this.collect(namespace);
    const generation = (this.o.files.sidecar(namespace)?.generation ?? 0) + 1;
    const side = await this.o.files.write(namespace, generation, data.watermark, metaSeq, data);
    const loaded = this.loadFile(namespace, false);
    if (!loaded) throw new Error('the freshly built index could not be loaded');
    await this.catchUpAsync(namespace, loaded);
    this.o.log('info', 'vector index built', {
      namespace,
      space: space.id,
      vectors: side.count,
      ms: Date.now() - started,
    });
    return loaded;
  }

  /**
   * Reads a namespace's vectors into shared buffers, yielding to the event loop between chunks. It reads as
   * many as were counted at the start, in write order, and stops there: what is written meanwhile comes after
   * them in that order, and `build` catches it up into the delta. (Growing the buffers instead, for the few
   * writes of a live reindex, doubled 145 MB and copied it in one turn: a 300–400 ms stall of every search.)
   */
  private async collect(
    namespace: string,
  ): Promise<{ keys: BigUint64Array; vectors: Float32Array; watermark: number }> {
    const { embeddings, space } = this.o;
    const dims = space.dimensions;
    const cap = Math.max(1, embeddings.count(space.id, namespace));
    const keys = new BigUint64Array(new SharedArrayBuffer(cap * 8));
    const vectors = new Float32Array(new SharedArrayBuffer(cap * dims * 4));
    let n = 0;
    let read = 0;
    let watermark = 0;
    // A vector re-embedded while the pages are read shows up again later in write order: it takes its
    // key's slot, since a graph refuses a key twice (the build would fail and wait to be retried).
    const slotOf = new Map<number, number>();
    for (const e of embeddings.iterate(space.id, namespace, 0)) {
      const slot = slotOf.get(e.key) ?? n;
      if (slot === n) {
        slotOf.set(e.key, n);
        keys[n] = BigInt(e.key);
        n++;
      }
      vectors.set(e.vector, slot * dims);
      watermark = Math.max(watermark, e.writeSeq);
      if (n === cap) break;
      if (++read % COLLECT_CHUNK === 0) await new Promise((r) => setImmediate(r));
    }
    return { keys: keys.subarray(0, n), vectors: vectors.subarray(0, n * dims), watermark };
  }
}

function sameKeys(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((k, i) => k === b[i]);
}
