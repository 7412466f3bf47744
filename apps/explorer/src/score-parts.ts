import type { SearchHitOut } from '@cairn/api-contract';

/**
 * How a hit's explain.parts become a chart. A score is (rrf × agent + session) × recency × importance ×
 * confidence × boost (see HitExplain in @cairn/core): the rrf shares (lexical, vector, named-field routes) and the
 * session support ADD up, the rest MULTIPLY. So the chart has one stacked bar of the additive parts, scaled
 * against the largest sum on the page, and one diverging bar per factor around ×1.
 */

export type HitParts = NonNullable<SearchHitOut['explain']>['parts'];

export interface AddedPart {
  key: 'lexical' | 'vector' | 'routes' | 'session';
  label: string;
  value: number;
}

export interface FactorPart {
  key: 'agent' | 'recency' | 'importance' | 'confidence' | 'boost';
  label: string;
  value: number;
}

export const ADDED_LABELS: Record<AddedPart['key'], string> = {
  lexical: 'lexical RRF',
  vector: 'vector RRF',
  routes: 'routes RRF',
  session: 'session support',
};

export const FACTOR_LABELS: Record<FactorPart['key'], string> = {
  agent: 'agent',
  recency: 'recency',
  importance: 'importance',
  confidence: 'confidence',
  boost: 'boost',
};

export function addedParts(p: HitParts): AddedPart[] {
  return (['lexical', 'vector', 'routes', 'session'] as const).map((key) => ({
    key,
    label: ADDED_LABELS[key],
    value: Number(p[key] ?? 0),
  }));
}

/** Factors a server does not report (an older one, say) count as ×1: neutral, as the API defines them. */
export function factorParts(p: HitParts): FactorPart[] {
  return (['recency', 'importance', 'confidence', 'agent', 'boost'] as const).map((key) => {
    const v = (p as Partial<Record<FactorPart['key'], number>>)[key];
    return { key, label: FACTOR_LABELS[key], value: typeof v === 'number' ? v : 1 };
  });
}

export const addedTotal = (p: HitParts): number =>
  addedParts(p).reduce((s, x) => s + Math.max(0, x.value), 0);

/** The scale of the stacked bars: the largest additive sum among the hits shown (never 0). */
export function addedScale(parts: HitParts[]): number {
  return Math.max(1e-9, ...parts.map(addedTotal));
}

/**
 * A factor's bar, as a signed share of the half-width: ×1 → 0, ×0 → −1, ×2 or more → +1. Factors stay
 * within (0, 2] in practice (importance weight ≤ 1, agent boost 0.25 by default); beyond that it is clipped
 * and the label still says the exact value.
 */
export const factorOffset = (v: number): number => Math.max(-1, Math.min(1, v - 1));
