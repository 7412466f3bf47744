import { resolve } from 'node:path';
import { CairnError } from '@cairn/core';
import type { QueueTopology } from './queue-topology.js';

/** The data folder a deployment's queues belong to, as recorded in Redis by its first writer. */
export interface DataFolderBinding {
  /** The folder's identity (MemoryStore.folderId: a random id its database was created with). */
  id: string;
  /** Where the process that recorded it opened the folder (machines may mount it elsewhere). */
  path: string;
  /** When it was recorded (epoch ms). */
  since: number;
}

/**
 * A deployment (one queue prefix on one Redis) has exactly one data folder: its capture and index workers
 * write it and its API nodes read it. A worker started on a mistyped `--data-dir` used to create a new,
 * empty folder and store the deployment's writes there, where no server read them. The first process that
 * opens the folder records its identity under `<prefix>:data-folder`; every later one checks it.
 */
export function dataFolderKey(topology: QueueTopology): string {
  return `${topology.opts.prefix}:data-folder`;
}

/** The recorded folder, or null when none has been yet (a new deployment). */
export async function boundDataFolder(topology: QueueTopology): Promise<DataFolderBinding | null> {
  const raw = await topology.connection.get(dataFolderKey(topology));
  return raw ? (JSON.parse(raw) as DataFolderBinding) : null;
}

/**
 * Refuses a folder that does not exist yet when the deployment already has one: opening it would create a
 * new folder beside the real one. A new deployment's first process creates its folder as before.
 * `exists` is asked again once the binding is read: a deployment's first worker creates its folder and then
 * records it, so a process started beside it (`docker compose up`) that looked before the folder was made
 * and read the binding after would take the new folder for a deleted one.
 */
export async function assertDeploymentFolder(
  topology: QueueTopology,
  path: string,
  exists: () => boolean,
): Promise<void> {
  if (exists()) return;
  const bound = await boundDataFolder(topology);
  if (!bound || exists()) return;
  const where = `this deployment (queue prefix "${topology.opts.prefix}") keeps its memories in the folder first opened at ${bound.path}`;
  const rebind = `If that folder is gone for good, delete the Redis key ${dataFolderKey(topology)} (its queued jobs belong to the old folder) and start again.`;
  throw new CairnError(
    'NOT_FOUND',
    resolve(path) === bound.path
      ? `no Cairn data folder at ${path}, though ${where}: it was deleted or its volume replaced. ${rebind}`
      : `no Cairn data folder at ${path}: ${where}; point --data-dir or CAIRN_DATA_DIR at it (on this machine's mount). ${rebind}`,
    { field: 'dataDir' },
  );
}

/**
 * Records `folder` as the deployment's when none is yet (atomically: two workers starting together agree
 * on one), and refuses another folder. Returns the binding in force.
 */
export async function bindDataFolder(
  topology: QueueTopology,
  folder: { id: string; path: string },
): Promise<DataFolderBinding> {
  const mine: DataFolderBinding = { id: folder.id, path: folder.path, since: Date.now() };
  const key = dataFolderKey(topology);
  // Atomic: of two processes starting together on a new deployment, one records its folder.
  if ((await topology.connection.set(key, JSON.stringify(mine), 'NX')) === 'OK') return mine;
  const bound = (await boundDataFolder(topology)) ?? mine;
  if (bound.id !== folder.id) throw notThisDeployments(topology, folder, bound);
  return bound;
}

/**
 * Refuses an existing folder that is not the deployment's (when it has one), recording nothing: a read (a
 * one-shot `cairn stats`, `search`, `export`) on a mistyped `--data-dir` answered from another folder, with
 * this deployment's queue depths beside its counts.
 */
export async function assertFolderOfDeployment(
  topology: QueueTopology,
  folder: { id: string; path: string },
): Promise<void> {
  const bound = await boundDataFolder(topology);
  if (bound && bound.id !== folder.id) throw notThisDeployments(topology, folder, bound);
}

function notThisDeployments(
  topology: QueueTopology,
  folder: { id: string; path: string },
  bound: DataFolderBinding,
): CairnError {
  return new CairnError(
    'INVALID_INPUT',
    `the data folder at ${folder.path} is not this deployment's: the queues (prefix "${topology.opts.prefix}") belong to the folder first opened at ${bound.path} (id ${bound.id}, this one ${folder.id}); point --data-dir or CAIRN_DATA_DIR at that folder, or give this one its own CAIRN_QUEUE_PREFIX. If that folder is gone for good, delete the Redis key ${dataFolderKey(topology)} to bind the queues to this one.`,
    { field: 'dataDir' },
  );
}
