// How long a `cairn worker` takes to stop on SIGTERM, with Redis up and with Redis down, through the CLI as an
// operator runs it: a private redis-server, one `cairn worker` (every stage), SIGTERM once it has started
// (and, for "down", 2 s after Redis was SIGKILLed). The time is from the signal to the process's exit; a
// container runtime SIGKILLs a process still running 10 s after its SIGTERM (Docker's default).
// Usage: pnpm build && node bench/dist/worker-stop.js [--cli apps/cli/dist/main.js] [--rounds 3]
// Prints one line per round and a JSON summary on stdout. Needs redis-server on PATH.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { startRedisServer } from '@cairn/pipeline/testing';
import { CLI_PATH } from './cli-runner.js';

const { values } = parseArgs({
  options: { cli: { type: 'string' }, rounds: { type: 'string', default: '3' } },
});
const cli = values.cli ? resolve(values.cli) : CLI_PATH;
const rounds = Number(values.rounds);

async function stopOnce(redisDown: boolean): Promise<{ ms: number; code: number | null; graceful: boolean }> {
  const redis = await startRedisServer();
  const dir = mkdtempSync(join(os.tmpdir(), 'cairn-worker-stop-'));
  try {
    const worker = spawn(process.execPath, [cli, 'worker', '--data-dir', join(dir, 'data')], {
      env: { ...process.env, REDIS_URL: redis.url, CAIRN_QUEUE_PREFIX: `ws-${process.pid}-${Date.now()}` },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let log = '';
    const append = (d: Buffer) => {
      log += d;
    };
    worker.stdout!.on('data', append);
    worker.stderr!.on('data', append);
    while (!log.includes('worker started')) {
      if (worker.exitCode !== null) throw new Error(`the worker exited before it started:\n${log}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    await new Promise((r) => setTimeout(r, 2_000));
    if (redisDown) {
      await redis.stop('SIGKILL');
      await new Promise((r) => setTimeout(r, 2_000));
    }
    const exited = once(worker, 'exit');
    const t0 = performance.now();
    worker.kill('SIGTERM');
    const [code] = (await exited) as [number | null];
    return { ms: performance.now() - t0, code, graceful: /"graceful":true/.test(log) };
  } finally {
    await redis.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const results: Record<string, Array<{ ms: number; code: number | null; graceful: boolean }>> = {
  up: [],
  down: [],
};
for (let i = 0; i < rounds; i++)
  for (const state of ['up', 'down'] as const) {
    const r = await stopOnce(state === 'down');
    results[state]!.push(r);
    process.stdout.write(
      `redis ${state}: stopped in ${(r.ms / 1000).toFixed(2)} s, exit ${r.code}, graceful ${r.graceful}\n`,
    );
  }
process.stdout.write(`${JSON.stringify({ cli, date: new Date().toISOString(), results })}\n`);
