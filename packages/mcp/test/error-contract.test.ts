import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI as MAIN, type ServeProcess, startServe } from './serve-process.js';

// One error contract: the same bad search gets the same code, message and field from the HTTP API
// (`{"error": {...}}`), the CLI (`cairn search --queries`, one JSON line per query; `cairn: error [CODE]: message`
// on stderr for a single query) and the MCP tools (`[CODE] message (field: f)`). One table, three faces.

const KEY = 'contract-key-0123456789';

interface Case {
  name: string;
  request: Record<string, unknown>;
  code: string;
  field: string;
  /** The same request as mem_search arguments, when the tool takes it (the tool has no weights, say). */
  mcp?: Record<string, unknown>;
}

const CASES: Case[] = [
  {
    name: 'k below 1',
    request: { query: 'x', k: 0 },
    code: 'INVALID_INPUT',
    field: 'k',
    mcp: { query: 'x', k: 0 },
  },
  {
    name: 'k above the limit',
    request: { query: 'x', k: 5000 },
    code: 'INVALID_INPUT',
    field: 'k',
    mcp: { query: 'x', k: 5000 },
  },
  {
    name: 'a malformed namespace',
    request: { namespace: '-bad ns', query: 'x' },
    code: 'INVALID_INPUT',
    field: 'namespace',
    mcp: { namespace: '-bad ns', query: 'x' },
  },
  {
    name: 'a namespace the caller may not use',
    request: { namespace: 'secret', query: 'x' },
    code: 'FORBIDDEN_NAMESPACE',
    field: 'namespace',
    mcp: { namespace: 'secret', query: 'x' },
  },
  {
    name: 'a listing offset past its limit',
    request: { query: '', filters: { kinds: ['fact'] }, offset: 100_001 },
    code: 'INVALID_INPUT',
    field: 'offset',
    mcp: { query: '', kinds: ['fact'], offset: 100_001 },
  },
  { name: 'no query', request: {}, code: 'INVALID_INPUT', field: 'query', mcp: {} },
  {
    name: 'a query over 4,096 characters',
    request: { query: 'q'.repeat(4_097) },
    code: 'INVALID_INPUT',
    field: 'query',
    mcp: { query: 'q'.repeat(4_097) },
  },
  {
    name: 'a negative weight',
    request: { query: 'x', weights: { lexical: -1 } },
    code: 'INVALID_INPUT',
    field: 'weights.lexical',
  },
  {
    name: 'an unknown field',
    request: { query: 'x', bogus: 1 },
    code: 'INVALID_INPUT',
    field: 'bogus',
    mcp: { query: 'x', bogus: 1 },
  },
  {
    name: 'a decay that is no duration',
    request: { query: 'x', decay: 'fortnight' },
    code: 'INVALID_INPUT',
    field: 'decay',
  },
  {
    name: 'a date that is no date',
    request: { query: 'x', filters: { since: 'yesterdayish' } },
    code: 'INVALID_INPUT',
    field: 'filters.since',
    mcp: { query: 'x', since: 'yesterdayish' },
  },
  {
    name: 'an unknown explain level',
    request: { query: 'x', explain: 'everything' },
    code: 'INVALID_INPUT',
    field: 'explain',
  },
];

let dir: string;
let api: ServeProcess;
let url = '';
let mcp: Client;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'cairn-contract-'));
  const dataDir = join(dir, 'data');
  api = await startServe(['--data-dir', dataDir], { CAIRN_API_KEYS: `${KEY}=proj` });
  url = api.url;
  mcp = new Client({ name: 'contract', version: '0.0.0' });
  await mcp.connect(
    new StdioClientTransport({
      command: process.execPath,
      args: [MAIN, 'mcp', '--namespace', 'proj'],
      env: { PATH: process.env.PATH ?? '', CAIRN_API_URL: url, CAIRN_API_KEY: KEY },
      stderr: 'pipe',
    }),
  );
});

afterAll(async () => {
  await mcp?.close();
  await api?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('one error contract across HTTP, CLI and MCP', () => {
  it('answers every bad search with the same code, message and field on every face', async () => {
    const queries = CASES.map((c, i) => ({ id: String(i), namespace: 'proj', ...c.request }));
    const file = join(dir, 'queries.jsonl');
    writeFileSync(file, `${queries.map((q) => JSON.stringify(q)).join('\n')}\n`);
    // The CLI reads the folder beside the running server (as a follower), with every namespace allowed
    // locally: the FORBIDDEN case is HTTP's and MCP's alone.
    const cli = spawnSync(
      process.execPath,
      [MAIN, 'search', '--queries', file, '--data-dir', join(dir, 'data')],
      {
        encoding: 'utf8',
      },
    );
    expect(cli.status).toBe(3);
    const cliLines = new Map(
      cli.stdout
        .trim()
        .split('\n')
        .map(
          (l) => JSON.parse(l) as { id: string; error?: { code: string; message: string; field?: string } },
        )
        .map((l) => [l.id, l.error]),
    );

    for (const [i, c] of CASES.entries()) {
      const { id: _id, ...body } = queries[i]!;
      const res = await fetch(`${url}/v1/search`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}` },
        body: JSON.stringify(body),
      });
      const http = ((await res.json()) as { error: { code: string; message: string; field?: string } }).error;
      expect(http, c.name).toMatchObject({ code: c.code, field: c.field });
      expect(res.status, c.name).toBe(c.code === 'FORBIDDEN_NAMESPACE' ? 403 : 400);

      if (c.code !== 'FORBIDDEN_NAMESPACE') expect(cliLines.get(String(i)), `cli: ${c.name}`).toEqual(http);

      if (c.mcp) {
        const r = await mcp.callTool({ name: 'mem_search', arguments: c.mcp });
        expect(r.isError, c.name).toBe(true);
        const text = (r.content as Array<{ text: string }>)[0]!.text;
        expect(text, `mcp: ${c.name}`).toBe(`[${http.code}] ${http.message} (field: ${http.field})`);
        // Programs read the same error, whether the tool's schema or the backend refused the call.
        expect(r.structuredContent, `mcp: ${c.name}`).toEqual({ error: http });
      }
    }
  });

  it('a single CLI query reports the same message on stderr, the HTTP shape with --json, and exits 2', () => {
    const r = spawnSync(
      process.execPath,
      [MAIN, 'search', 'x', '-n', '-bad ns', '--json', '--data-dir', join(dir, 'data')],
      { encoding: 'utf8' },
    );
    expect(r.status).toBe(2);
    const body = JSON.parse(r.stdout) as { error: { code: string; message: string } };
    expect(body.error.code).toBe('INVALID_INPUT');
    expect(r.stderr).toContain(`cairn: error [INVALID_INPUT]: ${body.error.message}`);
  });
});
