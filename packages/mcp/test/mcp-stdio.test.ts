import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// The real CLI as an agent runs it: the build must have run first (CI builds before it tests).
const CLI = resolve(import.meta.dirname, '../../../apps/cli/dist/main.js');

interface ToolText {
  text: string;
  isError: boolean;
  data: Record<string, unknown>;
}

describe('cairn mcp over stdio', () => {
  let dataDir: string;
  let client: Client;
  let stderr = '';

  const call = async (name: string, args: Record<string, unknown>): Promise<ToolText> => {
    const res = await client.callTool({ name, arguments: args });
    const content = res.content as Array<{ type: string; text?: string }>;
    return {
      text: content.map((c) => c.text ?? '').join('\n'),
      isError: res.isError === true,
      data: (res.structuredContent ?? {}) as Record<string, unknown>,
    };
  };
  const ok = async (name: string, args: Record<string, unknown>) => {
    const r = await call(name, args);
    expect(r.isError, `${name} failed: ${r.text}\nserver stderr:\n${stderr}`).toBe(false);
    return r;
  };

  beforeAll(async () => {
    if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run the build before these tests`);
    dataDir = realpathSync(mkdtempSync(join(tmpdir(), 'cairn-mcp-')));
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [CLI, 'mcp', '--data-dir', dataDir, '--namespace', 'test/ns'],
      env: { CAIRN_LOG_LEVEL: 'info' },
      stderr: 'pipe',
    });
    transport.stderr?.on('data', (b: Buffer) => {
      stderr += b.toString();
    });
    client = new Client({ name: 'cairn-test', version: '0.0.0' });
    await client.connect(transport);
  });

  afterAll(async () => {
    await client?.close();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it('lists the five tools, each explaining the search → timeline → get workflow', async () => {
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual([
      'mem_context',
      'mem_get',
      'mem_save',
      'mem_search',
      'mem_timeline',
    ]);
    for (const t of tools) {
      expect(t.description).toContain('mem_search');
      expect(t.description).toContain('mem_timeline');
      expect(t.description).toContain('mem_get');
      expect(t.description).toContain('max_tokens');
      expect(t.description).toMatch(/tok/);
    }
    const get = tools.find((t) => t.name === 'mem_get')!;
    expect(get.inputSchema.required).toEqual(['ids']);
    expect(client.getInstructions()).toContain('test/ns');
  });

  const saved: Record<string, string> = {};

  it('saves memories, two in one session, and replaces a fact saved again under its slot and key', async () => {
    const first = await ok('mem_save', {
      text: 'The flaky checkout test was caused by a shared Redis database between workers; each worker now uses its own db index.',
      title: 'Fix: flaky checkout test',
      session: 'sess-1',
      tags: ['tests', 'redis'],
    });
    expect(first.data).toMatchObject({ namespace: 'test/ns', status: 'stored', durable: true });
    expect(first.text).toContain(`stored [${first.data.id}]`);
    saved.fix = String(first.data.id);

    const second = await ok('mem_save', {
      text: 'Decided to keep the payment webhooks idempotent by storing the provider event id with a unique index.',
      session: 'sess-1',
      kind: 'observation',
    });
    saved.webhooks = String(second.data.id);

    const summary = await ok('mem_save', {
      text: 'Session 1: fixed the flaky checkout test and made payment webhooks idempotent.',
      kind: 'summary',
      session: 'sess-1',
    });
    saved.summary = String(summary.data.id);

    const again = await ok('mem_save', {
      text: 'The flaky checkout test was caused by a shared Redis database between workers; each worker now uses its own db index.',
      title: 'Fix: flaky checkout test',
      session: 'sess-1',
      tags: ['tests', 'redis'],
    });
    expect(again.data).toMatchObject({ id: saved.fix, status: 'unchanged' });

    const fact = await ok('mem_save', {
      text: 'Run tests with pnpm test',
      slot: 'build',
      key: 'test-command',
    });
    expect(fact.data).toMatchObject({ id: 'fact:build:test-command', status: 'stored' });
    const replaced = await ok('mem_save', {
      text: 'Run tests with pnpm vitest run',
      slot: 'build',
      key: 'test-command',
    });
    expect(replaced.data).toMatchObject({ id: 'fact:build:test-command', status: 'updated' });
    const got = await ok('mem_get', { ids: ['fact:build:test-command'] });
    expect(got.text).toContain('pnpm vitest run');
    expect(got.text).not.toContain('pnpm test\n');
    const memories = got.data.memories as Array<{ kind: string; text: string }>;
    expect(memories).toHaveLength(1);
    expect(memories[0]).toMatchObject({ kind: 'fact', text: 'Run tests with pnpm vitest run' });
  });

  it('mem_search returns the compact index with each hit’s token count', async () => {
    const r = await ok('mem_search', { query: 'flaky checkout test redis' });
    const hits = r.data.hits as Array<{ id: string; tokens: number; title: string; explain?: unknown }>;
    const hit = hits.find((h) => h.id === saved.fix);
    expect(hit).toBeDefined();
    expect(hit!.tokens).toBeGreaterThan(10);
    expect(hit!.title).toBe('Fix: flaky checkout test');
    expect(hit!.explain).toBeUndefined();
    expect(r.text).toContain(`[${saved.fix}]`);
    expect(r.text).toContain(`— ${hit!.tokens} tok`);
    expect(r.text).not.toContain('shared Redis database'); // the index, not the memory
    const tokens = r.data.tokens as { used: number; budget: number | null };
    expect(tokens.used).toBeGreaterThan(0);
    expect(tokens.budget).toBeNull();

    const capped = await ok('mem_search', { query: 'checkout webhooks test', max_tokens: 40 });
    const usage = capped.data.tokens as { used: number; budget: number; omitted: number };
    expect(usage.budget).toBe(40);
    expect(usage.used).toBeLessThanOrEqual(40);

    const facts = await ok('mem_search', { query: 'tests', kinds: ['fact'] });
    expect((facts.data.hits as Array<{ id: string }>).map((h) => h.id)).toEqual(['fact:build:test-command']);

    // An empty query with a filter lists what passes it, newest first.
    const listed = await ok('mem_search', { query: '', kinds: ['fact'] });
    expect(listed.data.listing).toEqual({ offset: 0, next: 1 });
    expect((listed.data.hits as Array<{ id: string }>).map((h) => h.id)).toEqual(['fact:build:test-command']);
    expect(listed.text).toContain('passing the filters');
    const beyond = await ok('mem_search', { query: '', kinds: ['fact'], offset: 1 });
    expect(beyond.data.hits).toEqual([]);
  });

  it('mem_timeline shows the memories around an anchor within its session', async () => {
    const r = await ok('mem_timeline', { anchor: saved.fix, before: 2, after: 2 });
    expect(r.data.scope).toBe('session');
    expect((r.data.anchor as { id: string }).id).toBe(saved.fix);
    const after = (r.data.after as Array<{ id: string }>).map((e) => e.id);
    expect(after).toContain(saved.webhooks);
    expect(r.text).toContain(`> [${saved.fix}]`);
    expect(r.text).toContain(`- [${saved.webhooks}]`);

    const byQuery = await ok('mem_timeline', { query: 'provider event id unique index' });
    expect((byQuery.data.anchor as { id: string }).id).toBe(saved.webhooks);
  });

  it('mem_get returns the full records', async () => {
    const r = await ok('mem_get', { ids: [saved.fix, saved.webhooks, 'm_nope'] });
    expect(r.text).toContain('each worker now uses its own db index');
    expect(r.text).toContain('provider event id with a unique index');
    expect(r.text).toContain('not found: m_nope');
    expect(r.data.missing).toEqual(['m_nope']);
    const memories = r.data.memories as Array<{ id: string; session: string; tags: string[] }>;
    expect(memories.find((m) => m.id === saved.fix)).toMatchObject({
      session: 'sess-1',
      tags: ['tests', 'redis'],
    });
  });

  it('mem_context returns a session-start pack within max_tokens', async () => {
    const r = await ok('mem_context', { query: 'payment webhooks', max_tokens: 300 });
    expect(r.text).toContain('Memory context: test/ns');
    expect(r.text).toContain('Session 1: fixed the flaky checkout test');
    expect(r.text).toContain(saved.webhooks);
    const tokens = r.data.tokens as { used: number; budget: number };
    expect(tokens.budget).toBe(300);
    expect(tokens.used).toBeGreaterThan(0);
    expect(tokens.used).toBeLessThanOrEqual(300);

    const excluded = await ok('mem_context', {
      query: 'payment webhooks',
      exclude_ids: [saved.webhooks],
      format: 'text',
    });
    expect(excluded.data.included).not.toContain(saved.webhooks);

    // Too small for anything, even the line saying so: refused by name rather than answered over it.
    const tiny = await call('mem_context', { query: 'payment webhooks', max_tokens: 5 });
    expect(tiny.isError).toBe(true);
    expect(tiny.data.error).toMatchObject({ code: 'INVALID_INPUT', field: 'max_tokens' });
    const least = Number(/at least (\d+)/.exec(tiny.text)![1]);
    const small = await ok('mem_context', { query: 'payment webhooks', max_tokens: least });
    expect((small.data.tokens as { omitted: number }).omitted).toBeGreaterThan(0);
    expect(small.text).toMatch(/^Nothing fits in max_tokens \(\d+ of \d+ tokens, \d+ omitted/);
  });

  it('keeps namespaces apart, with a per-call namespace override', async () => {
    const other = await ok('mem_save', {
      text: 'Only in the other namespace: zebra crossing',
      namespace: 'test/other',
    });
    expect(other.data.namespace).toBe('test/other');
    const here = await ok('mem_search', { query: 'zebra crossing' });
    expect(here.data.hits).toEqual([]);
    const there = await ok('mem_search', { query: 'zebra crossing', namespace: 'test/other' });
    expect((there.data.hits as Array<{ id: string }>).map((h) => h.id)).toEqual([other.data.id]);
  });

  it('answers bad calls with tool errors naming the code and field, and keeps serving', async () => {
    const empty = await call('mem_get', { ids: [] });
    expect(empty.isError).toBe(true);
    expect(empty.text).toMatch(/^\[INVALID_INPUT\] ids: .*\(field: ids\)$/);
    expect(empty.data).toMatchObject({ error: { code: 'INVALID_INPUT', field: 'ids' } });

    const missing = await call('mem_timeline', { anchor: 'm_does_not_exist' });
    expect(missing.isError).toBe(true);
    expect(missing.text).toContain('[NOT_FOUND]');

    const neither = await call('mem_timeline', {});
    expect(neither.isError).toBe(true);
    expect(neither.text).toContain('give anchor');

    const badNs = await call('mem_search', { query: 'x', namespace: '../etc' });
    expect(badNs.isError).toBe(true);
    expect(badNs.text).toContain('[INVALID_INPUT]');

    const halfFact = await call('mem_save', { text: 'x', slot: 'only-slot' });
    expect(halfFact.isError).toBe(true);
    expect(halfFact.text).toContain('a fact needs both slot and key');

    // Refused by the tool's schema, answered in the shape every other failure has, for programs too.
    const wrongType = await call('mem_get', { ids: 'not-a-list' });
    expect(wrongType.isError).toBe(true);
    expect(wrongType.text).toBe('[INVALID_INPUT] ids must be array, got string (field: ids)');
    expect(wrongType.data.error).toMatchObject({ code: 'INVALID_INPUT', field: 'ids' });
    const tooImportant = await call('mem_save', { text: 'x', importance: 2 });
    expect(tooImportant.text).toBe('[INVALID_INPUT] importance must be in [0, 1] (field: importance)');
    const negative = await call('mem_timeline', { anchor: 'x', before: -5 });
    expect(negative.data.error).toMatchObject({ code: 'INVALID_INPUT', field: 'before' });
    const noSuchTool = await call('mem_forget', { id: 'x' });
    expect(noSuchTool.isError).toBe(true);
    expect(noSuchTool.data.error).toMatchObject({ code: 'INVALID_INPUT', field: 'name' });

    // A misspelt argument is refused by name, never dropped: the memory is not saved without its tags,
    // and a search is not answered unfiltered.
    const typo = await call('mem_save', { text: 'typo test memory', tag: ['important'] });
    expect(typo.isError).toBe(true);
    expect(typo.text).toMatch(/unknown field\(s\): tag\b/);
    const typoSearch = await call('mem_search', { query: 'typo test memory', kind: ['fact'] });
    expect(typoSearch.isError).toBe(true);
    expect(typoSearch.text).toMatch(/unknown field\(s\): kind\b/);
    const none = await ok('mem_search', { query: 'typo test memory' });
    expect((none.data.hits as Array<{ title: string }>).map((h) => h.title)).not.toContain(
      'typo test memory',
    );

    const still = await ok('mem_search', { query: 'flaky checkout' });
    expect((still.data.hits as Array<{ id: string }>).map((h) => h.id)).toContain(saved.fix);
  });
});

/** Runs `cairn mcp` directly, to see its exit and every byte it writes to stdout. */
function runCli(args: string[], opts: { cwd: string }) {
  const child = spawn(process.execPath, [CLI, 'mcp', ...args], {
    cwd: opts.cwd,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', CAIRN_LOG_LEVEL: 'debug' },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (b: Buffer) => {
    stdout += b.toString();
  });
  child.stderr.on('data', (b: Buffer) => {
    stderr += b.toString();
  });
  const exited = new Promise<number | null>((r) => child.on('close', (code) => r(code)));
  return { child, exited, out: () => ({ stdout, stderr }) };
}

describe('cairn mcp process', () => {
  const dirs: string[] = [];
  const tmp = () => {
    const d = realpathSync(mkdtempSync(join(tmpdir(), 'cairn-mcp-proc-')));
    dirs.push(d);
    return d;
  };
  afterAll(() => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it('writes only protocol messages to stdout and exits 0 when the client closes stdin', async () => {
    const dir = tmp();
    const p = runCli(['--data-dir', join(dir, 'data'), '--namespace', 'test/ns'], { cwd: dir });
    const send = (m: unknown) => p.child.stdin.write(`${JSON.stringify(m)}\n`);
    const replies = new Promise<void>((r) => {
      p.child.stdout.on('data', () => {
        if (p.out().stdout.split('\n').filter(Boolean).length >= 2) r();
      });
    });
    send({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
    });
    send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    send({
      jsonrpc: '2.0',
      id: 2,
      method: 'tools/call',
      params: { name: 'mem_save', arguments: { text: 'hello from the process test' } },
    });
    await replies;
    p.child.stdin.end();
    expect(await p.exited).toBe(0);
    const { stdout, stderr } = p.out();
    const lines = stdout.split('\n').filter(Boolean);
    for (const line of lines) expect(JSON.parse(line)).toMatchObject({ jsonrpc: '2.0' });
    expect(lines.map((l) => JSON.parse(l).id)).toEqual([1, 2]);
    // Debug logs were on, and all of them went to stderr.
    expect(stderr).toContain('serving on stdio');
  });

  it('starts outside a git repository in a namespace derived from the folder, and says so in mem_context', async () => {
    const dir = tmp();
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [CLI, 'mcp', '--data-dir', join(dir, 'data')],
      cwd: dir,
      env: { CAIRN_LOG_LEVEL: 'warn' },
      stderr: 'pipe',
    });
    const client = new Client({ name: 'cairn-test', version: '0.0.0' });
    await client.connect(transport);
    try {
      const save = await client.callTool({
        name: 'mem_save',
        arguments: { text: 'the staging deploy needs REDIS_URL', kind: 'fact' },
      });
      expect(save.isError).not.toBe(true);
      const namespace = (save.structuredContent as { namespace?: string }).namespace;
      expect(namespace).toMatch(new RegExp(`^dir/${basename(dir)}-[0-9a-f]{8}$`));
      const context = await client.callTool({ name: 'mem_context', arguments: { query: 'staging deploy' } });
      const text = (context.content as Array<{ text?: string }>).map((c) => c.text ?? '').join('\n');
      expect(text).toContain(`Memories go to namespace ${namespace}, derived from this folder`);
      expect(text).toContain('--namespace');
      expect(text).toContain('REDIS_URL');
    } finally {
      await client.close();
    }
  });

  it('serves a remote API with --api, answering an unreachable one with BACKEND_UNAVAILABLE tool errors', async () => {
    const client = new Client({ name: 'cairn-test', version: '0.0.0' });
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        // Port 1 on loopback: nothing listens there, so every request is refused at once.
        args: [CLI, 'mcp', '--api', 'http://127.0.0.1:1', '--api-key', 'k', '--namespace', 'test/ns'],
        stderr: 'pipe',
      }),
    );
    try {
      for (const attempt of [1, 2]) {
        const r = await client.callTool({ name: 'mem_search', arguments: { query: `q${attempt}` } });
        expect(r.isError).toBe(true);
        expect((r.content as Array<{ text: string }>)[0]!.text).toContain(
          '[BACKEND_UNAVAILABLE] Cairn API at http://127.0.0.1:1 did not answer',
        );
      }
    } finally {
      await client.close();
    }
  });

  it('refuses --data-dir together with --api', async () => {
    const dir = tmp();
    const p = runCli(['-n', 'a/b', '--data-dir', dir, '--api', 'http://127.0.0.1:1'], {
      cwd: dir,
    });
    expect(await p.exited).toBe(2);
    expect(p.out().stderr).toContain('not both');
  });
});
