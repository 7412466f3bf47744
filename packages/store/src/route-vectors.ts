import type { EmbeddingSpace } from '@cairn/core';
import type Database from 'better-sqlite3';
import { exactSearch, MetricKind } from 'usearch';
import { blobToVector } from './vector-blob.js';

/** One route's vectors of one namespace in one space, as one growing matrix. */
interface RouteMatrix {
  dimensions: number;
  /** route_embeddings.id up to which rows were read. */
  watermark: number;
  ids: number[];
  keys: number[];
  /** Row-major, `ids.length × dimensions` used; grown by doubling. */
  data: Float32Array;
  /** Rows found gone (their field was rewritten or the memory deleted) since the last full read. */
  stale: number;
}

/** At this many stale rows a matrix is read again whole rather than checked row by row. */
const RELOAD_AFTER_STALE = 64;
/** Matrices kept in memory (LRU by use); a namespace's route vectors are read again when evicted. */
const MAX_MATRICES = 256;

/**
 * Exact nearest neighbours over the vectors of one named-field route, per (space, namespace, route): an
 * in-memory matrix scanned by usearch's native exact search (SIMD), simpler than a graph per route and
 * exact. The matrix follows `route_embeddings` by its id (rows are only
 * ever added; a rewritten field gets a new row and the old one is deleted): new rows are appended, and
 * deleted ones are found when they would be returned, which a check of the few winners catches.
 */
export class RouteVectors {
  private readonly matrices = new Map<string, RouteMatrix>();
  private readonly since: Database.Statement<
    [string, string, string, number],
    { id: number; key: number; vector: Buffer }
  >;
  private readonly present: Database.Statement<[string], number>;

  constructor(db: Database.Database) {
    this.since = db.prepare(
      'SELECT id, key, vector FROM route_embeddings WHERE space = ? AND namespace = ? AND route = ? AND id > ? ORDER BY id',
    );
    this.present = db
      .prepare('SELECT id FROM route_embeddings WHERE id IN (SELECT value FROM json_each(?))')
      .pluck() as Database.Statement<[string], number>;
  }

  /** Up to `limit` parent keys, best cosine first, at or above `floor`. */
  nearest(
    space: EmbeddingSpace,
    namespace: string,
    route: string,
    query: Float32Array,
    limit: number,
    floor: number,
  ): number[] {
    const m = this.sync(space, namespace, route);
    const n = m?.ids.length ?? 0;
    if (!m || n === 0 || query.length !== m.dimensions) return [];
    // Rows found gone are skipped below: ask for a few more than wanted while some are known.
    const k = Math.min(n, limit + Math.min(m.stale, RELOAD_AFTER_STALE));
    // usearch's exactSearch ignores byteOffset: the dataset is a prefix view of our own buffer (offset 0),
    // and a query that is a view into a larger buffer is copied.
    const q = query.byteOffset === 0 ? query : query.slice();
    // One thread: the scan is short and runs while the event loop waits, and by default usearch would
    // start a thread per core (the host's, not a container's limit) on every call.
    const found = exactSearch(
      m.data.subarray(0, n * m.dimensions),
      q,
      m.dimensions,
      k,
      MetricKind.Cos,
      1,
    ) as {
      keys: BigUint64Array;
      distances: Float32Array;
    };
    const scored: Array<{ row: number; distance: number }> = [];
    for (let i = 0; i < found.keys.length; i++) {
      const distance = found.distances[i]!;
      if (1 - distance >= floor) scored.push({ row: Number(found.keys[i]), distance });
    }
    // Equal scores in key order, so a page is the same from one search to the next.
    scored.sort((a, b) => a.distance - b.distance || m.keys[a.row]! - m.keys[b.row]!);
    const rows = scored.map((x) => x.row);
    const alive = new Set(this.present.all(JSON.stringify(rows.map((r) => m.ids[r]))));
    const out: number[] = [];
    for (const r of rows) {
      if (!alive.has(m.ids[r]!)) m.stale++;
      else if (out.length < limit) out.push(m.keys[r]!);
    }
    return out;
  }

  clear(): void {
    this.matrices.clear();
  }

  private sync(space: EmbeddingSpace, namespace: string, route: string): RouteMatrix | null {
    const id = `${space.id}\u0000${namespace}\u0000${route}`;
    let m = this.matrices.get(id);
    if (m) this.matrices.delete(id);
    if (!m || m.stale >= RELOAD_AFTER_STALE || m.dimensions !== space.dimensions) {
      m = {
        dimensions: space.dimensions,
        watermark: 0,
        ids: [],
        keys: [],
        data: new Float32Array(0),
        stale: 0,
      };
    }
    this.matrices.set(id, m);
    if (this.matrices.size > MAX_MATRICES) this.matrices.delete(this.matrices.keys().next().value!);
    const d = m.dimensions;
    for (const row of this.since.iterate(space.id, namespace, route, m.watermark)) {
      const v = blobToVector(row.vector);
      m.watermark = row.id;
      if (v.length !== d) continue;
      const r = m.ids.length;
      if ((r + 1) * d > m.data.length) {
        const grown = new Float32Array(Math.max(d * 64, m.data.length * 2));
        grown.set(m.data);
        m.data = grown;
      }
      m.data.set(v, r * d);
      m.ids.push(row.id);
      m.keys.push(row.key);
    }
    return m;
  }
}
