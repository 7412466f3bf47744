import type { ConsolidateResponse, HygieneApi, MergeOut, PruneResponse } from '@cairn/api-contract';
import { CairnClient } from '@cairn/client';
import { CairnError } from '@cairn/core';
import { HygieneService, NamespaceAccess } from '@cairn/service';
import { type ApiTargetFlags, apiTarget } from '../api-target.js';
import type { CliEnv } from '../env.js';
import { numberFlag, optionalNumberFlag } from '../flags.js';
import { withEngine } from '../open-engine.js';
import { EXIT, warn, writeJson } from '../output.js';

/**
 * Runs `fn` against the hygiene operations of a running API (--api / CAIRN_API_URL) or of the data folder.
 * Both are the same HygieneApi, so the two paths answer in one shape. A data folder another process writes
 * is opened beside it as a follower: SQLite serialises the merges and deletes with that writer's writes.
 */
async function withHygiene<T>(
  flags: ApiTargetFlags,
  env: CliEnv,
  fn: (api: HygieneApi) => Promise<T>,
): Promise<T> {
  const target = apiTarget(flags, env);
  if (target) return fn(new CairnClient(target));
  return withEngine(
    flags.dataDir,
    env,
    (engine) => fn(new HygieneService(engine).scoped(NamespaceAccess.everything())),
    {
      follow: true,
      existing: true,
    },
  );
}

function mergeLine(m: MergeOut): string {
  const undone = m.undone_at === null ? '' : ` (undone ${new Date(m.undone_at).toISOString()})`;
  return `  ${m.namespace}/${m.id} → ${m.into} (cosine ${m.cosine.toFixed(3)})${undone}\n`;
}

export interface ConsolidateFlags extends ApiTargetFlags {
  namespace?: string;
  dryRun?: boolean;
  undo?: boolean;
  list?: boolean;
  limit?: string;
  json?: boolean;
}

/**
 * `cairn consolidate`: merges near-duplicates into the newer memory now (the writer also does every
 * 5 minutes); `--dry-run` lists what would merge; `--list` shows a namespace's merges; `--undo [ids…]`
 * brings merged memories back (all of the namespace's without ids).
 */
export async function consolidateCommand(ids: string[], flags: ConsolidateFlags, env: CliEnv): Promise<void> {
  if ((flags.undo || flags.list) && !flags.namespace)
    throw new CairnError('INVALID_INPUT', '--undo and --list need --namespace', { field: 'namespace' });
  if (ids.length > 0 && !flags.undo)
    throw new CairnError('INVALID_INPUT', 'ids are for --undo', { field: 'ids' });
  const limit = optionalNumberFlag(flags.limit, 'limit', { min: 1 });
  await withHygiene(flags, env, async (api) => {
    if (flags.undo) {
      const res = await api.undoConsolidation({
        namespace: flags.namespace!,
        ...(ids.length > 0 ? { ids } : {}),
      });
      // Ids asked for that were not restored: a typo, or a memory never merged (or restored already). Said,
      // with exit 3 as `cairn get` does for ids it did not find, rather than "restored 0" and exit 0.
      const restored = new Set(res.restored.map((m) => m.id));
      const notMerged = ids.filter((id) => !restored.has(id));
      if (notMerged.length > 0) {
        warn(
          `not restored: ${notMerged.join(', ')} (no merge of ${flags.namespace} holds ${notMerged.length === 1 ? 'it' : 'them'}, or undone already; cairn consolidate --list shows the merges)`,
        );
        process.exitCode = EXIT.partial;
      }
      if (flags.json) return writeJson(res);
      process.stdout.write(
        `restored ${res.restored.length} memor${res.restored.length === 1 ? 'y' : 'ies'}\n`,
      );
      for (const m of res.restored) process.stdout.write(mergeLine(m));
      return;
    }
    if (flags.list) {
      const res = await api.consolidations({
        namespace: flags.namespace!,
        ...(limit !== undefined ? { limit } : {}),
      });
      if (flags.json) return writeJson(res);
      for (const m of res.merges) process.stdout.write(mergeLine(m));
      if (res.merges.length === 0) process.stdout.write('no merges\n');
      return;
    }
    const res: ConsolidateResponse = await api.consolidate({
      dry_run: Boolean(flags.dryRun),
      ...(flags.namespace ? { namespace: flags.namespace } : {}),
    });
    if (flags.json) return writeJson(res);
    if (res.skipped) {
      process.stdout.write(`skipped: ${res.skipped}\n`);
      return;
    }
    process.stdout.write(
      `${res.dry_run ? 'would merge' : 'merged'} ${res.merged} of ${res.scanned} new memories into a newer near-duplicate (${res.exact} same text, ${res.near} by cosine) in ${res.took_ms} ms\n`,
    );
    for (const m of res.merges) process.stdout.write(mergeLine(m));
    if (res.merged > res.merges.length)
      process.stdout.write(`  … and ${res.merged - res.merges.length} more\n`);
  });
}

export interface PruneFlags extends ApiTargetFlags {
  namespace?: string;
  slot?: string;
  kind?: string;
  cap?: string;
  minAge?: string;
  minAccess?: string;
  dryRun?: boolean;
  json?: boolean;
}

/** `cairn prune`: applies one pruning policy now, or lists what it would delete (`--dry-run`). */
export async function pruneCommand(flags: PruneFlags, env: CliEnv): Promise<void> {
  if (!flags.namespace)
    throw new CairnError('INVALID_INPUT', '--namespace is required', { field: 'namespace' });
  if (flags.cap === undefined) throw new CairnError('INVALID_INPUT', '--cap is required', { field: 'cap' });
  // Whole numbers, named here; their ranges are the API's.
  const cap = numberFlag(flags.cap, 'cap');
  const minAccess = optionalNumberFlag(flags.minAccess, 'min-access');
  await withHygiene(flags, env, async (api) => {
    const res: PruneResponse = await api.prune({
      namespace: flags.namespace!,
      ...(flags.slot ? { slot: flags.slot } : {}),
      ...(flags.kind ? { kind: flags.kind } : {}),
      cap,
      ...(flags.minAge ? { min_age: flags.minAge } : {}),
      ...(minAccess !== undefined ? { min_access: minAccess } : {}),
      dry_run: Boolean(flags.dryRun),
    });
    if (flags.json) return writeJson(res);
    process.stdout.write(
      `${res.dry_run ? 'would delete' : 'deleted'} ${res.pruned.length} of ${res.covered} covered (${res.protected} protected over the cap)\n`,
    );
    for (const id of res.pruned) process.stdout.write(`  ${id}\n`);
  });
}
