import { existsSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { countTokens } from '@cairn/service';
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

// What a tool returns is measured as the model receives it: the whole text, counted with o200k (the
// tokenizer Cairn's budgets use). Started outside a git repository and without --namespace, so
// mem_context opens with the note saying where memories go.
describe('cairn mcp keeps every answer within max_tokens', () => {
  let dir: string;
  let client: Client;
  const ids: string[] = [];

  const call = async (name: string, args: Record<string, unknown>): Promise<ToolText> => {
    const res = await client.callTool({ name, arguments: args });
    const content = res.content as Array<{ type: string; text?: string }>;
    return {
      text: content.map((c) => c.text ?? '').join('\n'),
      isError: res.isError === true,
      data: (res.structuredContent ?? {}) as Record<string, unknown>,
    };
  };

  /** Within the budget and saying its own size, or refused naming max_tokens: never over. */
  const withinBudget = (r: ToolText, budget: number) => {
    if (r.isError) {
      expect(r.data.error).toMatchObject({ code: 'INVALID_INPUT', field: 'max_tokens' });
      expect(r.text).toMatch(/give max_tokens of at least \d+/);
      const least = Number(/at least (\d+)/.exec(r.text)![1]);
      expect(least).toBeGreaterThan(budget);
      return least;
    }
    expect(countTokens(r.text), r.text).toBeLessThanOrEqual(budget);
    expect(r.data.tokens).toMatchObject({ used: countTokens(r.text), budget });
    return null;
  };

  beforeAll(async () => {
    if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run the build before these tests`);
    dir = realpathSync(mkdtempSync(join(tmpdir(), 'cairn-mcp-budgets-')));
    client = new Client({ name: 'cairn-test', version: '0.0.0' });
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [CLI, 'mcp', '--data-dir', join(dir, 'data')],
        cwd: dir,
        env: { CAIRN_LOG_LEVEL: 'warn' },
        stderr: 'pipe',
      }),
    );
    for (let i = 1; i <= 6; i++) {
      const r = await call('mem_save', {
        text: `Deploy note ${i}: the staging deploy of the billing service needs REDIS_URL and a warm cache; step ${i} of the runbook covers the rollback.`,
        title: `Deploy runbook step ${i} for the billing service on staging`,
        session: 'sess-deploy',
        tags: ['deploy', 'billing', `step-${i}`],
        ...(i === 6 ? { kind: 'summary' } : {}),
      });
      expect(r.isError, r.text).toBe(false);
      ids.push(String(r.data.id));
    }
  });

  afterAll(async () => {
    await client?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('mem_search: the header and footer count, so 200 tokens means 200 (it sent 251)', async () => {
    const full = await call('mem_search', { query: 'staging deploy billing runbook' });
    expect(full.data.tokens).toMatchObject({ used: countTokens(full.text), budget: null, omitted: 0 });
    const all = (full.data.hits as unknown[]).length;
    expect(all).toBe(6);
    const r = await call('mem_search', { query: 'staging deploy billing runbook', max_tokens: 200 });
    expect(withinBudget(r, 200)).toBeNull();
    const tokens = r.data.tokens as { omitted: number };
    expect((r.data.hits as unknown[]).length + tokens.omitted).toBe(all);
    expect(tokens.omitted).toBeGreaterThan(0);
    expect(r.text).toContain(`(${countTokens(r.text)} of 200 tokens, ${tokens.omitted} omitted`);
  });

  it('mem_search: a listing cut by max_tokens says where its next page starts, and paging by it loses nothing', async () => {
    const seen: string[] = [];
    let offset = 0;
    for (let page = 0; page < 10 && seen.length < ids.length; page++) {
      const r = await call('mem_search', { query: '', tags: ['deploy'], k: 4, offset, max_tokens: 220 });
      expect(withinBudget(r, 220)).toBeNull();
      const hits = (r.data.hits as Array<{ id: string }>).map((h) => h.id);
      expect(hits.length).toBeGreaterThan(0);
      expect(hits.length).toBeLessThan(4);
      expect(r.data.listing).toEqual({ offset, next: offset + hits.length });
      // The last page (cut by nothing, and not full) names no next one.
      if (offset + hits.length < ids.length) expect(r.text).toContain(`offset=${offset + hits.length})`);
      else expect(r.text).not.toContain('next page');
      seen.push(...hits);
      offset += hits.length;
    }
    expect(seen).toEqual([...ids].reverse());
  });

  it('mem_get: each record’s header and tags and the footer count (60 tokens sent 129)', async () => {
    const one = await call('mem_get', { ids: ids.slice(0, 1), max_tokens: 60 });
    expect(withinBudget(one, 60)).toBeNull();
    expect(one.data).toMatchObject({ memories: [], omitted: ids.slice(0, 1) });
    // The backend's own budget counts the records' texts alone (45 tokens each here): it kept all three
    // at 200, where the text with their headers and tags is over 300 tokens.
    const r = await call('mem_get', { ids: ids.slice(0, 3), max_tokens: 200 });
    expect(withinBudget(r, 200)).toBeNull();
    const memories = r.data.memories as Array<{ id: string }>;
    expect(memories.length).toBeGreaterThan(0);
    // What did not fit is named, in the order asked, and nothing is lost.
    expect([...memories.map((m) => m.id), ...(r.data.omitted as string[])]).toEqual(ids.slice(0, 3));
    expect(r.text).toContain(`past max_tokens, not returned: ${(r.data.omitted as string[]).join(', ')}`);
  });

  it('mem_timeline: the header counts, and a budget too small for it and the anchor is refused (1 sent 95)', async () => {
    const tiny = await call('mem_timeline', { anchor: ids[2], max_tokens: 1 });
    const least = withinBudget(tiny, 1)!;
    expect(least).toBeGreaterThan(1);
    // The least it named is enough: the anchor alone, every neighbour left out and counted.
    const just = await call('mem_timeline', { anchor: ids[2], max_tokens: least });
    expect(withinBudget(just, least)).toBeNull();
    expect(just.data).toMatchObject({ before: [], after: [], tokens: { omitted: 5 } });
    expect(just.text).toContain(`> [${ids[2]}]`);
    // More room brings the nearest neighbours first, on both sides.
    const some = await call('mem_timeline', { anchor: ids[2], max_tokens: least + 120 });
    expect(withinBudget(some, least + 120)).toBeNull();
    expect((some.data.before as Array<{ id: string }>).map((e) => e.id)).toEqual([ids[1]]);
    expect((some.data.after as Array<{ id: string }>).map((e) => e.id)).toEqual([ids[3]]);
  });

  it('mem_context: the namespace note comes out of the budget (it was ~40 tokens on top)', async () => {
    const roomy = await call('mem_context', { query: 'staging deploy', max_tokens: 300 });
    expect(withinBudget(roomy, 300)).toBeNull();
    expect(roomy.text).toMatch(/^Memories go to namespace dir\//);
    expect(roomy.text).toContain('# Memory context');
    for (const budget of [20, 40]) withinBudget(await call('mem_context', { max_tokens: budget }), budget);
  });

  it('every tool, at every budget, answers within it or refuses it by name', async () => {
    for (const budget of [1, 5, 10, 20, 30, 40, 60, 80, 120, 200, 400, 800]) {
      withinBudget(await call('mem_search', { query: 'deploy billing', max_tokens: budget }), budget);
      withinBudget(await call('mem_search', { query: '', tags: ['deploy'], max_tokens: budget }), budget);
      withinBudget(await call('mem_get', { ids: [...ids, 'm_missing'], max_tokens: budget }), budget);
      withinBudget(await call('mem_timeline', { anchor: ids[3], max_tokens: budget }), budget);
      withinBudget(await call('mem_context', { query: 'billing', max_tokens: budget }), budget);
    }
  });
});
