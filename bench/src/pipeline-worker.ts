// A `cairn worker` child process for the pipeline benchmark: StageWorkerHost running all three stages on
// one data folder. Started by pipeline.ts as `node bench/dist/pipeline-worker.js '<WorkerConfig JSON>'`
// with an IPC channel; it exits when that channel closes, so a benchmark that dies leaves no worker behind.
import { StageWorkerHost } from '@cairn/engine/distributed';
import type { ParentMessage, WorkerConfig, WorkerMessage } from './pipeline-protocol.js';

const send = (m: WorkerMessage) =>
  new Promise<void>((resolve) => {
    if (!process.send) resolve();
    else process.send(m, undefined, {}, () => resolve());
  });

if (!process.send) {
  process.stderr.write('pipeline-worker.js is started by pipeline.js over IPC, not by hand\n');
  process.exit(2);
}

const cfg = JSON.parse(process.argv[2] ?? '{}') as WorkerConfig;
let stopping = false;
process.on('disconnect', () => {
  if (!stopping) process.exit(1);
});

const host = await StageWorkerHost.start({
  dataDir: cfg.dataDir,
  redisUrl: cfg.redisUrl,
  stages: ['capture', 'embed', 'index'],
  queue: { prefix: cfg.prefix, shards: cfg.shards },
  persistIntervalMs: cfg.persistIntervalMs,
  ...(cfg.reconcileIntervalMs === undefined ? {} : { reconcileIntervalMs: cfg.reconcileIntervalMs }),
  log: (level, msg, data) => {
    if (level !== 'debug') void send({ type: 'log', level, msg, data });
  },
});

process.on('message', (m: ParentMessage) => {
  if (m.type === 'status') void send({ type: 'status', status: host.status });
  else if (m.type === 'stop' && !stopping) {
    stopping = true;
    void host.close(m.deadlineMs).then(async (r) => {
      await send({ type: 'closed', graceful: r.graceful, status: host.status });
      process.exit(0);
    });
  }
});

await send({ type: 'ready', status: host.status });
