import { once } from 'node:events';
import { isDeepStrictEqual } from 'node:util';
import { CairnError, type KeyedMemory } from '@cairn/core';
import type { CairnEngine } from '@cairn/engine';
import type { CliEnv } from '../env.js';
import { numberFlag, requireNamespace } from '../flags.js';
import { byWriter, waitForVectors } from '../index-progress.js';
import { fileSize, readJsonl } from '../jsonl.js';
import { withEngine } from '../open-engine.js';
import { EXIT, warn, writeJson } from '../output.js';
import { WholeFile } from '../whole-file.js';

/**
 * One exported memory: the fields `cairn ingest` takes, plus what ingest cannot say on its own line: which
 * memories this one supersedes, whether consolidation merged it into another, and whether it was deleted.
 */
interface ExportLine {
  namespace: string;
  id: string;
  kind: string;
  title?: string;
  text: string;
  session?: string;
  agent?: string;
  ts: string;
  tags: string[];
  meta: Record<string, unknown>;
  importance: number;
  confidence?: number;
  validFrom?: string;
  validTo?: string;
  fields?: Record<string, string>;
  supersedes?: string[];
  /** Consolidation merged it into `into` (a near-duplicate; `cairn consolidate --undo` brings it back). */
  merged?: { into: string; cosine: number; at: string };
  /** A merge into `into` that was undone: the job never merges it again, here or where it is imported. */
  undone?: { into: string; cosine: number; at: string; undoneAt: string };
  /** How often searches returned it, and when last (pruning keeps the most used). */
  access?: { count: number; last: string | null };
  deleted?: true;
}

/** A consolidation merge in force, as an export line says it. */
type MergedLine = NonNullable<ExportLine['merged']>;
/** An undone merge, as an export line says it. */
type UndoneLine = NonNullable<ExportLine['undone']>;

function toLine(
  m: KeyedMemory,
  supersedes: string[] | undefined,
  deleted: boolean,
  merged?: MergedLine,
  undone?: UndoneLine,
): ExportLine {
  const line: ExportLine = {
    namespace: m.namespace,
    id: m.id,
    kind: m.kind,
    text: m.text,
    ts: new Date(m.ts).toISOString(),
    tags: m.tags,
    meta: m.meta,
    importance: m.importance,
  };
  if (m.confidence !== null) line.confidence = m.confidence;
  if (m.validFrom !== null) line.validFrom = new Date(m.validFrom).toISOString();
  if (m.validTo !== null) line.validTo = new Date(m.validTo).toISOString();
  if (m.title !== null) line.title = m.title;
  if (m.session !== null) line.session = m.session;
  if (m.agent !== null) line.agent = m.agent;
  if (Object.keys(m.fields).length > 0) line.fields = m.fields;
  if (supersedes?.length) line.supersedes = supersedes;
  if (merged) line.merged = merged;
  if (undone) line.undone = undone;
  if (m.accessCount > 0)
    line.access = {
      count: m.accessCount,
      last: m.lastAccessed === null ? null : new Date(m.lastAccessed).toISOString(),
    };
  if (deleted) line.deleted = true;
  return line;
}

/** The merges consolidation made in `namespace`, in force and undone, by merged id. */
function mergesOf(
  engine: CairnEngine,
  namespace: string,
): { merged: Map<string, MergedLine>; undone: Map<string, UndoneLine> } {
  const merged = new Map<string, MergedLine>();
  const undone = new Map<string, UndoneLine>();
  for (const r of engine.consolidations(namespace, Number.MAX_SAFE_INTEGER)) {
    const line = { into: r.into, cosine: r.cosine, at: new Date(r.at).toISOString() };
    if (r.undoneAt === null) merged.set(r.id, line);
    else undone.set(r.id, { ...line, undoneAt: new Date(r.undoneAt).toISOString() });
  }
  return { merged, undone };
}

/**
 * Superseding lines ordered so that each comes after every line it supersedes (same namespace), file order
 * otherwise: a writer marks only a memory that exists as superseded. A cycle (nothing a file from `cairn
 * export` holds) is broken where it is met.
 */
function supersedersInOrder<T extends { value: Record<string, unknown> }>(lines: readonly T[]): T[] {
  const keyOf = (v: Record<string, unknown>, id: unknown) => `${String(v.namespace)}\u0000${String(id)}`;
  const byKey = new Map(lines.map((l) => [keyOf(l.value, l.value.id), l]));
  const out: T[] = [];
  const seen = new Set<T>();
  const visit = (l: T) => {
    if (seen.has(l)) return;
    seen.add(l);
    for (const target of l.value.supersedes as unknown[]) {
      const t = byKey.get(keyOf(l.value, target));
      if (t) visit(t);
    }
    out.push(l);
  };
  for (const l of lines) visit(l);
  return out;
}

