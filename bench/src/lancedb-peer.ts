// LanceDB as a peer in bench/src/peers.ts: one table of (id, text, vector) on disk, a full-text index on the
// text, an ANN index on the vectors, and its hybrid query (vector + FTS, fused by its RRF reranker), each
// used as LanceDB's documentation shows. A dev dependency of bench/ only; the workspace drops its optional
// embedding extras (`@huggingface/transformers` pulls an ONNX runtime that Cairn's benchmark never calls).
import * as lancedb from '@lancedb/lancedb';

const TABLE = 'memories';

/** Which ANN index the table gets; `none` leaves vector search exhaustive. */
export type LanceIndexKind = 'ivf_pq' | 'hnsw_sq' | 'none';

export interface LancePeer {
  table: lancedb.Table;
  /** Seconds each step of the ingest took: rows written, the FTS index, the ANN index. */
  steps: { rowsS: number; ftsS: number; annS: number };
}

/** Writes the rows, then builds the FTS index and (unless `none`) the ANN index: stored, searchable, indexed. */
export async function ingestLance(
  dir: string,
  texts: readonly string[],
  vectors: readonly Float32Array[],
  index: LanceIndexKind,
): Promise<LancePeer> {
  const db = await lancedb.connect(dir);
  const seconds = async (fn: () => Promise<unknown>) => {
    const t0 = performance.now();
    await fn();
    return (performance.now() - t0) / 1000;
  };
  let table: lancedb.Table | undefined;
  const rowsS = await seconds(async () => {
    const batch = 10_000;
    for (let i = 0; i < texts.length; i += batch) {
      const rows = texts.slice(i, i + batch).map((text, j) => ({ id: i + j, text, vector: vectors[i + j]! }));
      if (!table) table = await db.createTable(TABLE, rows, { mode: 'overwrite' });
      else await table.add(rows);
    }
  });
  if (!table) throw new Error('no rows to ingest');
  const t = table;
  const ftsS = await seconds(() => t.createIndex('text', { config: lancedb.Index.fts() }));
  const annS =
    index === 'none'
      ? 0
      : await seconds(() =>
          t.createIndex('vector', {
            config:
              index === 'ivf_pq'
                ? lancedb.Index.ivfPq({ distanceType: 'cosine' })
                : lancedb.Index.hnswSq({ distanceType: 'cosine' }),
          }),
        );
  return { table: t, steps: { rowsS, ftsS, annS } };
}

/**
 * Top `k` ids by cosine: `'flat'` bypasses the ANN index (LanceDB's exhaustive search); a number re-ranks
 * that many times `k` of the index's candidates by their exact vectors (LanceDB's `refineFactor`, which
 * its documentation suggests when PQ's recall is too low); `'index'` uses the index as it comes.
 */
export async function lanceVectorTop(
  table: lancedb.Table,
  vector: Float32Array,
  k: number,
  mode: 'flat' | 'index' | number,
): Promise<number[]> {
  let q = table.vectorSearch(vector).distanceType('cosine').select(['id']).limit(k);
  if (mode === 'flat') q = q.bypassVectorIndex();
  else if (typeof mode === 'number') q = q.refineFactor(mode);
  return (await q.toArray()).map((r: { id: number }) => Number(r.id));
}

/** LanceDB's hybrid query: its FTS and vector searches fused by its RRF reranker, top `k` ids. */
export async function lanceHybridTop(
  table: lancedb.Table,
  reranker: lancedb.rerankers.RRFReranker,
  text: string,
  vector: Float32Array,
  k: number,
): Promise<number[]> {
  const rows = await table
    .query()
    .fullTextSearch(text)
    .nearestTo(vector)
    .distanceType('cosine')
    .rerank(reranker)
    .select(['id'])
    .limit(k)
    .toArray();
  return rows.map((r: { id: number }) => Number(r.id));
}

export function lanceReranker(): Promise<lancedb.rerankers.RRFReranker> {
  return lancedb.rerankers.RRFReranker.create();
}

/** A cold open: connect to the folder, open the table, answer one vector query. */
export async function lanceColdQuery(dir: string, vector: Float32Array, k: number): Promise<number[]> {
  const db = await lancedb.connect(dir);
  const table = await db.openTable(TABLE);
  return lanceVectorTop(table, vector, k, 'index');
}
