// Child process for the kill -9 worker test: a `cairn worker` with fast lock and lease timings, reporting
// what it processed on stdout. Uses the compiled engine (run `pnpm build` first).
import { StageWorkerHost } from '../dist/distributed.js';

const [dataDir, redisUrl, prefix, shards] = process.argv.slice(2);
const host = await StageWorkerHost.start({
  dataDir,
  redisUrl,
  stages: ['capture', 'embed', 'index'],
  queue: { prefix, shards: Number(shards) },
  lockDurationMs: 2_000,
  leaseTtlMs: 1_500,
  reconcileIntervalMs: 500,
  reconcileGraceMs: 300,
  persistIntervalMs: 100,
  exactThreshold: 100,
});
process.stdout.write('ready\n');
setInterval(() => process.stdout.write(`processed ${JSON.stringify(host.status.processed)}\n`), 20);
process.on('SIGTERM', async () => {
  const r = await host.close(5_000);
  process.stdout.write(`closed ${r.graceful}\n`);
  process.exit(0);
});
