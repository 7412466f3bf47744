// The IPC protocol between the pipeline benchmark and its worker child processes (pipeline-worker.ts).
// Children talk over the IPC channel only, so their stdout and stderr stay free for crashes.
import type { StageWorkersStatus } from '@cairn/pipeline/distributed';

/** What a worker child is started with, as JSON in argv[2]. */
export interface WorkerConfig {
  dataDir: string;
  redisUrl: string;
  prefix: string;
  shards: number;
  /** Merge index deltas into snapshot files this often (ms). */
  persistIntervalMs: number;
  /** Overrides the reconcile sweep's interval (ms; 0 disables it); the host's default when absent. */
  reconcileIntervalMs?: number;
}

export type ParentMessage = { type: 'status' } | { type: 'stop'; deadlineMs: number };

export type WorkerMessage =
  | { type: 'ready'; status: StageWorkersStatus }
  | { type: 'status'; status: StageWorkersStatus }
  | { type: 'closed'; graceful: boolean; status: StageWorkersStatus }
  | { type: 'log'; level: 'info' | 'warn' | 'error'; msg: string; data?: Record<string, unknown> };
