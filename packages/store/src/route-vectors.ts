import type { EmbeddingSpace } from '@cairn/core';
import type Database from 'better-sqlite3';
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
  norms: number[];
  /** Rows found gone (their field was rewritten or the memory deleted) since the last full read. */
  stale: number;
}

/** At this many stale rows a matrix is read again whole rather than checked row by row. */
const RELOAD_AFTER_STALE = 64;
/** Matrices kept in memory (LRU by use); a namespace's route vectors are read again when evicted. */
const MAX_MATRICES = 256;

/**
 * Exact nearest neighbours over the vectors of one named-field route, per (space, namespace, route). Route
 * lists are a small share of a namespace's candidates, so an exact scan over an in-memory matrix is
 * simpler than a graph per route, and exact. The matrix follows `route_embeddings` by its id (rows are only
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
    if (!m || m.ids.length === 0 || query.length !== m.dimensions) return [];
    let qn = 0;
    for (let i = 0; i < query.length; i++) qn += query[i]! * query[i]!;
    qn = Math.sqrt(qn) || 1;
    const d = m.dimensions;
    const scored: Array<{ row: number; cos: number }> = [];
    for (let r = 0; r < m.ids.length; r++) {
      let s = 0;
      const off = r * d;
      for (let i = 0; i < d; i++) s += m.data[off + i]! * query[i]!;
      const cos = s / (qn * (m.norms[r]! || 1));
      if (cos >= floor) scored.push({ row: r, cos });
    }
    scored.sort((a, b) => b.cos - a.cos || m.keys[a.row]! - m.keys[b.row]!);
    const head = scored.slice(0, limit);
    const alive = new Set(this.present.all(JSON.stringify(head.map((s) => m.ids[s.row]))));
    const out: number[] = [];
    for (const s of head) {
      if (alive.has(m.ids[s.row]!)) out.push(m.keys[s.row]!);
      else m.stale++;
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
        norms: [],
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
      let n = 0;
      for (let i = 0; i < d; i++) n += v[i]! * v[i]!;
      m.ids.push(row.id);
      m.keys.push(row.key);
      m.norms.push(Math.sqrt(n));
    }
    return m;
  }
}
