import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { IndexEntry } from '@cairn/api-contract';
import { CairnClient } from '@cairn/client';
import { CairnEngine } from '@cairn/engine';
import { countTokens, indexLine, MemoryService } from '@cairn/service';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHttpServer, parseApiKeys } from '../src/index.js';

// Real HTTP on loopback against a real engine (SQLite file, vector index) in a temporary folder.

const KEY_A = 'key-alpha-0001';
const KEY_B = 'key-beta-00002';
const KEY_ALL = 'key-team-00003';
const NOW = Date.parse('2026-11-20T12:00:00Z');

let dir: string;
let engine: CairnEngine;
let app: FastifyInstance;
let base: string;

async function call(method: string, path: string, body?: unknown, key: string | null = KEY_A, raw?: string) {
  const headers: Record<string, string> = {};
  if (key) headers.authorization = `Bearer ${key}`;
  if (body !== undefined || raw !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`${base}${path}`, {
    method,
    headers,
    body: raw ?? (body === undefined ? null : JSON.stringify(body)),
  });
  const text = await res.text();
  // biome-ignore lint/suspicious/noExplicitAny: the tests read arbitrary JSON bodies
  let json: any;
  try {
    json = JSON.parse(text);
  } catch {
    json = text;
  }
  return { status: res.status, body: json, headers: res.headers };
}

const mem = (id: string, text: string, extra: Record<string, unknown> = {}) => ({
  id,
  text,
  ts: NOW - Number(id.replace(/\D/g, '') || 0) * 60_000,
  ...extra,
});

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'cairn-http-'));
  engine = await CairnEngine.open({ dataDir: dir, persistIntervalMs: 0 });
  const service = new MemoryService({ engine });
  const keys = parseApiKeys(`${KEY_A}=team/alpha;${KEY_B}=team/beta;${KEY_ALL}=team/*`);
  app = await createHttpServer({ service, keys });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const addr = app.server.address() as { port: number };
  base = `http://127.0.0.1:${addr.port}`;
  const seed = await call(
    'POST',
    '/v1/memories',
    {
      namespace: 'team/alpha',
      memories: [
        mem('a1', 'The deploy failed because the redis timeout was 200 ms', {
          session: 's1',
          kind: 'observation',
        }),
        mem('a2', 'Raised the redis timeout to 2 s and the deploy passed', { session: 's1' }),
        mem('a3', 'Session 1: fixed the deploy by raising the redis timeout', {
          session: 's1',
          kind: 'summary',
        }),
        mem('a4', 'parseConfig drops unknown keys silently', { session: 's2', title: 'parseConfig quirk' }),
        mem('a5', 'Session 2: investigated parseConfig and the config loader', {
          session: 's2',
          kind: 'summary',
        }),
      ],
    },
    KEY_A,
  );
  expect(seed.status).toBe(201);
  const seedB = await call(
    'POST',
    '/v1/memories',
    {
      namespace: 'team/beta',
      memories: [mem('b1', 'beta secret: the redis password rotates weekly', { session: 'x' })],
    },
    KEY_B,
  );
  expect(seedB.status).toBe(201);
});

