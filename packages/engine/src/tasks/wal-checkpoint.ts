// Checkpoints the write-ahead log of the engine's database on a thread of its own (see
// background-checkpointer.ts), every `intervalMs`, until told to stop.
import { parentPort, workerData } from 'node:worker_threads';
import { openCheckpointConnection } from '@cairn/store';

const { path, intervalMs, restartFrames } = workerData as {
  path: string;
  intervalMs: number;
  restartFrames: number;
};
const conn = openCheckpointConnection(path);
const timer = setInterval(() => {
  try {
    const r = conn.checkpoint();
    // A log this long after a pass will not restart by itself: the writer restarts it (see catchUp).
    if (r.log > restartFrames) parentPort?.postMessage({ longLog: r.log });
  } catch (err) {
    // SQLITE_BUSY is not an error for PASSIVE; anything else (the file removed, a full disk) is said once
    // and ends the thread: the writer then checkpoints inline again.
    parentPort?.postMessage({ error: (err as Error).message });
    clearInterval(timer);
    conn.close();
    parentPort?.close();
  }
}, intervalMs);
parentPort?.on('message', (m: unknown) => {
  if (m !== 'stop') return;
  clearInterval(timer);
  try {
    // One last pass, so the writer's close finds little left to copy.
    conn.checkpoint();
  } catch {
    // The writer's own close checkpoints whatever is left.
  }
  conn.close();
  parentPort?.close();
});
