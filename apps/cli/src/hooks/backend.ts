import { existsSync } from 'node:fs';
import { isAbsolute, join, resolve } from 'node:path';
import type { MemoryApi } from '@cairn/api-contract';
import { CairnClient } from '@cairn/client';
import { CairnError } from '@cairn/core';
import { apiTarget } from '../api-target.js';
import type { CliEnv } from '../env.js';
import { localMemoryApi } from '../local-memory-api.js';
import { openEngine } from '../open-engine.js';
import { projectNamespace } from '../project-namespace.js';

export interface HookTargetFlags {
  /** @defaultValue derived from the project's git repository, as `cairn mcp` derives it */
  namespace?: string;
  /** Prefix of the derived namespace (not of --namespace). @defaultValue $CAIRN_NAMESPACE_PREFIX */
  namespacePrefix?: string;
  dataDir?: string;
  /** @defaultValue $CAIRN_API_URL */
  api?: string;
  /** @defaultValue $CAIRN_API_KEY */
  apiKey?: string;
}

/**
 * The folder the session works in: Claude Code's project folder (CLAUDE_PROJECT_DIR, where it was started,
 * the folder `cairn mcp` was started in too), else the payload's cwd, else this process's. A relative data
 * folder and a namespace outside git are resolved against it, so a `cd` inside the session changes neither.
 */
export function projectFolder(payloadCwd: string | undefined, env: CliEnv): string {
  const fromEnv = env.raw.CLAUDE_PROJECT_DIR;
  if (fromEnv && isAbsolute(fromEnv)) return fromEnv;
  if (payloadCwd && isAbsolute(payloadCwd)) return payloadCwd;
  return process.cwd();
}

/**
 * The namespace `cairn mcp` gives the same project: --namespace, else the git repository's (`gitNamespace`),
 * else the folder's (`folderNamespace`), under the prefix when one is set. The hook and the MCP server must
 * agree, or what one stores the other never finds.
 */
export function hookNamespace(flags: HookTargetFlags, base: string, env: CliEnv): string {
  return projectNamespace(flags.namespace, flags.namespacePrefix ?? env.CAIRN_NAMESPACE_PREFIX, base)
    .namespace;
}

/** The data folder the hooks use: --data-dir, else $CAIRN_DATA_DIR, else .cairn, relative to the project. */
export function hookDataDir(flags: HookTargetFlags, base: string, env: CliEnv): string {
  return resolve(base, flags.dataDir ?? env.CAIRN_DATA_DIR);
}

export interface HookBackend {
  api: MemoryApi;
  /** Where memories go, for log lines: the API's URL or the data folder. */
  where: string;
  /** The data folder, when the hook writes one (its hooks.log sits there). */
  dataDir: string | null;
  close(): Promise<void>;
}

/**
 * A running `cairn serve` when one is configured (--api or CAIRN_API_URL, with CAIRN_API_KEY), else the data
 * folder. `read`: SessionStart only reads, so it opens the folder as a reader (no writer lock, no embedding,
 * never creates a folder). A write opens it as its writer when it is free, or as a follower beside the
 * running writer (a `cairn mcp`, a `cairn serve`): the follower commits to SQLite at once and the writer
 * embeds and indexes what it stored, so a hook never waits for another process.
 */
export async function openHookBackend(
  flags: HookTargetFlags,
  base: string,
  env: CliEnv,
  opts: { read: boolean; timeoutMs: number },
): Promise<HookBackend> {
  const target = apiTarget(flags, env);
  if (target) {
    return {
      api: new CairnClient({ ...target, timeoutMs: Math.max(opts.timeoutMs, 100) }),
      where: target.baseUrl,
      dataDir: null,
      close: async () => {},
    };
  }
  const dataDir = hookDataDir(flags, base, env);
  if (opts.read && !env.REDIS_URL && !existsSync(join(dataDir, 'cairn.db')))
    throw new CairnError('NOT_FOUND', `no Cairn data folder at ${dataDir} yet: nothing to recall`, {
      field: 'dataDir',
    });
  const engine = await openEngine(
    dataDir,
    env,
    opts.read ? { reader: true, existing: true } : { follow: true },
  );
  // With REDIS_URL the folder is a distributed deployment's: writes go through its capture queue, as
  // `cairn add` does (a read never needs the queues).
  const local = await localMemoryApi(engine, env, { saveWaitMs: opts.timeoutMs, queues: !opts.read });
  return { api: local.api, where: dataDir, dataDir, close: local.close };
}
