/**
 * Weighted Reciprocal Rank Fusion (Cormack, Clarke & Büttcher 2009): `Σ w_leg / (k + rank_leg)`.
 * Ranks are 1-based. A leg that did not return the document contributes nothing.
 */
export function rrfTerm(weight: number, rrfK: number, rank: number | null): number {
  if (rank === null || weight === 0) return 0;
  return weight / (rrfK + rank);
}

/**
 * Confidence as a multiplier at most 1: `1 − weight · (1 − confidence)`. A memory whose writer stated no
 * confidence scores as certain (1); a stated 0 loses `weight` of its score.
 */
export function confidenceFactor(confidence: number | null, weight: number): number {
  if (confidence === null) return 1;
  return 1 - weight * (1 - Math.min(1, Math.max(0, confidence)));
}

/**
 * Importance as a multiplier centred on 1: `1 + weight * (2 * importance - 1)`. With the default
 * importance of 0.5 the factor is exactly 1, so memories without an importance are not penalised.
 */
export function importanceFactor(importance: number, weight: number): number {
  const clamped = Math.min(1, Math.max(0, importance));
  return 1 + weight * (2 * clamped - 1);
}