afterAll(async () => {
  await app?.close();
  await engine?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('auth', () => {
  it('401 without a key or with an unknown one, in the error shape', async () => {
    for (const key of [null, 'not-a-real-key-at-all']) {
      const r = await call('POST', '/v1/search', { namespace: 'team/alpha', query: 'redis' }, key);
      expect(r.status).toBe(401);
      expect(r.body).toEqual({ error: { code: 'UNAUTHORIZED', message: expect.any(String) } });
    }
  });

  it('403 on another namespace, for every endpoint, and nothing leaks', async () => {
    const forbidden = [
      ['POST', '/v1/search', { namespace: 'team/beta', query: 'redis' }],
      ['POST', '/v1/memories/get', { namespace: 'team/beta', ids: ['b1'] }],
      ['GET', '/v1/timeline?namespace=team/beta&anchor=b1', undefined],
      ['POST', '/v1/context', { namespace: 'team/beta', query: 'redis' }],
      ['POST', '/v1/search/federated', { namespaces: ['team/alpha', 'team/beta'], query: 'redis' }],
      ['DELETE', '/v1/memories/b1?namespace=team/beta', undefined],
      ['POST', '/v1/memories', { namespace: 'team/beta', text: 'sneaky write' }],
    ] as const;
    for (const [method, path, body] of forbidden) {
      const r = await call(method, path, body);
      expect(r.status, `${method} ${path}`).toBe(403);
      expect(r.body.error.code).toBe('FORBIDDEN_NAMESPACE');
      expect(JSON.stringify(r.body)).not.toMatch(/secret|rotates/);
    }
    const stats = await call('GET', '/v1/stats');
    expect(Object.keys(stats.body.namespaces)).toEqual(['team/alpha']);
    const beta = await call('POST', '/v1/memories/get', { namespace: 'team/beta', ids: ['b1'] }, KEY_B);
    expect(beta.body.memories[0].text).toMatch(/rotates weekly/);
    expect((await call('GET', '/v1/stats', undefined, KEY_B)).body.namespaces['team/beta'].stored).toBe(1);
  });

  it('a prefix key reads every namespace under it', async () => {
    const r = await call('GET', '/v1/stats', undefined, KEY_ALL);
    expect(Object.keys(r.body.namespaces).sort()).toEqual(['team/alpha', 'team/beta']);
  });

  it('stats count superseded and deleted memories beside the live ones, so embedded never looks unexplained', async () => {
    const ns = 'team/counts';
    await call(
      'POST',
      '/v1/memories',
      {
        namespace: ns,
        memories: [
          { id: 'c1', text: 'the first plan' },
          { id: 'c2', text: 'a note to delete' },
        ],
      },
      KEY_ALL,
    );
    await call(
      'POST',
      '/v1/memories',
      { namespace: ns, id: 'c3', text: 'the plan, revised', supersedes: ['c1'] },
      KEY_ALL,
    );
    expect((await call('DELETE', `/v1/memories/c2?namespace=${ns}`, undefined, KEY_ALL)).status).toBe(200);
    const stats = (await call('GET', '/v1/stats', undefined, KEY_ALL)).body.namespaces[ns];
    expect(stats).toMatchObject({ stored: 1, superseded: 1, deleted: 1 });
  });

  it('refuses to run without keys on a non-loopback address', async () => {
    await expect(
      createHttpServer({ service: new MemoryService({ engine }), keys: null, host: '0.0.0.0' }),
    ).rejects.toMatchObject({ code: 'INVALID_INPUT', data: { field: 'host' } });
  });
});

describe('writes', () => {
  it('stores one memory (201, durable) and a fact is replaced by slot/key', async () => {
    const one = await call('POST', '/v1/memories', {
      namespace: 'team/alpha',
      text: 'a single observation about webpack',
    });
    expect(one.status).toBe(201);
    expect(one.body).toMatchObject({
      durable: true,
      items: [{ index: 0, status: 'stored', namespace: 'team/alpha' }],
    });

    const fact = (value: string) =>
      call('POST', '/v1/memories', { namespace: 'team/alpha', slot: 'prefs', key: 'editor', text: value });
    expect((await fact('the user prefers vim')).body.items[0]).toMatchObject({
      id: 'fact:prefs:editor',
      status: 'stored',
    });
    expect((await fact('the user prefers helix now')).body.items[0]).toMatchObject({ status: 'updated' });
    const got = await call('POST', '/v1/memories/get', {
      namespace: 'team/alpha',
      ids: ['fact:prefs:editor'],
    });
    expect(got.body.memories[0]).toMatchObject({
      kind: 'fact',
      text: 'the user prefers helix now',
      meta: { slot: 'prefs', key: 'editor' },
    });

    // A colon in the slot or the key never makes two facts one: each keeps its own value.
    const home = await call('POST', '/v1/memories', {
      namespace: 'team/alpha',
      memories: [
        { slot: 'user:home', key: 'city', text: 'Lisbon' },
        { slot: 'user', key: 'home:city', text: 'Porto' },
      ],
    });
    expect(home.body.items.map((i: { status: string }) => i.status)).toEqual(['stored', 'stored']);
    const both = await call('POST', '/v1/memories/get', {
      namespace: 'team/alpha',
      ids: home.body.items.map((i: { id: string }) => i.id),
    });
    expect(both.body.memories.map((m: { text: string }) => m.text)).toEqual(['Lisbon', 'Porto']);
  });

  it('stores named fields, returns them with the record, and search names the route that found a memory', async () => {
    const w = await call('POST', '/v1/memories', {
      namespace: 'team/alpha',
      id: 'routed',
      text: 'Yes, last Friday!',
      fields: { question: 'When did the kubernetes migration finish?' },
    });
    expect(w.status).toBe(201);
    const got = await call('POST', '/v1/memories/get', { namespace: 'team/alpha', ids: ['routed'] });
    expect(got.body.memories[0].fields).toEqual({ question: 'When did the kubernetes migration finish?' });
    const found = await call('POST', '/v1/search', {
      namespace: 'team/alpha',
      query: 'kubernetes migration',
    });
    expect(found.status).toBe(200);
    expect(found.body.hits[0]).toMatchObject({ id: 'routed', explain: { routes: ['question'] } });
    expect(found.body.hits[0].explain.parts.routes).toBeGreaterThan(0);
    // A bad field name is refused by name, and nothing is stored.
    const bad = await call('POST', '/v1/memories', {
      namespace: 'team/alpha',
      id: 'badly-routed',
      text: 'x',
      fields: { text: 'y' },
    });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatchObject({ code: 'INVALID_INPUT', field: 'fields.text' });
    const none = await call('POST', '/v1/memories/get', { namespace: 'team/alpha', ids: ['badly-routed'] });
    expect(none.body.missing).toEqual(['badly-routed']);
  });

  it('?wait=queued is accepted (embedded mode stores synchronously, so the answer is still durable)', async () => {
    const r = await call('POST', '/v1/memories?wait=queued', {
      namespace: 'team/alpha',
      memories: [{ text: 'queued one' }],
    });
    expect(r.status).toBe(201);
    expect(r.body.durable).toBe(true);
  });

  it('bad input gets a clear 4xx naming the field, and nothing of the request is stored', async () => {
    const before = (await call('GET', '/v1/stats')).body.namespaces['team/alpha'].stored;
    const cases: Array<[string, unknown, string | undefined, number, string, string?]> = [
      ['malformed JSON', undefined, '{"namespace": "team/alpha", "text": ', 400, 'INVALID_INPUT', 'body'],
      ['wrong type', { namespace: 'team/alpha', text: 5 }, undefined, 400, 'INVALID_INPUT', 'text'],
      [
        'missing text',
        { namespace: 'team/alpha', memories: [{ text: 'ok' }, { id: 'x' }] },
        undefined,
        400,
        'INVALID_INPUT',
        'memories.1.text',
      ],
      [
        'unknown field',
        { namespace: 'team/alpha', text: 'x', colour: 'red' },
        undefined,
        400,
        'INVALID_INPUT',
      ],
      [
        'oversized text',
        { namespace: 'team/alpha', text: 'x'.repeat(70_000) },
        undefined,
        400,
        'INVALID_INPUT',
        'text',
      ],
      [
        'oversized batch',
        { namespace: 'team/alpha', memories: Array.from({ length: 1_001 }, (_, i) => ({ text: `m${i}` })) },
        undefined,
        413,
        'PAYLOAD_TOO_LARGE',
        'memories',
      ],
      [
        'half a fact',
        { namespace: 'team/alpha', slot: 'prefs', text: 'x' },
        undefined,
        400,
        'INVALID_INPUT',
        'key',
      ],
      ['no namespace', { text: 'x' }, undefined, 400, 'INVALID_INPUT', 'namespace'],
      ['bad namespace', { namespace: '../etc', text: 'x' }, undefined, 400, 'INVALID_INPUT'],
      [
        'far-future ts',
        { namespace: 'team/alpha', text: 'x', ts: 1e300 },
        undefined,
        400,
        'INVALID_INPUT',
        'ts',
      ],
      [
        'meta nested thousands deep',
        undefined,
        `{"namespace":"team/alpha","text":"x","meta":{"a":${'['.repeat(5_000)}${']'.repeat(5_000)}}}`,
        400,
        'INVALID_INPUT',
        'meta',
      ],
    ];
    for (const [name, body, raw, status, code, field] of cases) {
      const r = await call('POST', '/v1/memories', body, KEY_A, raw);
      expect(r.status, name).toBe(status);
      expect(r.body.error.code, name).toBe(code);
      if (field) expect(r.body.error.field, name).toBe(field);
      expect(r.body.error.message.length, name).toBeGreaterThan(5);
    }
    expect((await call('GET', '/v1/stats')).body.namespaces['team/alpha'].stored).toBe(before);
  });

  it('a body over the server limit is 413 in the error shape', async () => {
    const small = await createHttpServer({
      service: new MemoryService({ engine, limits: { maxBodyBytes: 1_024 } }),
      keys: null,
    });
    const r = await small.inject({
      method: 'POST',
      url: '/v1/memories',
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify({ namespace: 'team/alpha', text: 'y'.repeat(2_000) }),
    });
    await small.close();
    expect(r.statusCode).toBe(413);
    expect(r.json()).toMatchObject({ error: { code: 'PAYLOAD_TOO_LARGE' } });
  });

  it('delete tombstones: gone from get and search; unknown id is 404', async () => {
    await call('POST', '/v1/memories', { namespace: 'team/alpha', id: 'tmp1', text: 'ephemeral zebra note' });
    expect((await call('DELETE', '/v1/memories/tmp1?namespace=team/alpha')).body).toEqual({
      deleted: 'tmp1',
      namespace: 'team/alpha',
    });
    expect(
      (await call('POST', '/v1/memories/get', { namespace: 'team/alpha', ids: ['tmp1'] })).body.missing,
    ).toEqual(['tmp1']);
    const after = await call('POST', '/v1/search', {
      namespace: 'team/alpha',
      query: 'ephemeral zebra note',
    });
    expect(after.body.hits.map((h: { id: string }) => h.id)).not.toContain('tmp1');
    const again = await call('DELETE', '/v1/memories/tmp1?namespace=team/alpha');
    expect(again.status).toBe(404);
    expect(again.body.error.code).toBe('NOT_FOUND');
    // Fact ids are long; a repeated or missing namespace is a 400, never a 500.
    const fact = await call('POST', '/v1/memories', {
      namespace: 'team/alpha',
      slot: 's'.repeat(60),
      key: 'k'.repeat(120),
      text: 'v',
    });
    const id = fact.body.items[0].id as string;
    expect((await call('DELETE', `/v1/memories/${encodeURIComponent(id)}?namespace=team/alpha`)).status).toBe(
      200,
    );
    for (const q of ['namespace=team/alpha&namespace=team/beta', '', 'namespace=%20bad'])
      expect((await call('DELETE', `/v1/memories/x?${q}`)).body.error).toMatchObject({
        code: 'INVALID_INPUT',
        field: 'namespace',
      });
    expect((await call('DELETE', '/v1/memories/%E0%A4%A?namespace=team/alpha')).body.error.code).toBe(
      'INVALID_INPUT',
    );
  });
});

describe('search and progressive disclosure', () => {
  it('search returns the compact index, explained, with token counts', async () => {
    const r = await call('POST', '/v1/search', {
      namespace: 'team/alpha',
      query: 'redis timeout deploy',
      k: 3,
      now: NOW,
    });
    expect(r.status).toBe(200);
    expect(r.body.hits.length).toBe(3);
    const h = r.body.hits[0];
    expect(Object.keys(h).sort()).toEqual([
      'date',
      'explain',
      'id',
      'kind',
      'namespace',
      'score',
      'session',
      'title',
      'tokens',
    ]);
    expect(h.explain).toMatchObject({
      bm25Rank: expect.any(Number),
      recency: expect.any(Number),
      rrf: expect.any(Number),
    });
    expect(h.tokens).toBeGreaterThan(5);
    expect(r.body.tokens.used).toBeGreaterThan(0);
    expect(r.body).toMatchObject({ degraded: [], tokens: { budget: null, omitted: 0 } });
    expect(JSON.stringify(r.body)).not.toMatch(/beta secret/);
  });

  it('max_tokens trims the index and says how many were left out; empty results say why', async () => {
    const r = await call('POST', '/v1/search', {
      namespace: 'team/alpha',
      query: 'redis timeout deploy',
      k: 3,
      max_tokens: 40,
    });
    expect(r.body.tokens.used).toBeLessThanOrEqual(40);
    expect(r.body.tokens.omitted).toBeGreaterThan(0);
    expect(r.body.hits.length + r.body.tokens.omitted).toBe(3);
    const blank = await call('POST', '/v1/search', { namespace: 'team/alpha', query: '   ' });
    expect(blank.body.empty.reason).toBe('blank_query');
    // With filters, a blank query lists what passes them, newest first; offset pages it.
    const listed = await call('POST', '/v1/search', {
      namespace: 'team/alpha',
      query: '',
      filters: { since: 0 },
      k: 2,
      offset: 1,
    });
    expect(listed.status).toBe(200);
    expect(listed.body.listing).toEqual({ offset: 1, next: 3 });
    expect(listed.body.hits).toHaveLength(2);
    expect(listed.body.hits[0].date >= listed.body.hits[1].date).toBe(true);
    // A listing skips at most 100,000 (as `cairn list --offset` does), said in the words k's limit has.
    const tooDeep = await call('POST', '/v1/search', {
      namespace: 'team/alpha',
      query: '',
      filters: { since: 0 },
      offset: 100_001,
    });
    expect(tooDeep.status).toBe(400);
    expect(tooDeep.body.error).toEqual({
      code: 'INVALID_INPUT',
      message: 'offset must be at most 100000',
      field: 'offset',
    });
    const offsetWithWords = await call('POST', '/v1/search', {
      namespace: 'team/alpha',
      query: 'redis',
      offset: 1,
    });
    expect(offsetWithWords.status).toBe(400);
    expect(offsetWithWords.body.error.field).toBe('offset');
    const filtered = await call('POST', '/v1/search', {
      namespace: 'team/alpha',
      query: 'redis',
      filters: { kinds: ['no-such-kind'] },
    });
    expect(filtered.body.hits).toEqual([]);
    expect(filtered.body.empty.reason).toMatch(/filtered_out|no_match/);
    const unknown = await call('POST', '/v1/search', { namespace: 'team/alpha-empty', query: 'x' }, KEY_ALL);
    expect(unknown.body.empty.reason).toBe('empty_namespace');
    const full = await call('POST', '/v1/search', {
      namespace: 'team/alpha',
      query: 'redis',
      explain: 'full',
    });
    expect(full.body.trace.candidates.length).toBeGreaterThan(0);
  });

  it('a listing under max_tokens stops its page at the first entry that does not fit, and the next page starts there', async () => {
    const ns = 'team/listing';
    // Newest first: l1, then l2, whose title of rare characters makes its index line several times
    // longer than the others', then l3 and l4.
    const write = await call(
      'POST',
      '/v1/memories',
      {
        namespace: ns,
        memories: [
          { id: 'l1', text: 'first entry', kind: 'note', ts: NOW },
          { id: 'l2', text: 'second entry', kind: 'note', title: '𝔛ɮ⨂ꙮ'.repeat(29), ts: NOW - 1_000 },
          { id: 'l3', text: 'third entry', kind: 'note', ts: NOW - 2_000 },
          { id: 'l4', text: 'fourth entry', kind: 'note', ts: NOW - 3_000 },
        ],
      },
      KEY_ALL,
    );
    expect(write.status).toBe(201);
    const page = (offset: number, max_tokens?: number) =>
      call(
        'POST',
        '/v1/search',
        { namespace: ns, query: '', filters: { kinds: ['note'] }, k: 3, offset, max_tokens },
        KEY_ALL,
      );
    const whole = await page(0);
    const [c1, c2, c3] = (whole.body.hits as IndexEntry[]).map((h) => countTokens(indexLine(h))) as [
      number,
      number,
      number,
    ];
    expect(c2).toBeGreaterThan(c1 + c3);
    expect(whole.body.listing).toEqual({ offset: 0, next: 3 });
    // Room for l1 and l3 but not l2: the page was l1 and l3, and paging by k lost l2 for good.
    const first = await page(0, c1 + c3);
    expect(first.body.hits.map((h: IndexEntry) => h.id)).toEqual(['l1']);
    expect(first.body.listing).toEqual({ offset: 0, next: 1 });
    expect(first.body.tokens).toEqual({ used: c1, budget: c1 + c3, omitted: 2 });
    const second = await page(first.body.listing.next, c2 + c3);
    expect(second.body.hits.map((h: IndexEntry) => h.id)).toEqual(['l2', 'l3']);
    expect(second.body.listing).toEqual({ offset: 1, next: 3 });
  });

  it('refuses a huge k, a bad decay and FTS operator soup never throws', async () => {
    const k = await call('POST', '/v1/search', { namespace: 'team/alpha', query: 'redis', k: 100_000 });
    expect(k.status).toBe(400);
    expect(k.body.error).toMatchObject({ code: 'INVALID_INPUT', field: 'k' });
    // Past 2^53 too, the documented limit is what the error names, not zod's safe-integer range.
    const huge = await call('POST', '/v1/search', { namespace: 'team/alpha', query: 'redis', k: 1e16 });
    expect(huge.body.error).toMatchObject({ code: 'INVALID_INPUT', field: 'k' });
    expect(huge.body.error.message).toMatch(/k must be at most 100/);
    const negative = await call('POST', '/v1/search', { namespace: 'team/alpha', query: 'redis', k: -1e20 });
    expect(negative.body.error).toMatchObject({ code: 'INVALID_INPUT', field: 'k' });
    expect(negative.body.error.message).not.toMatch(/9007199254740991/);
    const soup = await call('POST', '/v1/search', {
      namespace: 'team/alpha',
      query: 'NEAR( "unbalanced AND OR * ^ -- :',
    });
    expect(soup.status).toBe(200);
  });

  it('batch search answers each query in its own slot', async () => {
    const r = await call('POST', '/v1/search/batch', {
      queries: [
        { namespace: 'team/alpha', query: 'parseConfig' },
        { namespace: 'team/beta', query: 'redis' },
        { namespace: 'team/alpha', query: 'redis', k: 0 },
      ],
    });
    expect(r.status).toBe(200);
    expect(r.body.results[0].ok).toBe(true);
    expect(r.body.results[0].result.hits[0].id).toBe('a4');
    // The field at fault is named from the batch's body.
    expect(r.body.results[1]).toMatchObject({
      ok: false,
      error: { code: 'FORBIDDEN_NAMESPACE', field: 'queries.1.namespace' },
    });
    expect(r.body.results[2]).toMatchObject({
      ok: false,
      error: { code: 'INVALID_INPUT', field: 'queries.2.k' },
    });
    expect(JSON.stringify(r.body)).not.toMatch(/beta secret/);
  });

  it('federated search merges namespaces by score within the per-namespace quota', async () => {
    const r = await call(
      'POST',
      '/v1/search/federated',
      { namespaces: ['team/alpha', 'team/beta'], query: 'redis', k: 4, perNamespace: 1 },
      KEY_ALL,
    );
    expect(r.status).toBe(200);
    expect(r.body.hits.map((h: { namespace: string }) => h.namespace).sort()).toEqual([
      'team/alpha',
      'team/beta',
    ]);
    expect(r.body.namespaces['team/alpha'].hits).toBe(1);
    // A blank query with filters lists: the namespaces' lists merge newest first.
    const listed = await call(
      'POST',
      '/v1/search/federated',
      { namespaces: ['team/alpha', 'team/beta'], query: '', filters: { since: 0 }, k: 6 },
      KEY_ALL,
    );
    const dates = listed.body.hits.map((h: { date: string }) => h.date);
    expect(dates.length).toBeGreaterThan(1);
    expect(dates).toEqual([...dates].sort().reverse());
  });

  it('timeline by anchor or by query, within the session; 404 for an unknown anchor', async () => {
    const t = await call('GET', '/v1/timeline?namespace=team/alpha&anchor=a2&before=5&after=5');
    expect(t.status).toBe(200);
    expect(t.body.scope).toBe('session');
    expect([...t.body.before, t.body.anchor, ...t.body.after].map((e: { id: string }) => e.id)).toEqual([
      'a3',
      'a2',
      'a1',
    ]);
    const q = await call(
      'GET',
      '/v1/timeline?namespace=team/alpha&query=parseConfig%20quirk&before=1&after=1',
    );
    expect(q.body.anchor.id).toBe('a4');
    // A budget is never exceeded: one that holds the anchor's line alone gets the anchor alone…
    const anchorLine = indexLine(t.body.anchor);
    const tight = await call(
      'GET',
      `/v1/timeline?namespace=team/alpha&anchor=a2&max_tokens=${countTokens(anchorLine)}`,
    );
    expect(tight.status).toBe(200);
    expect(tight.body).toMatchObject({ before: [], after: [], tokens: { omitted: 2 } });
    expect(tight.body.tokens.used).toBeLessThanOrEqual(tight.body.tokens.budget);
    // …and one that cannot hold even the anchor (which a timeline always shows) is refused, naming the
    // least that would do, where it was answered with 59 tokens of a budget of 1.
    const tiny = await call('GET', '/v1/timeline?namespace=team/alpha&anchor=a2&max_tokens=1');
    expect(tiny.status).toBe(400);
    expect(tiny.body.error).toMatchObject({ code: 'INVALID_INPUT', field: 'max_tokens' });
    expect(tiny.body.error.message).toContain(`of at least ${countTokens(anchorLine)}`);
    const missing = await call('GET', '/v1/timeline?namespace=team/alpha&anchor=nope');
    expect(missing.status).toBe(404);
    const neither = await call('GET', '/v1/timeline?namespace=team/alpha');
    expect(neither.body.error).toMatchObject({ code: 'INVALID_INPUT', field: 'anchor' });
    // Both: refused, rather than answered from the anchor with the query silently ignored.
    const both = await call('GET', '/v1/timeline?namespace=team/alpha&anchor=a2&query=parseConfig');
    expect(both.status).toBe(400);
    expect(both.body.error).toMatchObject({ code: 'INVALID_INPUT', field: 'query' });
  });

  it('get returns full records within max_tokens and lists missing and omitted ids', async () => {
    const all = await call('POST', '/v1/memories/get', { namespace: 'team/alpha', ids: ['a1', 'a4', 'zzz'] });
    expect(all.body.memories.map((m: { id: string }) => m.id)).toEqual(['a1', 'a4']);
    expect(all.body.missing).toEqual(['zzz']);
    // An id longer than any a write accepts is a mistake, named, not a miss echoed back at length.
    const long = await call('POST', '/v1/memories/get', {
      namespace: 'team/alpha',
      ids: ['x'.repeat(100_000)],
    });
    expect(long.status).toBe(400);
    expect(long.body.error.field).toBe('ids.0');
    expect(all.body.memories[1]).toMatchObject({
      title: 'parseConfig quirk',
      text: 'parseConfig drops unknown keys silently',
    });
    const first = all.body.memories[0].tokens;
    const tight = await call('POST', '/v1/memories/get', {
      namespace: 'team/alpha',
      ids: ['a1', 'a4'],
      max_tokens: first,
    });
    expect(tight.body.memories.map((m: { id: string }) => m.id)).toEqual(['a1']);
    expect(tight.body.omitted).toEqual(['a4']);
    expect(tight.body.tokens).toEqual({ used: first, budget: first, omitted: 1 });
  });

  it('context packs summaries and relevant memories within the budget, leaving out what the caller has', async () => {
    const r = await call('POST', '/v1/context', {
      namespace: 'team/alpha',
      query: 'redis timeout',
      max_tokens: 400,
    });
    expect(r.status).toBe(200);
    expect(r.body.text).toMatch(/^# Memory context: team\/alpha/);
    expect(r.body.text).toMatch(/## Recent session summaries/);
    expect(r.body.text).toMatch(/## Relevant to "redis timeout"/);
    expect(r.body.included).toEqual(expect.arrayContaining(['a5', 'a3', 'a1']));
    expect(r.body.tokens.used).toBeLessThanOrEqual(400);
    const excl = await call('POST', '/v1/context', {
      namespace: 'team/alpha',
      query: 'redis timeout',
      exclude_ids: ['a1', 'a5'],
      format: 'text',
    });
    expect(excl.body.included).not.toContain('a1');
    expect(excl.body.included).not.toContain('a5');
    expect(excl.body.text).not.toMatch(/^#/m);
    const tiny = await call('POST', '/v1/context', {
      namespace: 'team/alpha',
      query: 'redis',
      max_tokens: 60,
    });
    expect(tiny.body.tokens.used).toBeLessThanOrEqual(60);
    expect(tiny.body.tokens.omitted).toBeGreaterThan(0);
  });
});

describe('operations', () => {
  it('healthz, readyz and Prometheus metrics', async () => {
    expect((await call('GET', '/healthz', undefined, null)).body).toEqual({ status: 'ok' });
    expect(await engine.whenWarm(30_000)).toBe(true);
    const ready = await call('GET', '/readyz', undefined, null);
    expect(ready.status).toBe(200);
    expect(ready.body.checks.store.ok).toBe(true);
    expect(ready.body.checks.catalog).toEqual({ ok: true, detail: 'loaded' });
    const m = await fetch(`${base}/metrics`);
    const text = await m.text();
    expect(text).toMatch(/cairn_http_requests_total\{method="POST",route="\/v1\/search",status="200"\} \d+/);
    expect(text).toMatch(/cairn_memories\{state="stored"\} \d+/);
    expect(text).toMatch(/cairn_http_request_duration_seconds_bucket/);
    // The process's health, for an operator watching a rebuild or a soak.
    expect(text).toMatch(/process_resident_memory_bytes \d+/);
    expect(text).toMatch(/nodejs_eventloop_lag_p99_seconds \d/);
    expect(text).not.toMatch(/team\/beta/);
  });

  it('reads the memory totals once for a burst of scrapes: /metrics needs no key, and stats() costs a query per namespace', async () => {
    const stats = engine.stats.bind(engine);
    let reads = 0;
    engine.stats = (...args: Parameters<typeof engine.stats>) => {
      reads++;
      return stats(...args);
    };
    try {
      const scrapes = await Promise.all(
        Array.from({ length: 20 }, async () => (await fetch(`${base}/metrics`)).text()),
      );
      for (const text of scrapes) expect(text).toMatch(/cairn_memories\{state="stored"\} \d+/);
      // At most one read for the burst, and one more if its 5 s ran out on a slow machine.
      expect(reads).toBeLessThanOrEqual(2);
    } finally {
      engine.stats = stats;
    }
  });

  it('serves the OpenAPI document generated from the zod schemas', async () => {
    const r = await call('GET', '/docs/json', undefined, null);
    expect(r.status).toBe(200);
    expect(Object.keys(r.body.paths)).toEqual(
      expect.arrayContaining([
        '/v1/memories',
        '/v1/search',
        '/v1/search/batch',
        '/v1/timeline',
        '/v1/memories/get',
        '/v1/context',
      ]),
    );
    expect(JSON.stringify(r.body.paths['/v1/search'])).toMatch(/SearchRequest/);
    // Never framed: a page that framed a local server's docs could click "Try it out / Execute" for you.
    for (const page of ['/docs/', '/docs/static/index.html', '/docs/json']) {
      const res = await fetch(`${base}${page}`);
      expect(res.status, page).toBe(200);
      expect(res.headers.get('x-frame-options'), page).toBe('DENY');
      expect(res.headers.get('content-security-policy'), page).toContain("frame-ancestors 'none'");
    }
    expect(JSON.stringify(r.body.components.schemas)).toMatch(/max_tokens/);
  });

  it('refuses query parameters a route does not take, as it refuses unknown body fields', async () => {
    const stats = await call('GET', '/v1/stats?namespace=team/alpha');
    expect(stats.status).toBe(400);
    expect(stats.body.error).toMatchObject({ code: 'INVALID_INPUT', field: 'namespace' });
    expect(stats.body.error.message).toMatch(/takes no query parameters/);
    const search = await call('POST', '/v1/search?k=3', { namespace: 'team/alpha', query: 'redis' });
    expect(search.body.error).toMatchObject({ code: 'INVALID_INPUT', field: 'k' });
    const write = await call('POST', '/v1/memories?wiat=queued', { namespace: 'team/alpha', text: 'x' });
    expect(write.body.error).toMatchObject({ code: 'INVALID_INPUT', field: 'wiat' });
    expect(write.body.error.message).toMatch(/takes wait/);
    // What a route does take still works.
    expect((await call('GET', '/v1/timeline?namespace=team/alpha&anchor=a2&before=1')).status).toBe(200);
  });

  it('unknown routes are 404 in the error shape; a known path asked with the wrong method is 405 and says which it takes', async () => {
    const r = await call('GET', '/v1/nope');
    expect(r.status).toBe(404);
    expect(r.body.error.code).toBe('NOT_FOUND');
    expect(r.body.error.message).toBe('no route GET /v1/nope');
    const wrong = await fetch(`${base}/v1/search`, { headers: { authorization: `Bearer ${KEY_A}` } });
    expect(wrong.status).toBe(405);
    expect(wrong.headers.get('allow')).toBe('POST');
    expect(await wrong.json()).toEqual({
      error: { code: 'METHOD_NOT_ALLOWED', message: 'GET is not allowed on /v1/search: it takes POST' },
    });
    // A path with a parameter is matched by its pattern.
    const put = await call('PUT', '/v1/memories/a1?namespace=team/alpha', {});
    expect(put.status).toBe(405);
    expect(put.body.error.message).toBe('PUT is not allowed on /v1/memories/a1: it takes DELETE');
    // Allow names HEAD where GET is taken (the message does not).
    const stats = await fetch(`${base}/v1/stats`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEY_A}` },
    });
    expect(stats.status).toBe(405);
    expect(stats.headers.get('allow')?.split(', ').sort()).toEqual(['GET', 'HEAD']);
    expect(((await stats.json()) as { error: { message: string } }).error.message).toBe(
      'POST is not allowed on /v1/stats: it takes GET',
    );
    // The path as the router matches it: percent-decoded.
    expect((await call('POST', '/v1/st%61ts')).status).toBe(405);
    // Routes take no trailing slash, whatever the method: a 404 that says where the route is, not a 405
    // whose Allow names the method just used.
    const slash = await call('POST', '/v1/search/', { namespace: 'team/alpha', query: 'redis' });
    expect(slash.status).toBe(404);
    expect(slash.body.error.message).toBe(
      'no route POST /v1/search/ (the route is /v1/search, without the trailing slash)',
    );
    expect((await call('GET', '/v1/stats/')).status).toBe(404);
  });

  it("a wildcard route (the explorer's /ui/*) takes its methods for every path under it", async () => {
    const ui = mkdtempSync(join(tmpdir(), 'cairn-ui-'));
    writeFileSync(join(ui, 'index.html'), '<!doctype html><title>explorer</title>');
    const withUi = await createHttpServer({
      service: new MemoryService({ engine }),
      keys: null,
      explorerDir: ui,
    });
    try {
      await withUi.listen({ port: 0, host: '127.0.0.1' });
      const at = `http://127.0.0.1:${(withUi.server.address() as { port: number }).port}`;
      expect((await fetch(`${at}/ui/index.html`)).status).toBe(200);
      // A file the route does not find is a 404, not a 405 naming the method just used.
      const missing = await fetch(`${at}/ui/assets/none.js`);
      expect(missing.status).toBe(404);
      expect(((await missing.json()) as { error: { code: string } }).error.code).toBe('NOT_FOUND');
      const post = await fetch(`${at}/ui/index.html`, { method: 'POST' });
      expect(post.status).toBe(405);
      expect(post.headers.get('allow')?.split(', ').sort()).toEqual(['GET', 'HEAD']);
      expect((await fetch(`${at}/uix`, { method: 'POST' })).status).toBe(404);
    } finally {
      await withUi.close();
      rmSync(ui, { recursive: true, force: true });
    }
  });

  it('rate limits per key with 429 RATE_LIMITED', async () => {
    const limited = await createHttpServer({
      service: new MemoryService({ engine }),
      keys: parseApiKeys(`${KEY_A}=team/alpha`),
      rateLimitPerMinute: 2,
    });
    const go = () =>
      limited.inject({ method: 'GET', url: '/v1/stats', headers: { authorization: `Bearer ${KEY_A}` } });
    expect((await go()).statusCode).toBe(200);
    expect((await go()).statusCode).toBe(200);
    const third = await go();
    expect(third.statusCode).toBe(429);
    expect(third.json()).toMatchObject({ error: { code: 'RATE_LIMITED' } });
    // Guessing keys is limited as well (the limiter runs before auth), by the client's address: a new
    // guess each time gets no fresh allowance. The scheme is case-insensitive.
    const guess = (n: number) =>
      limited.inject({
        method: 'GET',
        url: '/v1/stats',
        headers: { authorization: `bearer not-a-key-000${n}` },
      });
    expect((await guess(1)).statusCode).toBe(401);
    expect((await guess(2)).statusCode).toBe(401);
    expect((await guess(3)).statusCode).toBe(429);
    await limited.close();
    const lower = await call('GET', '/v1/stats', undefined, null);
    expect(lower.status).toBe(401);
    const res = await fetch(`${base}/v1/stats`, { headers: { authorization: `bearer ${KEY_A}` } });
    expect(res.status).toBe(200);
  });
});

describe('the typed client', () => {
  it('round-trips writes, searches and gets, and throws CairnError with the server’s code', async () => {
    const client = new CairnClient({ baseUrl: base, apiKey: KEY_A });
    const w = await client.write({ namespace: 'team/alpha', text: 'client wrote about kafka partitions' });
    expect(w.items[0]!.status).toBe('stored');
    const s = await client.search({ namespace: 'team/alpha', query: 'kafka partitions' });
    expect(s.hits[0]!.id).toBe(w.items[0]!.id);
    const g = await client.get({ namespace: 'team/alpha', ids: [s.hits[0]!.id] });
    expect(g.memories[0]!.text).toMatch(/kafka/);
    const t = await client.timeline({ namespace: 'team/alpha', anchor: 'a2', before: 1, after: 1 });
    expect(t.anchor.id).toBe('a2');
    await expect(client.search({ namespace: 'team/beta', query: 'x' })).rejects.toMatchObject({
      code: 'FORBIDDEN_NAMESPACE',
    });
    await expect(new CairnClient({ baseUrl: 'http://127.0.0.1:1' }).stats()).rejects.toMatchObject({
      code: 'BACKEND_UNAVAILABLE',
    });
    // `.` and `..` cannot be sent as ids (a URL parser resolves them away, and asked DELETE /v1/): refused
    // by name, as the server refuses them on a write.
    for (const id of ['.', '..'])
      await expect(client.delete('team/alpha', id)).rejects.toMatchObject({
        code: 'INVALID_INPUT',
        data: { field: 'id' },
      });
  });
});