interface ExportFlags {
  namespace?: string;
  out?: string;
  dataDir?: string;
}

/**
 * `cairn export -n NS [--out file]`: every memory of a namespace as JSONL, oldest first, superseded and
 * deleted ones included, so `cairn import` rebuilds the namespace as it was (ids, times, tags, facts,
 * supersessions, tombstones). Vectors are not exported: they are derived, and the importing folder's
 * embedder makes its own. `--out` is written whole or not at all (see WholeFile); a namespace holding no
 * memory at all is refused (NOT_FOUND) and leaves the file as it was.
 */
export async function exportCommand(flags: ExportFlags, env: CliEnv): Promise<void> {
  const namespace = requireNamespace(flags.namespace);
  await withEngine(
    flags.dataDir,
    env,
    async (engine) => {
      // Which memories each one supersedes: the store keeps the other direction (superseded_by).
      const supersedes = new Map<string, string[]>();
      for (const { id, supersededBy } of engine.supersessions(namespace)) {
        const list = supersedes.get(supersededBy) ?? [];
        list.push(id);
        supersedes.set(supersededBy, list);
      }
      // Consolidation's merges, which `supersessions` leaves out: an import restores them as merges.
      const { merged, undone } = mergesOf(engine, namespace);
      const target = flags.out ? new WholeFile(flags.out) : null;
      const out: NodeJS.WritableStream = target?.stream ?? process.stdout;
      // Interrupted, the target is left as it was and the temporary file removed (it was left behind).
      const onSignal = () => {
        target?.abandon();
        process.exit(EXIT.interrupted);
      };
      if (target) {
        process.once('SIGINT', onSignal);
        process.once('SIGTERM', onSignal);
      }
      let memories = 0;
      let deleted = 0;
      try {
        for (const { memory, deletedAt } of engine.exportNamespace(namespace)) {
          const line = `${JSON.stringify(toLine(memory, supersedes.get(memory.id), deletedAt !== null, merged.get(memory.id), undone.get(memory.id)))}\n`;
          memories++;
          if (deletedAt !== null) deleted++;
          if (!out.write(line)) await once(out, 'drain');
        }
        if (memories === 0)
          throw new CairnError(
            'NOT_FOUND',
            `namespace ${namespace} holds no memories in this data folder: nothing exported${flags.out ? ` (${flags.out} left as it was)` : ''}`,
            { field: 'namespace' },
          );
        await target?.commit();
      } catch (err) {
        target?.abandon();
        throw err;
      } finally {
        process.off('SIGINT', onSignal);
        process.off('SIGTERM', onSignal);
      }
      warn(
        `exported ${memories} memories of ${namespace} (${deleted} deleted)${flags.out ? ` to ${flags.out}` : ''}`,
      );
    },
    { follow: true, existing: true },
  );
}

interface ImportFlags {
  dataDir?: string;
  json?: boolean;
  batchSize: string;
}

/** A line's `merged`, checked: what an export writes, or why it is not. */
function mergedOf(value: unknown): { ok: true; merged: MergedLine | null } | { ok: false; why: string } {
  if (value === undefined) return { ok: true, merged: null };
  const m = value as Partial<MergedLine> | null;
  const at = typeof m?.at === 'string' ? Date.parse(m.at) : Number.NaN;
  if (
    typeof m !== 'object' ||
    m === null ||
    typeof m.into !== 'string' ||
    m.into.length === 0 ||
    typeof m.cosine !== 'number' ||
    !Number.isFinite(m.cosine) ||
    Number.isNaN(at)
  )
    return {
      ok: false,
      why: 'merged must be {"into": id, "cosine": number, "at": ISO time}, as cairn export writes it',
    };
  return { ok: true, merged: { into: m.into, cosine: m.cosine, at: m.at! } };
}

/** A line's `undone`, checked: a merge (as `merged`) and when it was undone. */
function undoneOf(value: unknown): { ok: true; undone: UndoneLine | null } | { ok: false; why: string } {
  if (value === undefined) return { ok: true, undone: null };
  const merge = mergedOf(value);
  const u = value as Partial<UndoneLine> | null;
  const undoneAt = typeof u?.undoneAt === 'string' ? Date.parse(u.undoneAt) : Number.NaN;
  if (!merge.ok || !merge.merged || Number.isNaN(undoneAt))
    return {
      ok: false,
      why: 'undone must be {"into": id, "cosine": number, "at": ISO time, "undoneAt": ISO time}, as cairn export writes it',
    };
  return { ok: true, undone: { ...merge.merged, undoneAt: u!.undoneAt! } };
}

