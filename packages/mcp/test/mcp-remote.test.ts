import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI, type ServeProcess, startServe } from './serve-process.js';

// `cairn mcp --api` in front of a real `cairn serve` on loopback: the tools go through the typed HTTP
// client, and the API key's namespaces are what the tools may use.

const KEY = 'mcp-test-key-0123456789';

describe('cairn mcp --api (remote mode)', () => {
  let dir: string;
  let api: ServeProcess;
  let client: Client;

  const call = async (name: string, args: Record<string, unknown>) => {
    const r = await client.callTool({ name, arguments: args });
    const text = (r.content as Array<{ text?: string }>).map((c) => c.text ?? '').join('\n');
    return {
      text,
      isError: r.isError === true,
      data: (r.structuredContent ?? {}) as Record<string, unknown>,
    };
  };

  let url = '';

  beforeAll(async () => {
    if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run the build before these tests`);
    dir = mkdtempSync(join(tmpdir(), 'cairn-mcp-remote-'));
    api = await startServe(['--data-dir', join(dir, 'data')], { CAIRN_API_KEYS: `${KEY}=team/*` });
    url = api.url;
    client = new Client({ name: 'remote-agent', version: '1.0.0' });
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [CLI, 'mcp', '--namespace', 'team/app'],
        // The environment fallbacks, as an MCP client config would set them.
        env: { CAIRN_API_URL: url, CAIRN_API_KEY: KEY },
        stderr: 'pipe',
      }),
    );
  });

  afterAll(async () => {
    await client?.close();
    await api?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('saves, searches, walks the timeline, fetches and packs through the HTTP API', async () => {
    const a = await call('mem_save', {
      text: 'The API gateway retries idempotent requests twice.',
      session: 's',
    });
    expect(a.isError, a.text).toBe(false);
    const b = await call('mem_save', {
      text: 'Non-idempotent requests are never retried by the gateway.',
      session: 's',
    });
    expect(b.data).toMatchObject({ namespace: 'team/app', status: 'stored', durable: true });

    const found = await call('mem_search', { query: 'gateway retries idempotent', max_tokens: 500 });
    expect(found.isError, found.text).toBe(false);
    const hits = found.data.hits as Array<{ id: string; tokens: number }>;
    expect(hits.map((h) => h.id)).toContain(a.data.id);
    expect(hits.every((h) => h.tokens > 0)).toBe(true);

    const t = await call('mem_timeline', { anchor: a.data.id, after: 3 });
    expect(t.isError, t.text).toBe(false);
    expect((t.data.after as Array<{ id: string }>).map((e) => e.id)).toEqual([b.data.id]);

    const got = await call('mem_get', { ids: [b.data.id] });
    expect(got.text).toContain('never retried by the gateway');
    expect((got.data.memories as Array<{ agent: string }>)[0]!.agent).toBe('remote-agent');

    const pack = await call('mem_context', { query: 'gateway retries', max_tokens: 200 });
    expect(pack.text).toContain('gateway');
    expect((pack.data.tokens as { used: number }).used).toBeLessThanOrEqual(200);
  });

  it('passes on the server’s refusals: a namespace outside the key is FORBIDDEN_NAMESPACE', async () => {
    const r = await call('mem_search', { query: 'anything', namespace: 'other/secret' });
    expect(r.isError).toBe(true);
    expect(r.text).toMatch(/^\[FORBIDDEN_NAMESPACE\] /);
    const bad = await call('mem_get', { ids: [] });
    expect(bad.isError).toBe(true);
    expect(bad.text).toMatch(/^\[INVALID_INPUT\] .*ids/);
  });

  it('a derived namespace meets a key scoped to team/* through CAIRN_NAMESPACE_PREFIX', async () => {
    const repo = join(dir, 'checkout');
    const git = (...args: string[]) => execFileSync('git', args, { cwd: repo, stdio: 'ignore' });
    mkdirSync(repo);
    git('init', '-q');
    git('remote', 'add', 'origin', 'git@github.com:acme/api.git');
    const start = async (env: Record<string, string>) => {
      const c = new Client({ name: 'prefixed-agent', version: '1.0.0' });
      await c.connect(
        new StdioClientTransport({
          command: process.execPath,
          args: [CLI, 'mcp'],
          cwd: repo,
          env: { PATH: process.env.PATH ?? '', CAIRN_API_URL: url, CAIRN_API_KEY: KEY, ...env },
          stderr: 'pipe',
        }),
      );
      return c;
    };
    const plain = await start({});
    const refused = await plain.callTool({ name: 'mem_save', arguments: { text: 'no prefix' } });
    expect(refused.isError).toBe(true);
    expect(JSON.stringify(refused.content)).toContain('FORBIDDEN_NAMESPACE');
    await plain.close();
    const prefixed = await start({ CAIRN_NAMESPACE_PREFIX: 'team/' });
    const saved = await prefixed.callTool({
      name: 'mem_save',
      arguments: { text: 'saved under the team prefix' },
    });
    expect(saved.isError, JSON.stringify(saved.content)).toBeFalsy();
    expect(saved.structuredContent).toMatchObject({ namespace: 'team/repo/github.com/acme/api' });
    await prefixed.close();
  });
});
