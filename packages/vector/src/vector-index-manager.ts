import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  assertDimensions,
  type EmbeddingSpace,
  hasFilters,
  type SearchFilters,
  type VectorCandidate,
  type VectorLeg,
  type VectorLegResult,
  withDefaults,
} from '@cairn/core';
import type { Index } from 'usearch';
import { ExactMatrix } from './exact-matrix.js';
import { BYTES_PER_SCALAR, DEFAULT_HNSW_PARAMS, type HnswParams, type IndexBuilder } from './hnsw-params.js';
import { checkIndexFile } from './index-file-check.js';
import type { EmbeddingSource, KeyFilter, LogFn } from './sources.js';
import { createHnswIndex, inProcessIndexBuilder, saveIndexAtomically } from './usearch-index.js';

export interface VectorIndexOptions {
  /** Folder for index files (one subfolder per embedding space). */
  dir: string;
  space: EmbeddingSpace;
  embeddings: EmbeddingSource;
  keys: KeyFilter;
  /** Builds HNSW files; pass a worker-pool builder to keep builds off the serving thread. @defaultValue in-process */
  builder?: IndexBuilder;
  /** Namespaces with at most this many vectors are searched exactly, with no graph. @defaultValue 5_000 */
  exactThreshold?: number;
  /** On load, at most this many vectors newer than the saved file are added in place; more triggers a rebuild. @defaultValue 20_000 */
  maxCatchUp?: number;
  /**
   * When a namespace's index is being (re)built, `true` makes searches wait for it and `false` makes them
   * answer `unavailable` at once so the router serves lexical-only, flagged degraded. @defaultValue false
   */
  waitForBuild?: boolean;
  hnsw?: Partial<HnswParams>;
  log?: LogFn;
}

type Ready =
  | { kind: 'exact'; matrix: ExactMatrix; watermark: number }
  | { kind: 'hnsw'; index: Index; watermark: number; dirty: number; size: number };

interface Slot {
  ready?: Ready;
  building?: Promise<Ready>;
  error?: Error;
}

interface Sidecar {
  format: 1;
  space: string;
  namespace: string;
  dimensions: number;
  params: HnswParams;
  watermark: number;
  count: number;
  /** Size of the index file this sidecar describes, checked before loading. */
  bytes: number;
}

/** Filtered searches over HNSW fetch this many times `limit`, since filters remove candidates after search. */
const FILTERED_OVERSAMPLE = 4;
/** Unfiltered searches still oversample a little: superseded and deleted memories are dropped after search. */
const UNFILTERED_OVERSAMPLE = 1.5;
/** A filter allowing at most this many memories is served by an exact scan of just those vectors. */
const MAX_EXACT_FILTERED = 2_000;
/** Otherwise the approximate search is widened by this factor once. */
const WIDE_OVERSAMPLE = 10;

/**
 * The vector leg: one index per namespace and embedding space, loaded lazily. Small namespaces are held as
 * an exact matrix; larger ones as a usearch HNSW graph persisted to `<dir>/<space>/<namespace>.usearch`
 * with a JSON sidecar recording which embeddings (by seq) the file contains. Embeddings in SQLite are the
 * source of truth: a missing, stale or corrupt file is rebuilt from them, and the rebuild is logged.
 */
export class VectorIndexManager implements VectorLeg {
  readonly space: EmbeddingSpace;
  private readonly slots = new Map<string, Slot>();
  private readonly opts: Required<Omit<VectorIndexOptions, 'hnsw' | 'log'>> & {
    hnsw: HnswParams;
    log: LogFn;
  };

  constructor(opts: VectorIndexOptions) {
    this.space = opts.space;
    this.opts = {
      ...withDefaults(
        { builder: inProcessIndexBuilder, exactThreshold: 5_000, maxCatchUp: 20_000, waitForBuild: false },
        opts,
      ),
      dir: opts.dir,
      space: opts.space,
      embeddings: opts.embeddings,
      keys: opts.keys,
      hnsw: withDefaults(DEFAULT_HNSW_PARAMS, opts.hnsw),
      log: opts.log ?? (() => {}),
    };
    mkdirSync(this.spaceDir(), { recursive: true });
  }

