import type { SpaceOut } from '@cairn/api-contract';
import { CairnClient } from '@cairn/client';
import { CairnError } from '@cairn/core';
import type { CairnEngine } from '@cairn/engine';
import { spaceOut } from '@cairn/service';
import { type ApiTargetFlags, apiTarget } from '../api-target.js';
import type { CliEnv } from '../env.js';
import { withEngine } from '../open-engine.js';
import { writeJson } from '../output.js';

// `cairn spaces`: list, activate and drop embedding spaces, on a data folder (beside its running writer)
// or through the API. A reindex that fills a space is `cairn reindex` (reindex.ts).

export async function spacesCommand(
  action: string | undefined,
  id: string | undefined,
  flags: ApiTargetFlags & { json?: boolean; force?: boolean },
  env: CliEnv,
): Promise<void> {
  // A mistyped action is named as such before anything opens (it was asked for a space id).
  if (action !== undefined && !['list', 'activate', 'drop'].includes(action))
    throw new CairnError('INVALID_INPUT', `unknown spaces action "${action}"; use list, activate or drop`, {
      field: 'action',
    });
  const target = apiTarget(flags, env);
  if (target) return spacesThroughApi(new CairnClient(target), action, id, flags);
  // Beside a running writer: every action is a read or one transaction on cairn.db, which the writer
  // follows on its next refresh (it serves an activated space, stops the build of a dropped one).
  await withEngine(
    flags.dataDir,
    env,
    async (engine) => {
      if (!action || action === 'list')
        return printSpaces(async () => engine.listSpaces().map(spaceOut), Boolean(flags.json));
      if (!id) throw new CairnError('INVALID_INPUT', `spaces ${action} needs a space id`, { field: 'id' });
      if (action === 'activate') {
        const s = engine.activateSpace(id, { force: Boolean(flags.force) });
        return flags.json ? writeJson({ activated: s.id }) : void process.stdout.write(`activated ${s.id}\n`);
      }
      if (action === 'drop') {
        const before = engine.store.diskUsage().bytes;
        const n = engine.dropSpace(id);
        const freed = before - (await giveBackFreePages(engine));
        return flags.json
          ? writeJson({ dropped: id, vectors: n, freedBytes: freed })
          : void process.stdout.write(
              `dropped ${id} (${n} vectors; ${(freed / 1024 / 1024).toFixed(1)} MiB given back to the filesystem)\n`,
            );
      }
    },
    { follow: true, existing: true },
  );
}

/**
 * Gives the dropped space's pages back to the filesystem before the command returns, 64 MiB per short
 * transaction so a server beside it keeps writing in between. A folder without incremental auto-vacuum
 * (created before it existed) frees nothing here: `cairn compact` converts it once. Returns the file's
 * size after.
 */
async function giveBackFreePages(engine: CairnEngine): Promise<number> {
  const start = engine.store.diskUsage();
  if (start.autoVacuum !== 'incremental') return start.bytes;
  let free = start.freeBytes;
  while (free > 0) {
    const left = engine.store.reclaimFreePages((64 * 1024 * 1024) / start.pageSize);
    if (left >= free) break;
    free = left;
    await new Promise((r) => setImmediate(r));
  }
  return engine.store.diskUsage().bytes;
}

/** A space as `cairn spaces` shows it: the API's shape, with its build's rate and ETA. */
type ListedSpace = SpaceOut & { rate: number | null; eta_seconds: number | null };

/**
 * Lists the spaces, the same on a data folder and through the API (`--json` prints the API's shape either
 * way). A building space gets its rate (memories a second) and ETA from two readings of its progress one
 * second apart; that second is spent only when something is building.
 */
async function printSpaces(read: () => Promise<SpaceOut[]>, json: boolean): Promise<void> {
  const first = await read();
  const isBuilding = (s: SpaceOut) => s.state === 'building' && !s.active;
  const building = first.some(isBuilding);
  if (building) await new Promise((r) => setTimeout(r, 1_000));
  const now = building ? await read() : first;
  const spaces: ListedSpace[] = now.map((s) => {
    const was = first.find((x) => x.id === s.id);
    if (!isBuilding(s) || !was) return { ...s, rate: null, eta_seconds: null };
    const p = s.progress;
    const rate = Math.max(0, p.embedded + p.failed - was.progress.embedded - was.progress.failed);
    const left = p.total - p.embedded - p.failed;
    return { ...s, rate, eta_seconds: rate > 0 ? Math.ceil(left / rate) : null };
  });
  if (json) return writeJson({ spaces });
  for (const s of spaces) process.stdout.write(`${spaceLine(s)}\n`);
}

/**
 * What an inactive, ready space is to its user: kept current (the space a reindex replaced, in its grace
 * period: activating it again is instant), or behind the writes since (activating it needs a catch-up).
 */
function standbyNote(s: SpaceOut, now: number): string {
  if (s.active || s.state !== 'ready') return '';
  const p = s.progress;
  if (s.current_until !== null && s.current_until > now) {
    const minutes = Math.ceil((s.current_until - now) / 60_000);
    return `, kept current for ${minutes} more min (activating it is instant)`;
  }
  const behind = p.total - p.embedded - p.failed;
  if (behind <= 0) return '';
  // Its grace period ended, or it never had one (CAIRN_PREVIOUS_SPACE_GRACE=0).
  return `, behind by ${behind}: not kept current (cairn reindex --embedder ${s.embedder ?? '<spec>'} catches it up)`;
}

/** One line of `cairn spaces`: the active space starred, progress, rate / ETA while it builds, a standby's state. */
function spaceLine(s: ListedSpace, now = Date.now()): string {
  const p = s.progress;
  const building = s.state === 'building' && !s.active;
  const complete = p.embedded + p.failed >= p.total;
  // A complete building space has nothing left to embed: a rate of 0/s would read as a stalled build.
  const rate = !building
    ? ''
    : complete
      ? s.activate_when_ready
        ? ', complete: building its vector indexes, then it activates'
        : ` (cairn spaces activate ${s.id} switches to it)`
      : s.rate !== null
        ? ` ${s.rate}/s${s.eta_seconds === null ? '' : ` ETA ${s.eta_seconds} s`}${s.activate_when_ready ? ', activates when ready' : ''}`
        : '';
  // A complete space waiting to be activated is kept current, but nothing is left to build: not `building`.
  const state = building && complete && !s.activate_when_ready ? 'complete' : s.state;
  return `${s.active ? '*' : ' '} ${s.id}  embedder ${s.embedder ?? '?'}  ${state}  ${p.embedded}/${p.total} embedded${p.failed ? `, ${p.failed} failed` : ''}${rate}${standbyNote(s, now)}`;
}

/** `cairn spaces … --api URL`: the same actions through /v1/spaces (a key for every namespace). */
async function spacesThroughApi(
  client: CairnClient,
  action: string | undefined,
  id: string | undefined,
  flags: { json?: boolean; force?: boolean },
): Promise<void> {
  if (!action || action === 'list')
    return printSpaces(async () => (await client.spaces()).spaces, Boolean(flags.json));
  if (!id) throw new CairnError('INVALID_INPUT', `spaces ${action} needs a space id`, { field: 'id' });
  if (action === 'activate') {
    const r = await client.activateSpace({ space: id, force: Boolean(flags.force) });
    return flags.json ? writeJson(r) : void process.stdout.write(`activated ${r.activated}\n`);
  }
  if (action === 'drop') {
    const r = await client.dropSpace({ space: id });
    return flags.json
      ? writeJson(r)
      : void process.stdout.write(`dropped ${r.dropped} (${r.vectors} vectors)\n`);
  }
}
