import { type DataFolderBinding, dataFolderKey } from './data-folder-binding.js';
import { type QueueTopology, shardCountKey } from './queue-topology.js';

/** How often a running process records its deployment's facts again (ms). @defaultValue 30 s */
export const RECORD_AGAIN_EVERY_MS = 30_000;

type RecordLog = (level: 'warn' | 'error', msg: string, data?: Record<string, unknown>) => void;

/** One fact a deployment keeps in Redis, and how to tell whether a recorded value is this process's. */
interface DeploymentRecord {
  key: string;
  /** Recorded when the key is gone. */
  value: string;
  /** Whether the recorded value agrees with this process (false: another process recorded its own). */
  agrees: (recorded: string) => boolean;
  /** Logged when it does not. */
  disagreement: (recorded: string) => string;
}

/**
 * Keeps a running process's deployment facts in Redis: the shard count every process must agree on, and the
 * data folder the queues belong to. Both are recorded once, when the deployment's first process starts, and
 * checked by every later one. A FLUSHALL, or a Redis restarted without its data, removes them while the
 * deployment runs, and a worker started after that on a mistyped `--data-dir` (or with another CAIRN_SHARDS)
 * recorded its own and was accepted: a second, empty folder taking the deployment's writes. So every
 * long-running process records them again when its connection comes back and every `everyMs`; a process
 * that finds another's facts recorded says so in its log (it keeps running: what it holds is the deployment's,
 * the newcomer's is the mistake, and the newcomer's own start is where it is refused once this is recorded).
 * Returns the stop.
 */
export function keepDeploymentRecorded(
  topology: QueueTopology,
  folder: { id: string; path: string } | null,
  log: RecordLog,
  everyMs = RECORD_AGAIN_EVERY_MS,
): () => void {
  const { prefix, shards } = topology.opts;
  const records: DeploymentRecord[] = [
    {
      key: shardCountKey(prefix),
      value: String(shards),
      agrees: (recorded) => Number(recorded) === shards,
      disagreement: (recorded) =>
        `this deployment (queue prefix "${prefix}") now records ${recorded} index shards, and this process routes over ${shards}: a process started with another CAIRN_SHARDS after the record was lost (a Redis flush or restart); stop it, and every process agrees again`,
    },
  ];
  if (folder) {
    const mine: DataFolderBinding = { id: folder.id, path: folder.path, since: Date.now() };
    records.push({
      key: dataFolderKey(topology),
      value: JSON.stringify(mine),
      agrees: (recorded) => bindingId(recorded) === folder.id,
      disagreement: (recorded) =>
        `this deployment (queue prefix "${prefix}") now records another data folder (${recorded}) than this process's (${folder.path}, id ${folder.id}): a process started on another folder after the record was lost (a Redis flush or restart) stores writes where this one does not read them; stop it and delete the Redis key ${dataFolderKey(topology)}, and this process records its folder again`,
    });
  }
  // Said once per recorded value, not every tick.
  const said = new Map<string, string>();
  let running = false;
  const check = async (): Promise<void> => {
    if (running || topology.connection.status !== 'ready') return;
    running = true;
    try {
      for (const r of records) {
        if ((await topology.connection.set(r.key, r.value, 'NX')) === 'OK') {
          said.delete(r.key);
          log(
            'warn',
            'a deployment record was gone from Redis (a flush, or a Redis restarted without its data); recorded again',
            {
              key: r.key,
            },
          );
          continue;
        }
        const recorded = await topology.connection.get(r.key);
        if (recorded === null || r.agrees(recorded)) {
          said.delete(r.key);
          continue;
        }
        if (said.get(r.key) === recorded) continue;
        said.set(r.key, recorded);
        log('error', r.disagreement(recorded), { key: r.key });
      }
    } catch {
      // Redis went away mid-check: its reconnect, or the next tick, checks again.
    } finally {
      running = false;
    }
  };
  const timer = setInterval(() => void check(), everyMs);
  timer.unref();
  const onReady = () => void check();
  topology.connection.on('ready', onReady);
  return () => {
    clearInterval(timer);
    topology.connection.off('ready', onReady);
  };
}

function bindingId(recorded: string): string | null {
  try {
    return (JSON.parse(recorded) as Partial<DataFolderBinding>).id ?? null;
  } catch {
    return null;
  }
}