  async searchVector(req: {
    namespace: string;
    vector: Float32Array;
    filters: SearchFilters;
    limit: number;
  }): Promise<VectorLegResult> {
    assertDimensions(req.vector, this.space, 'query vector');
    const ready = await this.acquire(req.namespace, this.opts.waitForBuild);
    if (!ready.ok) return { status: 'unavailable', reason: ready.reason };
    const idx = ready.value;
    const filtered = hasFilters(req.filters);
    const size = idx.kind === 'exact' ? idx.matrix.size : idx.size;
    let fetch = Math.min(
      size,
      Math.ceil(req.limit * (filtered ? FILTERED_OVERSAMPLE : UNFILTERED_OVERSAMPLE)) + 8,
    );
    let raw = this.rawSearch(idx, req.vector, fetch);
    let allowed = this.opts.keys.allowedKeys(
      req.namespace,
      raw.map((r) => r.key),
      req.filters,
    );
    let exact = idx.kind === 'exact';
    if (filtered && allowed.size < req.limit && fetch < size) {
      // The filter removed too much of the top list. A small allowed set is scanned exactly; otherwise a
      // much wider approximate search usually finds enough (HNSW cost grows slowly with k).
      const keys = this.opts.keys.keysMatching(req.namespace, req.filters, MAX_EXACT_FILTERED + 1);
      if (keys.length <= MAX_EXACT_FILTERED) {
        const matrix = new ExactMatrix(this.space.dimensions, keys.length);
        for (const [k, v] of this.opts.embeddings.byKeys(this.space.id, req.namespace, keys))
          matrix.upsert(k, v);
        raw = matrix.search(req.vector, req.limit);
        allowed = new Set(raw.map((r) => r.key));
        exact = true;
      } else {
        fetch = Math.min(size, fetch * WIDE_OVERSAMPLE);
        raw = this.rawSearch(idx, req.vector, fetch);
        allowed = this.opts.keys.allowedKeys(
          req.namespace,
          raw.map((r) => r.key),
          req.filters,
        );
      }
    }
    const candidates: VectorCandidate[] = [];
    for (const r of raw) {
      if (!allowed.has(r.key)) continue;
      candidates.push({ key: r.key, cosine: r.cosine, rank: candidates.length + 1 });
      if (candidates.length >= req.limit) break;
    }
    return { status: 'ok', candidates, exact };
  }

  vectorsFor(namespace: string, keys: readonly number[]): Map<number, Float32Array> {
    return this.opts.embeddings.byKeys(this.space.id, namespace, keys);
  }

  /**
   * Applies newly stored embeddings to namespaces whose index is loaded; unloaded namespaces catch up from
   * SQLite when next loaded, so nothing is lost by skipping them here.
   */
  apply(entries: ReadonlyArray<{ namespace: string; key: number; seq: number; vector: Float32Array }>): void {
    for (const e of entries) {
      const ready = this.slots.get(e.namespace)?.ready;
      if (!ready || e.seq <= ready.watermark) continue;
      this.applyOne(ready, e.key, e.vector);
      ready.watermark = e.seq;
      if (ready.kind === 'exact' && ready.matrix.size > this.opts.exactThreshold * 1.25)
        this.promote(e.namespace);
    }
  }

  /** Loads (or builds) a namespace's index now and waits for it. */
  async warm(namespace: string): Promise<void> {
    const r = await this.acquire(namespace, true);
    if (!r.ok) throw new Error(r.reason);
  }

  /** Per-namespace index state, for stats. */
  status(namespace: string): { state: 'unloaded' | 'building' | 'exact' | 'hnsw'; size: number | null } {
    const slot = this.slots.get(namespace);
    if (slot?.ready)
      return {
        state: slot.ready.kind,
        size: slot.ready.kind === 'exact' ? slot.ready.matrix.size : slot.ready.size,
      };
    if (slot?.building) return { state: 'building', size: null };
    const side = this.readSidecar(namespace);
    return { state: 'unloaded', size: side?.count ?? null };
  }

  /** Persists every HNSW index changed since it was last saved. Waits for builds in progress. */
  async flush(): Promise<void> {
    await Promise.allSettled([...this.slots.values()].map((s) => s.building).filter(Boolean));
    for (const [ns, slot] of this.slots) {
      const r = slot.ready;
      if (r?.kind === 'hnsw' && r.dirty > 0) {
        saveIndexAtomically(r.index, this.indexPath(ns));
        this.writeSidecar(ns, r.watermark, r.index.size());
        r.dirty = 0;
      }
    }
  }

  async close(): Promise<void> {
    await this.flush();
    this.slots.clear();
  }

