import type { PrunePolicy } from '@cairn/core';
import type { MemoryStore } from '@cairn/store';

/** What a pruning pass did (or, dry, would do) under one policy. */
export interface PruneReport {
  namespace: string;
  policy: PrunePolicy;
  dryRun: boolean;
  /** Live memories the policy covers. */
  covered: number;
  /** Over the cap, but protected by minAge or minAccess. */
  protected: number;
  /** Ids deleted (tombstoned), or that a dry run would delete; least used first. */
  pruned: string[];
}

/**
 * Applies a pruning policy: keeps the `cap` most used memories it covers, and deletes the rest except the
 * protected ones (younger than `minAgeMs`, or accessed at least `minAccess` times). A protected memory is
 * never deleted, whatever the cap; the policy may leave more than `cap` alive because of them.
 */
export function prune(
  store: MemoryStore,
  policy: PrunePolicy,
  opts: { dryRun?: boolean; now?: number } = {},
): PruneReport {
  const now = opts.now ?? Date.now();
  const ranked = store.rankForPruning(policy.namespace, {
    ...(policy.kind !== undefined ? { kind: policy.kind } : {}),
    ...(policy.slot !== undefined ? { slot: policy.slot } : {}),
  });
  const over = ranked.slice(policy.cap);
  const isProtected = (m: (typeof ranked)[number]) =>
    now - m.ts < policy.minAgeMs || (policy.minAccess !== null && m.accessCount >= policy.minAccess);
  // Least used first, so a report (and a dry run) reads as the order they go in.
  const victims = over.filter((m) => !isProtected(m)).reverse();
  const pruned: string[] = [];
  for (const m of victims) {
    if (opts.dryRun) pruned.push(m.id);
    else if (store.delete(policy.namespace, m.id)) pruned.push(m.id);
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
