import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const LOGGER = fileURLToPath(new URL('../dist/logger.js', import.meta.url));

/** Runs `body` in a fresh process with `createLogger` imported; returns its stdout and stderr. */
function run(body: string) {
  const script = `
    import { createRequire } from 'node:module';
    import { createLogger } from ${JSON.stringify(LOGGER)};
    const pinoLoaded = () => Object.keys(createRequire(import.meta.url).cache).some((k) => /[\\\\/]pino[\\\\/]/.test(k));
    ${body}`;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
    encoding: 'utf8',
    timeout: 30_000,
  });
  expect(r.status, r.stderr).toBe(0);
  return { stdout: r.stdout, stderr: r.stderr };
}

describe('createLogger', () => {
  it('loads pino with the first line at or above its level, and writes pino lines to stderr only', () => {
    const { stdout, stderr } = run(`
      const log = createLogger('warn');
      log.info({ n: 1 }, 'below the level');
      log.debug({}, 'below too');
      const before = pinoLoaded();
      log.warn({ n: 2 }, 'at the level');
      log.error({ n: 3 }, 'above it');
      console.log(JSON.stringify({ before, after: pinoLoaded() }));`);
    expect(JSON.parse(stdout)).toEqual({ before: false, after: true });
    const lines = stderr
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines).toEqual([
      expect.objectContaining({ level: 40, n: 2, msg: 'at the level' }),
      expect.objectContaining({ level: 50, n: 3, msg: 'above it' }),
    ]);
  });

  it('logs nothing and loads nothing when silent', () => {
    const { stdout, stderr } = run(`
      const log = createLogger('silent');
      log.fatal({}, 'never');
      console.log(JSON.stringify({ loaded: pinoLoaded() }));`);
    expect(JSON.parse(stdout)).toEqual({ loaded: false });
    expect(stderr).toBe('');
  });
});
