import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// The installable package, as a user gets it: scripts/pack-cli.mjs writes cairn-<version>.tgz, and
// `npm i -g --offline` installs it into a temporary prefix with no registry at hand; then `cairn serve --demo`
// and `cairn mcp` run from that install.

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
let dir: string;
let bin: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'cairn-pack-test-'));
  const pack = spawnSync(process.execPath, [join(ROOT, 'scripts', 'pack-cli.mjs'), join(dir, 'out')], {
    encoding: 'utf8',
  });
  if (pack.status !== 0) throw new Error(`pack failed: ${pack.stderr}`);
  const tarball = pack.stdout.trim();
  expect(tarball).toMatch(/cairn-\d+\.\d+\.\d+\.tgz$/);
  const prefix = join(dir, 'prefix');
  const install = spawnSync(
    'npm',
    ['install', '--global', '--offline', '--no-audit', '--no-fund', '--prefix', prefix, tarball],
    { encoding: 'utf8', cwd: dir, env: { ...process.env, npm_config_cache: join(dir, 'npm-cache') } },
  );
  if (install.status !== 0) throw new Error(`npm install failed: ${install.stderr}`);
  bin = join(prefix, 'bin', 'cairn');
}, 600_000);

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('the packed cairn command, installed offline', () => {
  it('runs --version, and cairn serve --demo answers a search', async () => {
    expect(spawnSync(bin, ['--version'], { encoding: 'utf8' }).stdout.trim()).toMatch(/^\d+\.\d+\.\d+$/);
    const serve = spawn(
      bin,
      ['serve', '--demo', '--no-auth', '--port', '0', '--data-dir', join(dir, 'data')],
      {
        stdio: ['ignore', 'ignore', 'pipe'],
      },
    );
    try {
      let err = '';
      const url = await new Promise<string>((ok, fail) => {
        serve.stderr!.on('data', (d) => {
          err += d;
          const m = /Cairn API on (http:\/\/\S+)/.exec(err);
          if (m) ok(m[1]!);
        });
        serve.on('exit', (code) => fail(new Error(`serve exited ${code}: ${err}`)));
      });
      const res = await fetch(`${url}/v1/search`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ namespace: 'demo/acme-api', query: 'why did the auth middleware crash?' }),
      });
      expect(res.status).toBe(200);
      const body = (await res.json()) as { hits: Array<{ id: string }> };
      expect(body.hits[0]!.id).toBe('mem-010');
      // The packed copy carries the web explorer and says where it is served.
      expect(err).toMatch(/Cairn explorer on http:\/\/\S+\/ui/);
      const page = await fetch(`${url}/ui/`);
      expect(page.status).toBe(200);
      expect(await page.text()).toMatch(/<html/i);
    } finally {
      const exited = once(serve, 'exit');
      serve.kill('SIGTERM');
      await exited;
    }
  }, 120_000);

  it('cairn mcp answers the MCP handshake and lists its tools over stdio', async () => {
    const mcp = spawn(bin, ['mcp', '--namespace', 'demo/x', '--data-dir', join(dir, 'mcp-data')], {
      stdio: ['pipe', 'pipe', 'ignore'],
    });
    const replies: Array<{ id: number; result?: { tools?: Array<{ name: string }> } }> = [];
    let buffer = '';
    mcp.stdout!.on('data', (d) => {
      buffer += d;
      for (let nl = buffer.indexOf('\n'); nl >= 0; nl = buffer.indexOf('\n')) {
        replies.push(JSON.parse(buffer.slice(0, nl)));
        buffer = buffer.slice(nl + 1);
      }
    });
    const send = (m: object) => mcp.stdin!.write(`${JSON.stringify({ jsonrpc: '2.0', ...m })}\n`);
    send({
      id: 1,
      method: 'initialize',
      params: {
        protocolVersion: '2025-06-18',
        capabilities: {},
        clientInfo: { name: 'pack-test', version: '0' },
      },
    });
    send({ method: 'notifications/initialized' });
    send({ id: 2, method: 'tools/list' });
    for (let i = 0; i < 200 && !replies.some((r) => r.id === 2); i++)
      await new Promise((r) => setTimeout(r, 50));
    const exited = once(mcp, 'exit');
    mcp.stdin!.end();
    await exited;
    const tools = replies
      .find((r) => r.id === 2)
      ?.result?.tools?.map((t) => t.name)
      .sort();
    expect(tools).toEqual(['mem_context', 'mem_get', 'mem_save', 'mem_search', 'mem_timeline']);
  }, 60_000);
});