  private rawSearch(idx: Ready, vector: Float32Array, k: number): Array<{ key: number; cosine: number }> {
    if (k <= 0) return [];
    if (idx.kind === 'exact') return idx.matrix.search(vector, k);
    const q = vector.byteOffset === 0 ? vector : vector.slice();
    const m = idx.index.search(q, k, 0);
    const out: Array<{ key: number; cosine: number }> = [];
    for (let i = 0; i < m.keys.length; i++) out.push({ key: Number(m.keys[i]), cosine: 1 - m.distances[i]! });
    return out;
  }

  private applyOne(ready: Ready, key: number, vector: Float32Array): void {
    if (ready.kind === 'exact') {
      ready.matrix.upsert(key, vector);
      return;
    }
    const k = BigInt(key);
    if (ready.index.contains(k)) ready.index.remove(k);
    else ready.size += 1;
    ready.index.add(k, vector.byteOffset === 0 ? vector : vector.slice());
    ready.dirty += 1;
  }

  private async acquire(
    namespace: string,
    wait: boolean,
  ): Promise<{ ok: true; value: Ready } | { ok: false; reason: string }> {
    let slot = this.slots.get(namespace);
    if (!slot) {
      slot = {};
      this.slots.set(namespace, slot);
      this.startLoad(namespace, slot);
    }
    if (slot.ready) return { ok: true, value: slot.ready };
    if (slot.building && wait) {
      try {
        return { ok: true, value: await slot.building };
      } catch (err) {
        return {
          ok: false,
          reason: `vector index for namespace "${namespace}" failed to build: ${(err as Error).message}`,
        };
      }
    }
    if (slot.error) {
      // Try again on the next search rather than staying broken forever.
      this.slots.delete(namespace);
      return {
        ok: false,
        reason: `vector index for namespace "${namespace}" failed to load: ${slot.error.message}`,
      };
    }
    return { ok: false, reason: `vector index for namespace "${namespace}" is being built` };
  }

  private startLoad(namespace: string, slot: Slot): void {
    const count = this.opts.embeddings.count(this.space.id, namespace);
    if (count <= this.opts.exactThreshold) {
      slot.ready = this.loadExact(namespace, count);
      return;
    }
    const loaded = this.tryLoadFile(namespace);
    if (loaded) {
      slot.ready = loaded;
      return;
    }
    this.runBuild(namespace, slot);
  }

  private loadExact(namespace: string, count: number): Ready {
    const matrix = new ExactMatrix(this.space.dimensions, count + 64);
    let watermark = 0;
    for (const e of this.opts.embeddings.iterate(this.space.id, namespace, 0)) {
      matrix.upsert(e.key, e.vector);
      watermark = Math.max(watermark, e.seq);
    }
    return { kind: 'exact', matrix, watermark };
  }

  /** Loads the saved HNSW file and applies what it misses; null means "rebuild" (and says why in the log). */
  private tryLoadFile(namespace: string): Ready | null {
    const path = this.indexPath(namespace);
    const side = this.readSidecar(namespace);
    const why = (reason: string) => {
      this.opts.log('warn', `rebuilding vector index: ${reason}`, { namespace, space: this.space.id, path });
      return null;
    };
    if (!existsSync(path) || !side)
      return why(existsSync(path) ? 'sidecar missing or unreadable' : 'index file missing');
    if (side.dimensions !== this.space.dimensions || side.space !== this.space.id)
      return why('index file belongs to another embedding space');
    if (JSON.stringify(side.params) !== JSON.stringify(this.opts.hnsw)) return why('HNSW parameters changed');
    const damage = checkIndexFile(path, {
      count: side.count,
      dimensions: this.space.dimensions,
      bytes: side.bytes,
      bytesPerScalar: BYTES_PER_SCALAR[this.opts.hnsw.quantization],
    });
    if (damage) return why(damage);
    const index = createHnswIndex(this.space.dimensions, this.opts.hnsw);
    try {
      index.load(path);
    } catch (err) {
      return why(`index file unreadable (${(err as Error).message})`);
    }
    if (index.size() !== side.count || index.dimensions() !== this.space.dimensions)
      return why('index file does not match its sidecar');
    const ready: Ready = { kind: 'hnsw', index, watermark: side.watermark, dirty: 0, size: index.size() };
    let applied = 0;
    for (const e of this.opts.embeddings.iterate(this.space.id, namespace, side.watermark)) {
      if (++applied > this.opts.maxCatchUp)
        return why(`more than ${this.opts.maxCatchUp} vectors newer than the saved file`);
      this.applyOne(ready, e.key, e.vector);
      ready.watermark = e.seq;
    }
    return ready;
  }

