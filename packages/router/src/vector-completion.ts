import { dot, type LexicalCandidate, type VectorCandidate, type VectorLeg } from '@cairn/core';

/** How many of a graph's best candidates are scored again on their stored vectors. */
export const GRAPH_RESCORE_DEPTH = 20;

/** What completing a graph's vector list did, for the response's explain. */
export interface VectorCompletion {
  /** The vector list, best first, with dense ranks; its lexical and best graph candidates scored exactly. */
  candidates: VectorCandidate[];
  /** Lexical candidates the graph had not returned that the completed list holds. */
  fromLexical: number;
}

/**
 * Completes an approximate (HNSW) vector list with the lexical leg's candidates, and scores the union
 * exactly against the query.
 *
 * A graph misses some of the true nearest neighbours: with the built-in embedder's hashed vectors, recall@10
 * against an exact scan is 0.81 at 100k memories and 0.72 at a million, 0.92 and 0.84 once completed
 * (bench/RESULTS.md, "A graph's vector list completed by the lexical leg"). Those vectors
 * are a second copy of the words, so the missed neighbours are mostly memories that share the query's words,
 * which the lexical leg has just found. Scoring the lexical leg's candidates against the query's vector
 * costs a few dozen stored vectors (cached, else one SQLite read) and a dot product each, and brings the
 * fused vector list close to what an exact scan would have given. The graph's best `graphDepth` are
 * re-scored too: its quantised cosines (i8 by default) misorder close neighbours, and the lexical
 * candidates are scored on the stored vectors' scale. Deeper graph candidates keep the graph's cosine:
 * at 100k, re-scoring its best 20 of 50 earned all but 0.002 of re-scoring all 50 (recall@10 0.916 against
 * 0.918), for 30 fewer stored vectors read a search.
 *
 * @param floor vector candidates below this cosine are left out, as the router does for the graph's
 * @param limit the list's length (the candidate pool)
 * @param graphDepth how many of the graph's best are re-scored
 */
export function completeVectorList(
  leg: Pick<VectorLeg, 'vectorsFor'>,
  namespace: string,
  queryVector: Float32Array,
  graph: readonly VectorCandidate[],
  lexical: readonly LexicalCandidate[],
  floor: number,
  limit: number,
  graphDepth = GRAPH_RESCORE_DEPTH,
): VectorCompletion {
  const fromGraph = new Set(graph.map((c) => c.key));
  const fromLexical = lexical.map((c) => c.key).filter((key) => !fromGraph.has(key));
  const keys = [...graph.slice(0, graphDepth).map((c) => c.key), ...fromLexical];
  // Every key is of this namespace (both legs answer within it), and vectorsFor checks it again. Not kept
  // in the leg's cache: most are met once, and the head the page then reads is what repeats.
  const stored = leg.vectorsFor(namespace, keys, { keep: false });
  const scored: Array<{ key: number; cosine: number }> = [];
  for (const c of graph) {
    const v = stored.get(c.key);
    scored.push({ key: c.key, cosine: v ? dot(queryVector, v) : c.cosine });
  }
  for (const key of fromLexical) {
    // A memory stored a moment ago may not be embedded yet: it has no vector to score.
    const v = stored.get(key);
    if (v) scored.push({ key, cosine: dot(queryVector, v) });
  }
  scored.sort((a, b) => b.cosine - a.cosine || a.key - b.key);
  const candidates: VectorCandidate[] = [];
  let added = 0;
  for (const s of scored) {
    if (s.cosine < floor) break;
    candidates.push({ key: s.key, cosine: s.cosine, rank: candidates.length + 1 });
    if (!fromGraph.has(s.key)) added++;
    if (candidates.length >= limit) break;
  }
  return { candidates, fromLexical: added };
}
