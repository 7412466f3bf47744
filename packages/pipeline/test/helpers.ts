import { afterAll, beforeAll } from 'vitest';
import { type RedisServer, startRedisServer } from '../src/testing/index.js';

/**
 * A private redis-server for one test file: started before its tests, killed (and its folder deleted)
 * after them. Tests isolate themselves from each other with unique key or queue prefixes.
 */
export function useRedisServer(): { readonly url: string } {
  let server: RedisServer | null = null;
  beforeAll(async () => {
    server = await startRedisServer();
  });
  afterAll(async () => {
    await server?.close();
    server = null;
  });
  return {
    get url() {
      if (!server) throw new Error('redis-server is not running (used outside a test?)');
      return server.url;
    },
  };
}

/** Polls `check` until it returns true; the test's own timeout is the limit (no timing assertions). */
export async function eventually(check: () => boolean | Promise<boolean>, intervalMs = 20): Promise<void> {
  for (;;) {
    if (await check()) return;
    await sleep(intervalMs);
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
