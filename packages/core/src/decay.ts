import { CairnError } from './errors.js';

/**
 * How age enters a search's score.
 * - `'auto'` (the default): relevance first. Age breaks ties and moves close calls, within a bounded
 *   reach (see recency-blend.ts); a query with temporal intent ("latest", "originally", "last week",
 *   "in May 2024") gets a longer reach. Time counts only among the candidates within reach, so the
 *   ranking does not drift as the corpus ages.
 * - `'off'`: no recency at all; equal scores still go to the newer memory.
 * - `{ halfLifeMs }` or `{ tauMs }`: the caller's own curve, `exp(-age / tau)` with age measured from
 *   "now", multiplied into the score with no floor. Callers may describe it by its half-life or by tau;
 *   the other is always derived (`tau = halfLife / ln 2`), so the two can never disagree.
 */
export type DecaySpec = 'auto' | 'off' | { halfLifeMs: number } | { tauMs: number };

/** @defaultValue `'auto'`: relevance first, age as a bounded tie-breaker (see recency-blend.ts). */
export const DEFAULT_DECAY: DecaySpec = 'auto';

export type ResolvedDecay =
  | { mode: 'auto'; halfLifeMs: number; tauMs: number }
  | { mode: 'off'; halfLifeMs: number; tauMs: number }
  /** The caller's own multiplier, `exp(-age / tau)`, age from "now". */
  | { mode: 'fixed'; halfLifeMs: number; tauMs: number };

export function resolveDecay(spec: DecaySpec = DEFAULT_DECAY): ResolvedDecay {
  if (spec === 'off')
    return { mode: 'off', tauMs: Number.POSITIVE_INFINITY, halfLifeMs: Number.POSITIVE_INFINITY };
  // 'auto' has no curve: it orders the peers of the best candidate by time (see recency-blend.ts).
  if (spec === 'auto')
    return { mode: 'auto', tauMs: Number.POSITIVE_INFINITY, halfLifeMs: Number.POSITIVE_INFINITY };
  if (typeof spec !== 'object' || spec === null) {
    // Programmatic callers only: the wire forms ("30d") are parsed by parseDecay before they get here.
    throw new CairnError(
      'INVALID_INPUT',
      `decay: give 'auto', 'off', { halfLifeMs } or { tauMs }, not ${JSON.stringify(spec)}`,
      { field: 'decay' },
    );
  }
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
  return { mode: 'fixed', halfLifeMs, tauMs: halfLifeMs / Math.LN2 };
}

/**
 * The caller-given decay's factor in (0, 1]: `exp(-age / tau)`, age from "now"; 1 unless the mode is
 * `'fixed'`. Memories stamped in the future (clock skew between agents) count as brand new rather than
 * being boosted above 1.
 */
export function recencyFactor(nowMs: number, tsMs: number, decay: ResolvedDecay): number {
  if (decay.mode !== 'fixed') return 1;
  const age = Math.max(0, nowMs - tsMs);
  return Math.exp(-age / decay.tauMs);
}
