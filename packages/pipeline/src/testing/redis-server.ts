import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';

export interface RedisServerOptions {
  /** Persist with an append-only file (what production runs with). @defaultValue false */
  appendonly: boolean;
  /** Data folder for the AOF; a fresh temporary folder when not given. */
  dir?: string;
}

/** A real redis-server started for tests on a free loopback port; `restart()` keeps its port and data folder. */
export interface RedisServer {
  readonly url: string;
  readonly port: number;
  readonly dir: string;
  /** Stops it: `SIGTERM` is a clean shutdown, `SIGKILL` a crash. */
  stop(signal?: 'SIGTERM' | 'SIGKILL'): Promise<void>;
  /** Starts it again on the same port, from the same folder. */
  start(): Promise<void>;
  /** Stops it and deletes its folder. */
  close(): Promise<void>;
}

const INSTALL_HINT =
  'redis-server was not found on PATH and REDIS_URL is not set. Install Redis (Debian/Ubuntu: `sudo apt-get install -y redis-server`; macOS: `brew install redis`) or point REDIS_URL at a Redis you may flush.';

export function redisServerBinary(): string | null {
  try {
    return execFileSync('sh', ['-c', 'command -v redis-server'], { encoding: 'utf8' }).trim() || null;
  } catch {
    return null;
  }
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      srv.close(() => resolve(typeof addr === 'object' && addr ? addr.port : 0));
    });
  });
}

async function waitForPing(url: string, child: ChildProcess, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`redis-server exited with code ${child.exitCode}`);
    const r = new Redis(url, {
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      enableOfflineQueue: false,
      retryStrategy: () => null,
    });
    r.on('error', () => {}); // a refused connect is reported by connect() below
    try {
      await r.connect();
      if ((await r.ping()) === 'PONG') return;
    } catch {
      // Not listening yet.
    } finally {
      r.disconnect();
    }
    if (Date.now() > deadline)
      throw new Error(`redis-server did not answer on ${url} within ${timeoutMs} ms`);
    await new Promise((res) => setTimeout(res, 50));
  }
}

/** Starts a private redis-server from PATH; throws with install instructions when there is none. */
export async function startRedisServer(opts: Partial<RedisServerOptions> = {}): Promise<RedisServer> {
  const bin = redisServerBinary();
  if (!bin) throw new Error(INSTALL_HINT);
  const port = await freePort();
  const dir = opts.dir ?? mkdtempSync(join(tmpdir(), 'cairn-redis-'));
  const url = `redis://127.0.0.1:${port}`;
  let child: ChildProcess | null = null;
  const start = async () => {
    const c = spawn(
      bin,
      [
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--dir',
        dir,
        '--save',
        '',
        '--appendonly',
        opts.appendonly ? 'yes' : 'no',
        '--appendfsync',
        'everysec',
        '--protected-mode',
        'no',
      ],
      { stdio: 'ignore' },
    );
    child = c;
    await waitForPing(url, c);
  };
  const stop = async (signal: 'SIGTERM' | 'SIGKILL' = 'SIGTERM') => {
    const c = child;
    child = null;
    if (!c || c.exitCode !== null) return;
    await new Promise<void>((res) => {
      c.once('exit', () => res());
      c.kill(signal);
    });
  };
  await start();
  return {
    url,
    port,
    dir,
    start,
    stop,
    close: async () => {
      await stop('SIGKILL');
      if (!opts.dir) rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * The Redis a test suite uses: a private redis-server when one is on PATH, else `REDIS_URL` (shared, so
 * tests must isolate themselves with a unique queue prefix). Fails, naming how to install Redis, when
 * neither is available.
 */
export async function redisForTests(): Promise<{
  url: string;
  server: RedisServer | null;
  close(): Promise<void>;
}> {
  if (redisServerBinary()) {
    const server = await startRedisServer();
    return { url: server.url, server, close: () => server.close() };
  }
  const url = process.env.REDIS_URL;
  if (!url) throw new Error(INSTALL_HINT);
  return { url, server: null, close: async () => {} };
}
