// Worker-thread task: exhaustive cosine top-k of several queries against one shared matrix.
export interface CosineTopKRequest {
  /** Row-major L2-normalised vectors (SharedArrayBuffer-backed), `rows × dimensions`. */
  matrix: Float32Array;
  /** Row-major L2-normalised queries. */
  queries: Float32Array;
  dimensions: number;
  k: number;
}

export interface CosineTopKResult {
  /** Per query: row indices, best first. */
  rows: number[][];
  /** Per query: cosines, aligned with rows. */
  scores: number[][];
}

export default function cosineTopK(req: CosineTopKRequest): CosineTopKResult {
  const { matrix, queries, dimensions: d, k } = req;
  const n = matrix.length / d;
  const rows: number[][] = [];
  const scores: number[][] = [];
  for (let q = 0; q < queries.length / d; q++) {
    const qo = q * d;
    // A small sorted buffer beats a heap for the k ≤ ~100 used by candidate pools.
    const topRows: number[] = [];
    const topScores: number[] = [];
    for (let r = 0; r < n; r++) {
      const ro = r * d;
      let s = 0;
      for (let i = 0; i < d; i++) s += matrix[ro + i]! * queries[qo + i]!;
      if (topScores.length < k || s > topScores[topScores.length - 1]!) {
        let pos = topScores.length;
        while (pos > 0 && topScores[pos - 1]! < s) pos--;
        topScores.splice(pos, 0, s);
        topRows.splice(pos, 0, r);
        if (topScores.length > k) {
          topScores.pop();
          topRows.pop();
        }
      }
    }
    rows.push(topRows);
    scores.push(topScores);
  }
  return { rows, scores };
}
