import { CairnError } from './errors.js';
import { MS_PER_DAY } from './time.js';

/**
 * Recency decay is one curve, `exp(-age / tau)`. Callers may describe it by its half-life or by tau;
 * the other is always derived (`tau = halfLife / ln 2`), so the two can never disagree.
 */
export type DecaySpec = 'off' | { halfLifeMs: number } | { tauMs: number };

/** @defaultValue a 30-day half-life: a month-old memory scores half of an otherwise equal new one. */
export const DEFAULT_DECAY: DecaySpec = Object.freeze({ halfLifeMs: 30 * MS_PER_DAY });

export interface ResolvedDecay {
  enabled: boolean;
  /** Milliseconds; Infinity when decay is off. */
  tauMs: number;
  /** Milliseconds; Infinity when decay is off. */
  halfLifeMs: number;
}

export function resolveDecay(spec: DecaySpec = DEFAULT_DECAY): ResolvedDecay {
  if (spec === 'off')
    return { enabled: false, tauMs: Number.POSITIVE_INFINITY, halfLifeMs: Number.POSITIVE_INFINITY };
  const has = (k: string) => Object.hasOwn(spec, k);
  if (has('halfLifeMs') && has('tauMs')) {
    throw new CairnError(
      'INVALID_INPUT',
      'decay: give halfLifeMs or tauMs, not both (one is derived from the other)',
      {
        field: 'decay',
      },
    );
  }
  const halfLifeMs = 'halfLifeMs' in spec ? spec.halfLifeMs : spec.tauMs * Math.LN2;
  if (!(halfLifeMs > 0) || !Number.isFinite(halfLifeMs)) {
    throw new CairnError(
      'INVALID_INPUT',
      'decay: the half-life or tau must be a positive number of milliseconds',
      {
        field: 'decay',
      },
    );
  }
  return { enabled: true, halfLifeMs, tauMs: halfLifeMs / Math.LN2 };
}

/**
 * The recency factor in (0, 1]. Memories stamped in the future (clock skew between agents) count as
 * brand new rather than being boosted above 1.
 */
export function recencyFactor(nowMs: number, tsMs: number, decay: ResolvedDecay): number {
  if (!decay.enabled) return 1;
  const age = Math.max(0, nowMs - tsMs);
  return Math.exp(-age / decay.tauMs);
}
