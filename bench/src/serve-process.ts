// `cairn serve` as a benchmark's child process, and the clean-up that makes sure no child or temporary
// folder outlives a benchmark however it ends (error, Ctrl-C). Shared by the API and soak benchmarks.
import { type ChildProcess, spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { resolve } from 'node:path';

export const CLI_SCRIPT = resolve(import.meta.dirname, '../../apps/cli/dist/main.js');
/** The server's per-key limit (requests/minute): far above what a benchmark machine serves, so no 429s. */
export const RATE_LIMIT_PER_MINUTE = 100_000_000;
export const START_DEADLINE_MS = 120_000;
export const STOP_DEADLINE_MS = 30_000;
const TAIL_LINES = 40;

/** A sleep that does not keep the process alive (a deadline in a race that usually ends first). */
export const expiry = (ms: number) => new Promise<null>((r) => setTimeout(() => r(null), ms).unref());

/**
 * What must not outlive the benchmark. The 'exit' handler is synchronous, so children are SIGKILLed there;
 * the normal path stops them gracefully first and removes them from here.
 */
export const leftovers = { children: new Set<ChildProcess>(), dirs: new Set<string>() };
process.on('exit', () => {
  for (const c of leftovers.children) c.kill('SIGKILL');
  for (const d of leftovers.dirs) rmSync(d, { recursive: true, force: true });
});
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => process.exit(130));

export interface ServeProcessOptions {
  dataDir: string;
  /** The CLI script to run (another build's apps/cli/dist/main.js, to compare two). @defaultValue CLI_SCRIPT */
  cli?: string;
  /** Options for the server's node, before the script (`--cpu-prof`, `--require probe.cjs`). */
  nodeArgs?: readonly string[];
  /** More `cairn serve` flags (`--processes 2`). */
  serveArgs?: readonly string[];
  /** Set in the server's environment, after REDIS_URL and API keys are cleared (embedded, no auth). */
  env?: Record<string, string>;
  /** Sees every output line first; returning true keeps the line out of the tail (a probe's reports). */
  onLine?: (line: string) => boolean;
  /** Where an unexpected exit is reported. */
  progress: (msg: string) => void;
}

/** `cairn serve --no-auth` over a data folder on a free loopback port, its output kept only as a tail. */
export class ServeProcess {
  readonly url: Promise<string>;
  readonly exited: Promise<string>;
  readonly pid: number;
  private readonly child: ChildProcess;
  private readonly lines: string[] = [];
  private stopping = false;
  private running = true;

  constructor(opts: ServeProcessOptions) {
    const args = [
      ...(opts.nodeArgs ?? []),
      opts.cli ?? CLI_SCRIPT,
      'serve',
      '--no-auth',
      '--data-dir',
      opts.dataDir,
      '--port',
      '0',
      '--host',
      '127.0.0.1',
      '--rate-limit',
      String(RATE_LIMIT_PER_MINUTE),
      ...(opts.serveArgs ?? []),
    ];
    // Embedded mode and no keys whatever the caller's shell holds, unless the benchmark says otherwise.
    const env: NodeJS.ProcessEnv = { ...process.env, CAIRN_LOG_LEVEL: 'warn' };
    for (const name of ['REDIS_URL', 'CAIRN_API_KEYS', 'CAIRN_API_KEYS_FILE']) delete env[name];
    Object.assign(env, opts.env);
    this.child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'], env });
    this.pid = this.child.pid!;
    leftovers.children.add(this.child);
    this.exited = new Promise((r) =>
      this.child.on('exit', (code, signal) => {
        leftovers.children.delete(this.child);
        this.running = false;
        const how = signal ? `signal ${signal}` : `code ${code}`;
        if (!this.stopping) opts.progress(`the server exited unexpectedly (${how})\n${this.tail()}`);
        r(how);
      }),
    );
    this.url = new Promise((resolveUrl, reject) => {
      for (const stream of [this.child.stdout!, this.child.stderr!]) {
        // Chunks split lines anywhere; keep the unfinished end for the next chunk.
        let partial = '';
        stream.on('data', (b: Buffer) => {
          const parts = (partial + b.toString()).split('\n');
          partial = parts.pop()!;
          for (const line of parts.filter(Boolean)) {
            if (opts.onLine?.(line)) continue;
            this.lines.push(line);
            // serve.ts prints "Cairn API on http://127.0.0.1:PORT (...)" on stderr once it listens.
            const m = /Cairn API on (http:\/\/[^\s]+:\d+)/.exec(line);
            if (m) resolveUrl(m[1]!);
          }
          this.lines.splice(0, Math.max(0, this.lines.length - TAIL_LINES));
        });
      }
      this.exited.then((how) =>
        reject(new Error(`the server exited before listening (${how})\n${this.tail()}`)),
      );
    });
  }

  get alive(): boolean {
    return this.running;
  }

  tail(): string {
    return this.lines.length === 0 ? '  | (no output)' : this.lines.map((l) => `  | ${l}`).join('\n');
  }

  /** SIGTERM (serve.ts closes the listener and the engine), SIGKILL if it overruns the deadline. */
  async stop(): Promise<{ graceful: boolean; how: string }> {
    this.stopping = true;
    this.child.kill('SIGTERM');
    const how = await Promise.race([this.exited, expiry(STOP_DEADLINE_MS)]);
    if (how !== null) return { graceful: true, how };
    this.child.kill('SIGKILL');
    return { graceful: false, how: await this.exited };
  }
}
