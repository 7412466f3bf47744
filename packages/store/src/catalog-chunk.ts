import { fileURLToPath } from 'node:url';
import type Database from 'better-sqlite3';

/**
 * The columns the key catalog holds of each memory, in the order `CatalogRow` reads them. The slot test
 * looks for the word first: most rows have no slot, and a substring test is far cheaper than parsing JSON.
 */
export const CATALOG_COLUMNS =
  'key, namespace, id, kind, session, agent, ts, importance, confidence, tags, ' +
  "CASE WHEN instr(meta, '\"slot\"') > 0 AND json_type(meta, '$.slot') = 'text' THEN json_extract(meta, '$.slot') END, " +
  'valid_from, valid_to, ' +
  '(superseded_by IS NULL AND deleted_at IS NULL) AS live, meta_seq';

/** One row of CATALOG_COLUMNS, read raw (arrays are cheaper than objects over 100k rows). */
export type CatalogRow = [
  key: number,
  namespace: string,
  id: string,
  kind: string,
  session: string | null,
  agent: string | null,
  ts: number,
  importance: number,
  confidence: number | null,
  tags: string,
  slot: string | null,
  validFrom: number | null,
  validTo: number | null,
  live: number,
  stamp: number,
];

/**
 * Consecutive catalog rows by key, column by column, as a reader thread sends them to the serving thread:
 * typed arrays cross a thread boundary in a copy each, where 15 values a row would be as many objects to
 * deserialise (and the ids as strings, 20,000 heap objects a chunk for the serving thread's collector). Strings (namespace, kind, session, agent, slot, tags) are
 * numbered in `names` (from 1; 0 means none), so the receiver interns each distinct string once.
 */
export interface CatalogChunk {
  keys: Float64Array;
  /** The ids as UTF-8, one after another: row i's is `idBytes[idEnds[i - 1] .. idEnds[i])` (from 0 for row 0). */
  idBytes: Uint8Array;
  idEnds: Int32Array;
  names: string[];
  /** Every memory has a namespace and a kind, so these are never 0. */
  namespace: Int32Array;
  kind: Int32Array;
  /** 0: none. */
  session: Int32Array;
  agent: Int32Array;
  slot: Int32Array;
  ts: Float64Array;
  importance: Float64Array;
  /** NaN when the writer stated none. */
  confidence: Float64Array;
  /** ±Infinity for an open end. */
  validFrom: Float64Array;
  validTo: Float64Array;
  live: Uint8Array;
  stamp: Float64Array;
  /** Row i's tags are `tagValues[tagStart[i] .. tagStart[i + 1])`, numbered as the strings are. */
  tagStart: Int32Array;
  tagValues: Int32Array;
}

/** The next `limit` catalog rows with a key above `afterKey`, column by column. */
export function readCatalogChunk(db: Database.Database, afterKey: number, limit: number): CatalogChunk {
  const rows = db
    .prepare(`SELECT ${CATALOG_COLUMNS} FROM memories WHERE key > ? ORDER BY key LIMIT ?`)
    .raw()
    .all(afterKey, limit) as CatalogRow[];
  return catalogChunkOf(rows);
}

/** Rows of CATALOG_COLUMNS, column by column (in any key order: a catch-up reads them by `meta_seq`). */
export function catalogChunkOf(rows: readonly CatalogRow[]): CatalogChunk {
  const n = rows.length;
  const numbers = new Map<string, number>();
  const names: string[] = [];
  const number = (s: string | null): number => {
    if (s === null) return 0;
    let id = numbers.get(s);
    if (id === undefined) {
      names.push(s);
      id = names.length;
      numbers.set(s, id);
    }
    return id;
  };
  const chunk: CatalogChunk = {
    keys: new Float64Array(n),
    idBytes: new Uint8Array(0),
    idEnds: new Int32Array(n),
    names,
    namespace: new Int32Array(n),
    kind: new Int32Array(n),
    session: new Int32Array(n),
    agent: new Int32Array(n),
    slot: new Int32Array(n),
    ts: new Float64Array(n),
    importance: new Float64Array(n),
    confidence: new Float64Array(n),
    validFrom: new Float64Array(n),
    validTo: new Float64Array(n),
    live: new Uint8Array(n),
    stamp: new Float64Array(n),
    tagStart: new Int32Array(n + 1),
    tagValues: new Int32Array(0),
  };
  const tagValues: number[] = [];
  let idBytes = 0;
  for (let i = 0; i < n; i++) {
    const r = rows[i]!;
    chunk.keys[i] = r[0];
    chunk.namespace[i] = number(r[1]);
    idBytes += Buffer.byteLength(r[2]);
    chunk.idEnds[i] = idBytes;
    chunk.kind[i] = number(r[3]);
    chunk.session[i] = number(r[4]);
    chunk.agent[i] = number(r[5]);
    chunk.ts[i] = r[6];
    chunk.importance[i] = r[7];
    chunk.confidence[i] = r[8] ?? Number.NaN;
    // Most memories carry no tags; parsing '[]' a hundred thousand times is most of a load.
    if (r[9] !== '[]') for (const t of JSON.parse(r[9]) as string[]) tagValues.push(number(t));
    chunk.tagStart[i + 1] = tagValues.length;
    chunk.slot[i] = number(r[10]);
    chunk.validFrom[i] = r[11] ?? Number.NEGATIVE_INFINITY;
    chunk.validTo[i] = r[12] ?? Number.POSITIVE_INFINITY;
    chunk.live[i] = r[13] ? 1 : 0;
    chunk.stamp[i] = r[14];
  }
  chunk.tagValues = Int32Array.from(tagValues);
  const ids = Buffer.allocUnsafe(idBytes);
  for (let i = 0, at = 0; i < n; i++) at += ids.write(rows[i]![2], at, 'utf8');
  chunk.idBytes = ids;
  return chunk;
}

/** Reads catalog chunks somewhere other than the serving thread (a worker with its own read connection). */
export type CatalogChunkReader = (req: { afterKey: number; limit: number }) => Promise<CatalogChunk>;

/** The worker-thread entry that reads catalog chunks (see `catalog-chunk-task.ts`), for a piscina pool. */
export const CATALOG_CHUNK_TASK = fileURLToPath(new URL('../dist/catalog-chunk-task.js', import.meta.url));
