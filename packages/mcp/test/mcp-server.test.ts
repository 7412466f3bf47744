import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CairnError } from '@cairn/core';
import { CairnEngine } from '@cairn/engine';
import { MemoryService, NamespaceAccess } from '@cairn/service';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { afterEach, describe, expect, it } from 'vitest';
import { createCairnMcpServer, type McpLog } from '../src/index.js';

/** The server in-process over a real engine and service, with a caller limited to `access`. */
async function connect(access: NamespaceAccess, log?: McpLog) {
  const dir = mkdtempSync(join(tmpdir(), 'cairn-mcp-server-'));
  const engine = await CairnEngine.open({ dataDir: dir, persistIntervalMs: 0, useWorkerThreads: false });
  const api = new MemoryService({ engine }).scoped(access);
  const server = createCairnMcpServer(api, { namespace: 'team/app', ...(log ? { log } : {}) });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  const client = new Client({ name: 'in-process-agent', version: '1.0.0' });
  await client.connect(clientSide);
  const call = async (name: string, args: Record<string, unknown>) => {
    const r = await client.callTool({ name, arguments: args });
    const text = (r.content as Array<{ text?: string }>).map((c) => c.text ?? '').join('\n');
    return {
      text,
      isError: r.isError === true,
      data: (r.structuredContent ?? {}) as Record<string, unknown>,
    };
  };
  opened.push(async () => {
    await client.close();
    await server.close();
    await engine.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return { call, engine, client };
}

const opened: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of opened.splice(0)) await close();
});

describe('createCairnMcpServer', () => {
  it('refuses an invalid default namespace', () => {
    const api = {} as never;
    expect(() => createCairnMcpServer(api, { namespace: '-bad ns' })).toThrow(CairnError);
  });

  it('leaves access to the backend: a namespace the caller may not use is a FORBIDDEN_NAMESPACE tool error', async () => {
    const { call } = await connect(NamespaceAccess.of(['team/*']));
    const saved = await call('mem_save', { text: 'allowed here' });
    expect(saved.isError).toBe(false);
    const denied = await call('mem_search', { query: 'anything', namespace: 'other/secret' });
    expect(denied.isError).toBe(true);
    expect(denied.text).toBe(
      '[FORBIDDEN_NAMESPACE] this key may not use namespace "other/secret" (field: namespace)',
    );
    const deniedSave = await call('mem_save', { text: 'x', namespace: 'other/secret' });
    expect(deniedSave.isError).toBe(true);
    expect(deniedSave.text).toContain('FORBIDDEN_NAMESPACE');
  });

  it('tells the agent when nothing relevant was found, and what no memory says', async () => {
    const { call } = await connect(NamespaceAccess.everything());
    await call('mem_save', { text: 'We chose Postgres for the billing service' });
    await call('mem_save', { text: 'The billing service deploys on Fridays' });
    const found = await call('mem_search', { query: 'is billing on Postgres?' });
    expect(found.data.relevance).toMatchObject({ level: 'relevant' });
    expect(found.text).not.toContain('no relevant memory');
    // The built-in embedder knows words, not that Postgres is a database: a partial match, said so.
    const weak = await call('mem_search', { query: 'which database for billing?' });
    expect(weak.data.relevance).toMatchObject({ level: 'weak', missing: ['database'] });
    expect(weak.text).toContain('(weak matches only: nothing says database)');
    const none = await call('mem_search', { query: 'favourite colour of the user' });
    expect(none.data.relevance).toMatchObject({ level: 'none' });
    if ((none.data.hits as unknown[]).length > 0) {
      expect(none.text).toContain(
        '(no relevant memory: the best hits share little with the query; nothing says',
      );
    }
  });

  it('records the connected client as the agent of what it saves', async () => {
    const { call } = await connect(NamespaceAccess.everything());
    const saved = await call('mem_save', { text: 'saved by the in-process agent' });
    const got = await call('mem_get', { ids: [saved.data.id] });
    expect((got.data.memories as Array<{ agent: string }>)[0]!.agent).toBe('in-process-agent');
  });

  it('saves named fields, finds the memory by one, and shows them with the record', async () => {
    const { call } = await connect(NamespaceAccess.everything());
    const saved = await call('mem_save', {
      text: 'Moved the cron to 02:00',
      fields: { reason: 'the nightly backup saturated the disk at midnight' },
    });
    const found = await call('mem_search', { query: 'why the backup saturated the disk' });
    expect(found.text).toContain(String(saved.data.id));
    const got = await call('mem_get', { ids: [saved.data.id] });
    expect(got.text).toContain('reason: the nightly backup saturated the disk at midnight');
    const bad = await call('mem_save', { text: 'x', fields: { text: 'y' } });
    expect(bad.isError).toBe(true);
    expect(bad.text).toContain('[INVALID_INPUT]');
    expect(bad.text).toContain('fields.text');
  });

  it('mem_save says what saving the same text again does, and does it: unchanged, or updated into the new session', async () => {
    const { call, client } = await connect(NamespaceAccess.everything());
    const { tools } = await client.listTools();
    const description = tools.find((t) => t.name === 'mem_save')!.description!;
    // It said "Saving the same text again changes nothing", and the memory then left its session.
    expect(description).not.toContain('changes nothing');
    expect(description).toContain('unchanged when nothing else differs');
    expect(description).toContain('leaves its first session');
    const text = 'Chose SQLite FTS5 for the lexical leg';
    const first = await call('mem_save', { text, session: 'sess-1' });
    expect(first.data).toMatchObject({ status: 'stored' });
    expect((await call('mem_save', { text, session: 'sess-1' })).data).toMatchObject({
      id: first.data.id,
      status: 'unchanged',
    });
    const moved = await call('mem_save', { text, session: 'sess-2', tags: ['search'] });
    expect(moved.data).toMatchObject({ id: first.data.id, status: 'updated' });
    const got = await call('mem_get', { ids: [first.data.id] });
    expect((got.data.memories as Array<{ session: string; tags: string[] }>)[0]).toMatchObject({
      session: 'sess-2',
      tags: ['search'],
    });
    const left = await call('mem_search', { query: '', sessions: ['sess-1'] });
    expect(left.data.hits).toEqual([]);
  });

  it('reports an unexpected backend failure as an INTERNAL tool error and logs it', async () => {
    const logged: Array<{ level: string; msg: string }> = [];
    const { call, engine } = await connect(NamespaceAccess.everything(), (level, msg) => {
      logged.push({ level, msg });
    });
    await engine.close();
    const r = await call('mem_get', { ids: ['m_x'] });
    expect(r.isError).toBe(true);
    expect(r.text).toMatch(/^\[INTERNAL\] /);
    expect(logged).toEqual([{ level: 'error', msg: 'mem_get failed' }]);
  });
});