/** A line's `access`, checked: a count of searches that returned it, and the last one's time. */
function accessOf(
  value: unknown,
): { ok: true; access: { count: number; last: number | null } | null } | { ok: false; why: string } {
  if (value === undefined) return { ok: true, access: null };
  const a = value as { count?: unknown; last?: unknown } | null;
  const last = typeof a?.last === 'string' ? Date.parse(a.last) : a?.last === null ? null : Number.NaN;
  if (
    typeof a !== 'object' ||
    a === null ||
    typeof a.count !== 'number' ||
    !Number.isSafeInteger(a.count) ||
    a.count < 0 ||
    (last !== null && Number.isNaN(last))
  )
    return {
      ok: false,
      why: 'access must be {"count": whole number, "last": ISO time or null}, as cairn export writes it',
    };
  return { ok: true, access: { count: a.count, last } };
}

/**
 * `cairn import file.jsonl` (an export): stores every memory, then restores supersessions (once every
 * memory they name exists, whatever the file's order), consolidation's merges and tombstones, then waits
 * until all is embedded.
 */
export async function importCommand(file: string, flags: ImportFlags, env: CliEnv): Promise<void> {
  const batchSize = numberFlag(flags.batchSize, 'batch-size', { min: 1, max: 50_000 });
  if (env.REDIS_URL)
    throw new CairnError(
      'INVALID_INPUT',
      'cairn import restores into a data folder (embedded mode); unset REDIS_URL, import, then let the workers serve it',
      { field: 'REDIS_URL' },
    );
  fileSize(file); // a missing file or a folder is named before a data folder is opened (or created)
  const summary = {
    read: 0,
    stored: 0,
    updated: 0,
    unchanged: 0,
    rejected: 0,
    superseding: 0,
    merged: 0,
    undone: 0,
    deleted: 0,
  };
  const rejected: Array<{ line: number; code: string; message: string }> = [];
  // Beside a running writer this process stores as its follower, and the writer embeds (see waitForVectors).
  const keys: number[] = [];
  let writer: string | null = null;
  let pending = 0;
  let writerEmbedsOthers = true;
  await withEngine(
    flags.dataDir,
    env,
    async (engine) => {
      const later: Array<{ line: number; value: Record<string, unknown> }> = [];
      const tombstones: Array<{ namespace: string; id: string; line: number }> = [];
      const merges: Array<{ namespace: string; id: string; merged: MergedLine }> = [];
      const undos: Array<{ namespace: string; id: string; undone: UndoneLine }> = [];
      const accesses: Array<{ namespace: string; id: string; count: number; last: number | null }> = [];
      // How each line was written, so a line written only to be deleted is counted once, as deleted.
      const statusOfLine = new Map<number, 'stored' | 'updated' | 'unchanged'>();
      // A deleted memory the folder already holds deleted, as the file says it: written again it would come
      // back to life until its delete, rewriting its session's neighbours, at every re-import of one file.
      const deletedHere = new Map<string, Map<string, ExportLine>>();
      const alreadyDeleted = (line: Record<string, unknown>): boolean => {
        const ns = String(line.namespace);
        let here = deletedHere.get(ns);
        if (!here) {
          here = new Map();
          try {
            for (const { memory, deletedAt } of engine.exportNamespace(ns))
              if (deletedAt !== null) here.set(memory.id, toLine(memory, undefined, true));
          } catch {
            // Not a namespace (the line is refused when written): nothing held.
          }
          deletedHere.set(ns, here);
        }
        // What a memory says, not its bookkeeping (its merges, its access counts).
        const { supersedes: _s, merged: _m, undone: _u, access: _a, ...said } = line;
        const held = here.get(String(line.id));
        if (held === undefined) return false;
        const { access: _ha, ...heldSaid } = held;
        return isDeepStrictEqual(heldSaid, said);
      };
      let batch: Array<{ line: number; value: Record<string, unknown> }> = [];
      const store = (items: typeof batch) => {
        const res = engine.ingest(items.map((b) => b.value));
        for (const key of res.keys) keys.push(key);
        for (const item of res.items) {
          if (item.status === 'rejected') {
            summary.rejected++;
            rejected.push({
              line: items[item.index]!.line,
              code: item.error!.code,
              message: item.error!.message,
            });
          } else {
            summary[item.status]++;
            statusOfLine.set(items[item.index]!.line, item.status);
          }
        }
      };
      for await (const l of readJsonl(file)) {
        summary.read++;
        if (l.error !== undefined || typeof l.value !== 'object' || l.value === null) {
          summary.rejected++;
          rejected.push({ line: l.line, code: 'INVALID_INPUT', message: l.error ?? 'not a JSON object' });
          continue;
        }
        const { deleted, supersedes, merged, undone, access, ...memory } = l.value as Record<string, unknown>;
        const merge = mergedOf(merged);
        const undo = undoneOf(undone);
        const used = accessOf(access);
        const bad = !merge.ok ? merge.why : !undo.ok ? undo.why : !used.ok ? used.why : null;
        if (bad !== null || !merge.ok || !undo.ok || !used.ok) {
          summary.rejected++;
          rejected.push({ line: l.line, code: 'INVALID_INPUT', message: bad ?? 'invalid line' });
          continue;
        }
        const where = { namespace: String(memory.namespace), id: String(memory.id) };
        if (merge.merged) merges.push({ ...where, merged: merge.merged });
        if (undo.undone) undos.push({ ...where, undone: undo.undone });
        if (used.access) accesses.push({ ...where, ...used.access });
        if (deleted === true && alreadyDeleted(l.value as Record<string, unknown>)) {
          summary.unchanged++;
          continue;
        }
        if (deleted === true)
          tombstones.push({ namespace: String(memory.namespace), id: String(memory.id), line: l.line });
        // A memory that supersedes others is written once, after them, with what it supersedes: written
        // first without it, it differed from itself as stored, so every re-import rewrote it twice.
        if (Array.isArray(supersedes) && supersedes.length > 0) {
          later.push({ line: l.line, value: { ...memory, supersedes } });
          continue;
        }
        batch.push({ line: l.line, value: memory });
        if (batch.length >= batchSize) {
          store(batch);
          batch = [];
        }
      }
      store(batch);
      // Second pass: the superseding memories, each after every one it supersedes (a chain, in its order).
      const ordered = supersedersInOrder(later);
      for (let i = 0; i < ordered.length; i += batchSize) {
        const part = ordered.slice(i, i + batchSize);
        const before = summary.rejected;
        store(part);
        summary.superseding += part.length - (summary.rejected - before);
      }
      rejected.sort((a, b) => a.line - b.line);
      // Consolidation's merges, oldest first (a chain merges in its order), before the deletes: a merge
      // takes two live memories. One already in force, or undone here since, is left as it is.
      merges.sort((a, b) => Date.parse(a.merged.at) - Date.parse(b.merged.at));
      for (const m of merges) {
        const { memories } = engine.get(m.namespace, [m.id, m.merged.into], { touch: false });
        const key = memories.find((x) => x.id === m.id)?.key;
        const byKey = memories.find((x) => x.id === m.merged.into)?.key;
        if (key === undefined || byKey === undefined) continue;
        const applied = engine.store.consolidations.merge(
          [{ key, byKey, cosine: m.merged.cosine }],
          Date.parse(m.merged.at),
        );
        summary.merged += applied.length;
      }
      // Undone merges, so the job never merges them again here either: recorded as undone, in one
      // transaction (a merge and then its undo left a merge behind when killed between the two, and was
      // refused when the undo's target had been merged or superseded since). One recorded here already is
      // left as it is.
      const undone: Array<Parameters<typeof engine.store.consolidations.recordUndone>[0][number]> = [];
      for (const u of undos) {
        const { memories } = engine.get(u.namespace, [u.id, u.undone.into], { touch: false });
        const key = memories.find((x) => x.id === u.id)?.key;
        const byKey = memories.find((x) => x.id === u.undone.into)?.key;
        if (key === undefined || byKey === undefined) continue;
        undone.push({
          key,
          byKey,
          namespace: u.namespace,
          cosine: u.undone.cosine,
          at: Date.parse(u.undone.at),
          undoneAt: Date.parse(u.undone.undoneAt),
        });
      }
      if (undone.length > 0) summary.undone += engine.store.consolidations.recordUndone(undone);
      // Access counts, which pruning ranks by: as exported, never lowered (a re-import adds nothing).
      if (accesses.length > 0) engine.store.restoreAccess(accesses);
      for (const t of tombstones) {
        if (!engine.delete(t.namespace, t.id)) continue;
        summary.deleted++;
        const written = statusOfLine.get(t.line);
        if (written) summary[written]--;
      }
      const wait = await waitForVectors(engine, keys, () => engine.drain(5), false);
      writer = wait.writer;
      pending = wait.pending;
      writerEmbedsOthers = wait.writerEmbedsOthers;
    },
    { follow: true },
  );
  if (flags.json) writeJson({ ...summary, writer, writerEmbedsOthers, pending, errors: rejected });
  else {
    for (const r of rejected) warn(`line ${r.line}: [${r.code}] ${r.message}`);
    const vectors = writer ? byWriter({ writer, pending, writerEmbedsOthers }) : 'all embedded and indexed';
    process.stdout.write(
      `read ${summary.read}, stored ${summary.stored}, updated ${summary.updated}, unchanged ${summary.unchanged}, ` +
        `rejected ${summary.rejected}; ${summary.superseding} supersessions, ${summary.merged} merges, ${summary.undone} undone merges and ${summary.deleted} deletions restored; ${vectors}\n`,
    );
  }
  if (summary.rejected > 0) process.exitCode = EXIT.partial;
}