  /** Rebuilds a namespace's HNSW file through the builder, then loads it. Searches meanwhile are degraded. */
  private runBuild(namespace: string, slot: Slot): void {
    const started = Date.now();
    slot.building = (async () => {
      const { keys, vectors, watermark } = await this.collect(namespace);
      const path = this.indexPath(namespace);
      await this.opts.builder.build({
        keys,
        vectors,
        dimensions: this.space.dimensions,
        params: this.opts.hnsw,
        path,
      });
      this.writeSidecar(namespace, watermark, keys.length);
      const loaded = this.tryLoadFile(namespace);
      if (!loaded) throw new Error('the freshly built index could not be loaded');
      this.opts.log('info', 'vector index built', {
        namespace,
        space: this.space.id,
        vectors: keys.length,
        ms: Date.now() - started,
      });
      return loaded;
    })();
    slot.building.then(
      (ready) => {
        slot.ready = ready;
        slot.building = undefined;
      },
      (err: Error) => {
        slot.error = err;
        slot.building = undefined;
        this.opts.log('error', 'vector index build failed', { namespace, error: err.message });
      },
    );
  }

  /** Upgrades an exact namespace that outgrew the threshold to HNSW, serving exact until it is ready. */
  private promote(namespace: string): void {
    const slot = this.slots.get(namespace);
    if (!slot || slot.building) return;
    const current = slot.ready;
    this.runBuild(namespace, slot);
    slot.ready = current; // keep serving exactly until the graph is ready
  }

  /** Reads a namespace's vectors into shared buffers, yielding to the event loop between chunks. */
  private async collect(
    namespace: string,
  ): Promise<{ keys: BigUint64Array; vectors: Float32Array; watermark: number }> {
    const dims = this.space.dimensions;
    const expected = this.opts.embeddings.count(this.space.id, namespace);
    let cap = Math.max(1, expected);
    let keys = new BigUint64Array(new SharedArrayBuffer(cap * 8));
    let vectors = new Float32Array(new SharedArrayBuffer(cap * dims * 4));
    let n = 0;
    let watermark = 0;
    for (const e of this.opts.embeddings.iterate(this.space.id, namespace, 0)) {
      if (n === cap) {
        cap *= 2;
        const k2 = new BigUint64Array(new SharedArrayBuffer(cap * 8));
        const v2 = new Float32Array(new SharedArrayBuffer(cap * dims * 4));
        k2.set(keys);
        v2.set(vectors);
        keys = k2;
        vectors = v2;
      }
      keys[n] = BigInt(e.key);
      vectors.set(e.vector, n * dims);
      watermark = Math.max(watermark, e.seq);
      n++;
      if (n % 5000 === 0) await new Promise((r) => setImmediate(r));
    }
    return { keys: keys.subarray(0, n), vectors: vectors.subarray(0, n * dims), watermark };
  }

  private spaceDir(): string {
    // A readable prefix plus a hash: `org/model` and `org_model` must not share a folder.
    const h = createHash('sha256').update(this.space.id).digest('hex').slice(0, 8);
    return join(this.opts.dir, `${this.space.id.replace(/[^A-Za-z0-9._-]/g, '_').slice(0, 60)}-${h}`);
  }

  private indexPath(namespace: string): string {
    // Namespaces may contain '/', ':' and '@'; a readable prefix plus a hash keeps names unique and safe.
    const safe = namespace.replace(/[^A-Za-z0-9._-]/g, '_').slice(0, 60);
    const h = createHash('sha256').update(namespace).digest('hex').slice(0, 12);
    return join(this.spaceDir(), `${safe}-${h}.usearch`);
  }

  private readSidecar(namespace: string): Sidecar | null {
    try {
      const s = JSON.parse(readFileSync(`${this.indexPath(namespace)}.json`, 'utf8')) as Sidecar;
      return s.format === 1 && s.namespace === namespace ? s : null;
    } catch {
      return null;
    }
  }

  private writeSidecar(namespace: string, watermark: number, count: number): void {
    const path = `${this.indexPath(namespace)}.json`;
    const side: Sidecar = {
      format: 1,
      space: this.space.id,
      namespace,
      dimensions: this.space.dimensions,
      params: this.opts.hnsw,
      watermark,
      count,
      bytes: statSync(this.indexPath(namespace)).size,
    };
    writeFileSync(`${path}.tmp`, JSON.stringify(side));
    renameSync(`${path}.tmp`, path);
  }
}
