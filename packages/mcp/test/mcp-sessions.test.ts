import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterEach, describe, expect, it } from 'vitest';

// The real CLI as an agent runs it: the build must have run first (CI builds before it tests).
const CLI = resolve(import.meta.dirname, '../../../apps/cli/dist/main.js');

interface Session {
  name: string;
  client: Client;
  pid: number;
  stderr: () => string;
}

const sessions: Session[] = [];
let dataDir = '';
afterEach(async () => {
  for (const s of sessions.splice(0)) await s.client.close().catch(() => {});
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

async function startSession(name: string): Promise<Session> {
  let err = '';
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [CLI, 'mcp', '--data-dir', dataDir, '--namespace', 'team/app'],
    env: { CAIRN_LOG_LEVEL: 'info' },
    stderr: 'pipe',
  });
  transport.stderr?.on('data', (b: Buffer) => {
    err += b.toString();
  });
  const client = new Client({ name, version: '0.0.0' });
  await client.connect(transport);
  const s = { name, client, pid: transport.pid!, stderr: () => err };
  sessions.push(s);
  return s;
}

/** Saves `n` memories one after another; returns the ids acknowledged before the first failure. */
async function saveMany(s: Session, n: number, onSaved?: (count: number) => void): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    try {
      const r = await s.client.callTool({
        name: 'mem_save',
        arguments: { text: `${s.name} note ${i}: the deploy uses blue-green switching ${s.name}${i}` },
      });
      if (r.isError) throw new Error((r.content as Array<{ text: string }>)[0]!.text);
      ids.push(String((r.structuredContent as { id: string }).id));
      onSaved?.(ids.length);
    } catch (err) {
      if (s.name === 'A') return ids; // the writer is SIGKILLed mid-save: what it acknowledged counts
      throw new Error(`${s.name} save ${i} failed: ${(err as Error).message}\n${s.stderr()}`);
    }
  }
  return ids;
}

function stats(): { stored: number; embedded: number; pending: number } {
  const out = execFileSync(process.execPath, [CLI, 'stats', '--json', '--data-dir', dataDir], {
    encoding: 'utf8',
  });
  return (
    JSON.parse(out) as { namespaces: Record<string, { stored: number; embedded: number; pending: number }> }
  ).namespaces['team/app']!;
}

describe('several MCP sessions on one data folder', () => {
  it('all save concurrently; the writer SIGKILLed mid-save loses no acknowledged save, and another takes over', async () => {
    if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run the build before these tests`);
    dataDir = realpathSync(mkdtempSync(join(tmpdir(), 'cairn-sessions-')));
    const a = await startSession('A'); // first: holds the writer role
    const b = await startSession('B');
    const c = await startSession('C');

    let killed = false;
    const [ackA, ackB, ackC] = await Promise.all([
      saveMany(a, 40, (count) => {
        if (count === 8 && !killed) {
          killed = true;
          process.kill(a.pid, 'SIGKILL');
        }
      }),
      saveMany(b, 25),
      saveMany(c, 25),
    ]);
    expect(killed).toBe(true);
    expect(ackA.length).toBeGreaterThanOrEqual(8);
    expect(ackA.length).toBeLessThan(40);
    expect(ackB).toHaveLength(25);
    expect(ackC).toHaveLength(25);

    // Every acknowledged save is there exactly once, and every session sees the others'.
    const acknowledged = [...ackA, ...ackB, ...ackC];
    expect(new Set(acknowledged).size).toBe(acknowledged.length);
    for (const s of [b, c]) {
      const got = await s.client.callTool({ name: 'mem_get', arguments: { ids: acknowledged } });
      const data = got.structuredContent as { memories: Array<{ id: string }>; missing: string[] };
      expect(data.missing).toEqual([]);
      expect(data.memories.map((m) => m.id).sort()).toEqual([...acknowledged].sort());
    }
    const found = await b.client.callTool({
      name: 'mem_search',
      arguments: { query: 'C7 blue-green', k: 3 },
    });
    expect(JSON.stringify(found.structuredContent)).toContain('C note 7');

    // A follower takes the writer role over without a restart (within its 1 s refresh), then everything
    // gets embedded and indexed.
    for (let i = 0; i < 50 && !(b.stderr() + c.stderr()).includes('took over the writer role'); i++) {
      await new Promise((r) => setTimeout(r, 200));
    }
    expect(b.stderr() + c.stderr()).toContain('took over the writer role');
    let s = stats();
    for (let i = 0; i < 60 && !(s.pending === 0 && s.embedded === s.stored); i++) {
      await new Promise((r) => setTimeout(r, 500));
      s = stats();
    }
    expect(s.stored).toBeGreaterThanOrEqual(acknowledged.length);
    expect(s.stored).toBeLessThanOrEqual(40 + 25 + 25);
    expect(s).toMatchObject({ pending: 0, embedded: s.stored });
  }, 90_000);
});
