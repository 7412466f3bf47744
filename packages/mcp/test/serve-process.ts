import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { resolve } from 'node:path';

/** The real CLI as users run it: the build must have run first (CI builds before it tests). */
export const CLI = resolve(import.meta.dirname, '../../../apps/cli/dist/main.js');

/** A `cairn serve --port 0` process on loopback and the URL it printed on start-up. */
export interface ServeProcess {
  url: string;
  child: ChildProcess;
  /** SIGTERM, then waits for the exit. */
  stop(): Promise<void>;
}

export async function startServe(args: string[], env: Record<string, string>): Promise<ServeProcess> {
  const child = spawn(process.execPath, [CLI, 'serve', '--port', '0', ...args], {
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let err = '';
  const url = await new Promise<string>((ok, fail) => {
    child.stderr!.on('data', (d) => {
      err += d;
      const m = /Cairn API on (http:\/\/\S+)/.exec(err);
      if (m) ok(m[1]!);
    });
    child.on('exit', (code) => fail(new Error(`cairn serve exited ${code}: ${err}`)));
  });
  return {
    url,
    child,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = once(child, 'exit');
      child.kill('SIGTERM');
      await exited;
    },
  };
}
