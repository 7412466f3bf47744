import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

// Starting the CLI as a user does: a real `node dist/main.js` process with its own environment.

export const MAIN = fileURLToPath(new URL('../dist/main.js', import.meta.url));

/** Spawns `cairn <args>`; the caller kills what it started (push it on its own list). */
export function startCli(args: string[], env: Record<string, string>): ChildProcess {
  return spawn(process.execPath, [MAIN, ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

/** Resolves with `cairn serve --port 0`'s base URL, read from its start-up line; rejects if it exits first. */
export function servedUrl(child: ChildProcess): Promise<string> {
  let err = '';
  return new Promise<string>((resolve, reject) => {
    child.stderr!.on('data', (d) => {
      err += d;
      const m = /Cairn API on (http:\/\/[^\s]+)/.exec(err);
      if (m) resolve(m[1]!);
    });
    child.on('exit', (code) => reject(new Error(`serve exited ${code}: ${err}`)));
  });
}

/** POSTs JSON and returns the status with the parsed body. */
export async function postJson(url: string, body: unknown, key: string | null = null) {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) },
    body: JSON.stringify(body),
  });
  // biome-ignore lint/suspicious/noExplicitAny: the tests read arbitrary JSON bodies
  return { status: res.status, body: (await res.json()) as Record<string, any> };
}
