/** Retrieval scores for one ranked list against a set of relevant ids. */
export interface QueryScores {
  hit1: number;
  hit5: number;
  hit10: number;
  recall5: number;
  recall10: number;
  /** Reciprocal rank of the first relevant id within the list (0 if absent). */
  rr: number;
}

export function scoreRanking(ranked: readonly string[], relevant: readonly string[]): QueryScores {
  const rel = new Set(relevant);
  const firstHit = ranked.findIndex((id) => rel.has(id));
  const recallAt = (k: number) => ranked.slice(0, k).filter((id) => rel.has(id)).length / rel.size;
  const hitAt = (k: number) => (firstHit >= 0 && firstHit < k ? 1 : 0);
  return {
    hit1: hitAt(1),
    hit5: hitAt(5),
    hit10: hitAt(10),
    recall5: recallAt(5),
    recall10: recallAt(10),
    rr: firstHit >= 0 ? 1 / (firstHit + 1) : 0,
  };
}

export function meanScores(rows: readonly QueryScores[]): QueryScores & { n: number } {
  const n = rows.length;
  const avg = (f: (s: QueryScores) => number) => (n === 0 ? 0 : rows.reduce((a, r) => a + f(r), 0) / n);
  return {
    n,
    hit1: avg((r) => r.hit1),
    hit5: avg((r) => r.hit5),
    hit10: avg((r) => r.hit10),
    recall5: avg((r) => r.recall5),
    recall10: avg((r) => r.recall10),
    rr: avg((r) => r.rr),
  };
}
