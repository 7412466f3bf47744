import { setImmediate as yieldTurn } from 'node:timers/promises';
import type { PrunePolicy } from '@cairn/core';
import type { HiddenMemory, MemoryStore } from '@cairn/store';

/** @defaultValue 500 deletes per transaction */
export const PRUNE_BATCH = 500;

/** What a pruning pass did (or, dry, would do) under one policy. */
export interface PruneReport {
  namespace: string;
  policy: PrunePolicy;
  dryRun: boolean;
  /** Live memories the policy covers. */
  covered: number;
  /** Over the cap, but protected by minAge or minAccess. */
  protected: number;
  /**
   * Ids deleted (tombstoned), or that a dry run would delete; least used first, each after what it took
   * with it (what it superseded or absorbed, where the policy covers it and does not protect it).
   */
  pruned: string[];
}

/**
 * Applies a pruning policy: keeps the `cap` most used memories it covers, and deletes the rest except the
 * protected ones (younger than `minAgeMs`, or accessed at least `minAccess` times). A protected memory is
 * never deleted, whatever the cap; the policy may leave more than `cap` alive because of them. Deletes go
 * in transactions of `PRUNE_BATCH`, with a turn of the event loop between them: a cap of 0 over a large
 * kind must not stall the searches of the process that runs it.
 */
export async function prune(
  store: MemoryStore,
  policy: PrunePolicy,
  opts: { dryRun?: boolean; now?: number } = {},
): Promise<PruneReport> {
  const now = opts.now ?? Date.now();
  const ranked = store.rankForPruning(policy.namespace, {
    ...(policy.kind !== undefined ? { kind: policy.kind } : {}),
    ...(policy.slot !== undefined ? { slot: policy.slot } : {}),
  });
  const over = ranked.slice(policy.cap);
  const isProtected = (m: { ts: number; accessCount: number }) =>
    now - m.ts < policy.minAgeMs || (policy.minAccess !== null && m.accessCount >= policy.minAccess);
  // Least used first, so a report (and a dry run) reads as the order they go in.
  const victims = over.filter((m) => !isProtected(m)).reverse();
  // A pruned memory takes with it what it hides (the versions it superseded, the copies merged into it)
  // where the policy covers them and does not protect them: given back, they were live again and the policy
  // left more than its cap. What it does not cover or protects is given back, as a delete by hand does.
  const takes = (h: HiddenMemory) =>
    (policy.kind === undefined || h.kind === policy.kind) &&
    (policy.slot === undefined || h.slot === policy.slot) &&
    !isProtected(h);
  const pruned: string[] = [];
  for (let i = 0; i < victims.length; i += PRUNE_BATCH) {
    const ids = victims.slice(i, i + PRUNE_BATCH).map((m) => m.id);
    if (opts.dryRun) for (const id of ids) pruned.push(...store.takenWith(policy.namespace, id, takes), id);
    else {
      pruned.push(...store.deleteMany(policy.namespace, ids, takes));
      await yieldTurn();
    }
  }
  return {
    namespace: policy.namespace,
    policy,
    dryRun: Boolean(opts.dryRun),
    covered: ranked.length,
    protected: over.length - victims.length,
    pruned,
  };
}
