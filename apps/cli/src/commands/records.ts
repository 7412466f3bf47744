import { join } from 'node:path';
import { DEFAULT_API_LIMITS } from '@cairn/api-contract';
import { CairnError, isCairnError } from '@cairn/core';
import type { EngineStats } from '@cairn/engine';
import type { QueueCounts } from '@cairn/pipeline/distributed';
import { type RecordedIntegrity, readRecordedIntegrity } from '@cairn/store';
import { loadDistributed } from '../distributed.js';
import type { CliEnv } from '../env.js';
import { numberFlag, requireNamespace } from '../flags.js';
import { withEngine, withQueues } from '../open-engine.js';
import { EXIT, warn, writeJson } from '../output.js';
import { renderMemories } from '../render.js';

interface NsFlags {
  namespace?: string;
  dataDir?: string;
  json?: boolean;
}

export async function getCommand(ids: string[], flags: NsFlags, env: CliEnv): Promise<void> {
  const ns = requireNamespace(flags.namespace);
  const res = await withEngine(flags.dataDir, env, async (e) => e.get(ns, ids), {
    follow: true,
    existing: true,
  });
  if (flags.json) writeJson({ memories: res.memories.map(({ key: _k, ...m }) => m), missing: res.missing });
  else {
    for (const m of res.memories) {
      process.stdout.write(
        `── ${m.id} (${m.kind}, ${new Date(m.ts).toISOString()}${m.session ? `, session ${m.session}` : ''})\n`,
      );
      if (m.title) process.stdout.write(`${m.title}\n`);
      process.stdout.write(`${m.text}\n`);
      if (m.tags.length) process.stdout.write(`tags: ${m.tags.join(', ')}\n`);
    }
    if (res.missing.length) warn(`not found in namespace "${ns}": ${res.missing.join(', ')}`);
  }
  // Some found: partial, as a batch with some lines rejected; none: not found.
  if (res.missing.length > 0) process.exitCode = res.memories.length > 0 ? EXIT.partial : EXIT.usage;
}

export async function timelineCommand(
  anchor: string,
  flags: NsFlags & { before: string; after: string },
  env: CliEnv,
): Promise<void> {
  const ns = requireNamespace(flags.namespace);
  // The API's bounds, so a command and a request refuse the same values.
  const side = { min: 0, max: DEFAULT_API_LIMITS.maxTimelineSide };
  const before = numberFlag(flags.before, 'before', side);
  const after = numberFlag(flags.after, 'after', side);
  const res = await withEngine(flags.dataDir, env, async (e) => e.timeline(ns, anchor, before, after), {
    follow: true,
    existing: true,
  });
  const strip = <T extends { key: number }>({ key: _k, ...m }: T) => m;
  if (flags.json) {
    writeJson({
      scope: res.scope,
      anchor: strip(res.anchor),
      before: res.before.map(strip),
      after: res.after.map(strip),
    });
  } else {
    process.stdout.write(`timeline around ${anchor} (within its ${res.scope})\n`);
    process.stdout.write(renderMemories([...res.before, res.anchor, ...res.after], anchor));
  }
}

export async function statsCommand(flags: { dataDir?: string; json?: boolean }, env: CliEnv): Promise<void> {
  const stats: EngineStats & { queues?: Record<string, QueueCounts> | null; queuesError?: string } =
    await withEngine(flags.dataDir, env, async (e) => e.stats(), { follow: true, existing: true });
  if (env.REDIS_URL) {
    const { queueCounts } = await loadDistributed();
    try {
      stats.queues = await withQueues(env, queueCounts);
    } catch (err) {
      // The counts come from cairn.db and stand without Redis: print them, say what is missing, exit 1.
      if (!isCairnError(err) || err.code !== 'BACKEND_UNAVAILABLE') throw err;
      stats.queues = null;
      stats.queuesError = err.message;
      warn(`cairn: error [${err.code}]: queue depths unknown: ${err.message}`);
      process.exitCode = EXIT.failure;
    }
  }
  // This command does not check cairn.db (a quick check reads every page: seconds at 100k memories); it
  // says what the last check found, which `cairn serve`, `cairn mcp` and `cairn check` record.
  const integrity = readRecordedIntegrity(join(stats.dataDir, 'cairn.db'));
  if (integrity && !integrity.ok) process.exitCode = EXIT.failure;
  if (flags.json) {
    writeJson({ ...stats, integrity });
    return;
  }
  process.stdout.write(`data dir: ${stats.dataDir}\nembedding space: ${stats.space ?? '(none)'}\n`);
  process.stdout.write(`${integrityLine(integrity)}\n`);
  for (const [ns, s] of Object.entries(stats.namespaces)) {
    process.stdout.write(
      // Superseded memories keep their vectors (an undo brings them back), so they are named beside
      // `stored`: embedded and indexed count both, and the line adds up.
      `${ns}: stored ${s.stored}${s.superseded ? `, superseded ${s.superseded}` : ''}, embedded ${s.embedded}, indexed ${s.indexed} (${s.index}), pending ${s.pending}, failed ${s.failed}` +
        `${s.deleted ? `, deleted ${s.deleted}` : ''}` +
        `${s.fields ? `, fields ${s.fields} (${s.fieldsEmbedded} embedded)` : ''}\n`,
    );
  }
  if (Object.keys(stats.namespaces).length === 0) process.stdout.write('no memories yet\n');
  for (const [q, c] of Object.entries(stats.queues ?? {}))
    process.stdout.write(
      `queue ${q}: waiting ${c.waiting}, active ${c.active}, delayed ${c.delayed}, failed ${c.failed}, workers ${c.workers ?? 'unknown (Redis refused CLIENT LIST)'}${c.workers === 0 ? ' (its jobs wait for a cairn worker of that stage)' : ''}\n`,
    );
}

export async function deleteCommand(id: string, flags: NsFlags, env: CliEnv): Promise<void> {
  const ns = requireNamespace(flags.namespace);
  const ok = await withEngine(flags.dataDir, env, async (e) => e.delete(ns, id), {
    follow: true,
    existing: true,
  });
  if (!ok) throw new CairnError('NOT_FOUND', `no memory with id "${id}" in namespace "${ns}"`);
  if (flags.json) writeJson({ deleted: id });
  else process.stdout.write(`deleted ${id}\n`);
}

/** What `cairn stats` says of cairn.db's integrity: the last recorded verdict, and how to check now. */
function integrityLine(r: RecordedIntegrity | null): string {
  if (!r)
    return 'integrity: not checked yet (cairn serve and cairn mcp check cairn.db as they start; cairn check does now)';
  const when = new Date(r.checkedAt).toISOString();
  return r.ok
    ? `integrity: sound when last checked (${when}, ${r.by}); cairn check checks it now`
    : `integrity: DAMAGED when last checked (${when}, ${r.by}: ${r.problems[0] ?? 'malformed'}); run cairn check for the report`;
}
