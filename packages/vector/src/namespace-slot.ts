import { carriedLimit, type NamespaceState, sizeOf, unmergedOf } from './namespace-state.js';

/**
 * What `VectorIndexManager.status` says of a namespace's index: its state, and how many vectors it serves
 * (for an unloaded one, its saved file's).
 */
export interface IndexStatus {
  state: 'unloaded' | 'building' | 'exact' | 'hnsw';
  size: number | null;
}

/** Where one namespace's index stands in a VectorIndexManager: ready, being built, or failed. */
export interface Slot {
  ready?: NamespaceState;
  building?: Promise<NamespaceState>;
  error?: Error;
  /** When the last build failed (ms): an exact namespace that outgrew its matrix waits before retrying. */
  failedAt?: number;
  /**
   * The exact matrix stands in for a graph this process did not build (`unbuiltSearch: 'exact'`): writes
   * do not start the build either (a one-shot command's close would wait minutes for it); `warm` does.
   */
  standIn?: boolean;
  /** Keys deleted while a build ran: the build read SQLite before, so they leave its index when it lands. */
  forgottenWhileBuilding?: number[];
}

/** The status of a namespace's slot; `sizeOnLoad` answers for one not loaded. */
export function slotStatus(slot: Slot | undefined, sizeOnLoad: () => number | null): IndexStatus {
  if (slot?.ready) return { state: slot.ready.kind, size: sizeOf(slot.ready) };
  if (slot?.building) return { state: 'building', size: null };
  return { state: 'unloaded', size: sizeOnLoad() };
}

/**
 * How many of a namespace's `stored` vectors a fresh process would not find saved: all while its graph
 * builds; a loaded one's delta (`unmergedOf`); none for one small enough to be searched exactly; else what
 * its saved file (`savedCount`, null when there is none) does not hold, unless few enough for a load to
 * catch up and carry (`carriedLimit`).
 */
export function slotUnmerged(
  slot: Slot | undefined,
  stored: number,
  thresholds: { exactThreshold: number; mergeThreshold: number },
  savedCount: () => number | null,
): number {
  if (slot?.building) return stored;
  if (slot?.ready) return unmergedOf(slot.ready, thresholds.mergeThreshold);
  if (stored <= thresholds.exactThreshold) return 0;
  const saved = savedCount() ?? 0;
  const since = Math.max(0, stored - saved);
  return since < carriedLimit(saved, thresholds.mergeThreshold) ? 0 : since;
}

/**
 * After a failed build, an exact namespace is promoted again no sooner than this (ms): retrying on every
 * applied batch queued dozens of doomed builds on the pool while the cause (a pool that could not start a
 * thread) lasted.
 */
export const RETRY_BUILD_AFTER_MS = 30_000;
