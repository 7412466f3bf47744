import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CairnEngine } from '@cairn/engine';
import { MemoryService } from '@cairn/service';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHttpServer } from '../src/index.js';

// Requests that go wrong before a route sees them, over real HTTP on loopback: every answer is in the one
// error shape `{error: {code, message, field?}}`, and none of them resets the connection.

let dir: string;
let engine: CairnEngine;
let app: FastifyInstance;
let port: number;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'cairn-http-transport-'));
  engine = await CairnEngine.open({ dataDir: dir, persistIntervalMs: 0 });
  app = await createHttpServer({ service: new MemoryService({ engine }), keys: null });
  await app.listen({ port: 0, host: '127.0.0.1' });
  port = (app.server.address() as { port: number }).port;
  engine.ingest([{ namespace: 'a', id: 'm1', text: 'the deploy target is fly.io', session: 's1' }]);
  await engine.drain();
});

afterAll(async () => {
  await app.close();
  await engine.close();
  rmSync(dir, { recursive: true, force: true });
});

type ErrorShape = { error: { code: string; message: string; field?: string } };

/** Sends raw bytes and returns the status and parsed body of the answer. */
function raw(
  request: string,
): Promise<{ status: number; body: { error: { code: string; message: string } } }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.end(request));
    let data = '';
    socket.on('data', (c) => {
      data += c;
    });
    socket.on('error', reject);
    socket.on('close', () => {
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(data)?.[1]);
      resolve({ status, body: JSON.parse(data.slice(data.indexOf('\r\n\r\n') + 4)) });
    });
  });
}

const isErrorShape = (b: unknown) =>
  expect(b).toEqual({
    error: expect.objectContaining({ code: expect.any(String), message: expect.any(String) }),
  });

describe('transport-level errors', () => {
  it('answers a malformed request line with 400 in the error shape', async () => {
    const r = await raw('GARBAGE\r\n\r\n');
    expect(r.status).toBe(400);
    isErrorShape(r.body);
    expect(r.body.error.code).toBe('INVALID_INPUT');
  });

  it('answers an HTTP/1.1 request without a Host header with 400 in the error shape, naming the host', async () => {
    const r = await raw('GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n');
    expect(r.status).toBe(400);
    expect(r.body.error).toMatchObject({ code: 'INVALID_INPUT', field: 'host' });
    // HTTP/1.0 has no Host header to require.
    expect((await raw('GET /healthz HTTP/1.0\r\n\r\n')).status).toBe(200);
  });

  it('answers conflicting Content-Length headers with 400 in the error shape', async () => {
    const r = await raw(
      'POST /v1/search HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 10\r\nContent-Length: 5\r\n\r\nabcde',
    );
    expect(r.status).toBe(400);
    isErrorShape(r.body);
  });

  it('answers a request line over 64 KiB with 431 in the error shape, naming the url', async () => {
    const res = await fetch(`http://127.0.0.1:${port}/v1/timeline?namespace=a&query=${'x'.repeat(70_000)}`);
    expect(res.status).toBe(431);
    const body = (await res.json()) as ErrorShape;
    isErrorShape(body);
    expect(body.error).toMatchObject({ code: 'PAYLOAD_TOO_LARGE', field: 'url' });
  });

  it('serves the documented 4,096-character timeline query even when it is not ASCII', async () => {
    // 4,096 characters, ~24 KiB once percent-encoded: over Node's default 16 KiB of request line.
    const query = encodeURIComponent(`deploy target ${'é'.repeat(4_096 - 14)}`);
    const res = await fetch(`http://127.0.0.1:${port}/v1/timeline?namespace=a&query=${query}`);
    expect(res.status).toBe(200);
  });

  it('refuses a prototype-poisoning key by name, not as invalid JSON', async () => {
    const res = await fetch(`http://127.0.0.1:${port}/v1/memories`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"namespace":"a","text":"x","__proto__":{"admin":true}}',
    });
    expect(res.status).toBe(400);
    const { error } = (await res.json()) as ErrorShape;
    expect(error).toMatchObject({ code: 'INVALID_INPUT', field: 'body' });
    expect(error.message).toMatch(/__proto__/);
    // A "constructor" key is data (only one holding a "prototype" is refused), and invalid JSON that
    // happens to name one is still called invalid JSON.
    const ok = await fetch(`http://127.0.0.1:${port}/v1/memories`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"namespace":"a","text":"x","meta":{"constructor":"Alice"}}',
    });
    expect(ok.status).toBe(201);
    const broken = await fetch(`http://127.0.0.1:${port}/v1/memories`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"namespace":"a","text":"x","meta":{"constructor":"Alice",}}',
    });
    expect(((await broken.json()) as ErrorShape).error.message).toMatch(/malformed JSON/);
  });

  it('a DELETE without an id is a bad request naming the id, not a missing memory', async () => {
    const res = await fetch(`http://127.0.0.1:${port}/v1/memories/?namespace=a`, { method: 'DELETE' });
    expect(res.status).toBe(400);
    expect(((await res.json()) as ErrorShape).error).toMatchObject({ code: 'INVALID_INPUT', field: 'id' });
  });

  it('handles a DELETE sent with content-type application/json and no body', async () => {
    engine.ingest([{ namespace: 'a', id: 'gone', text: 'to be deleted' }]);
    const res = await fetch(`http://127.0.0.1:${port}/v1/memories/gone?namespace=a`, {
      method: 'DELETE',
      headers: { 'content-type': 'application/json' },
    });
    expect(res.status).toBe(200);
    const again = await fetch(`http://127.0.0.1:${port}/v1/memories/gone?namespace=a`, {
      method: 'DELETE',
      headers: { 'content-type': 'application/json' },
    });
    expect(again.status).toBe(404);
  });

  it('answers a 9 MiB body with 413 to a client that writes it all first, without resetting the connection', async () => {
    const body = Buffer.alloc(9 * 1024 * 1024, 97);
    for (const [method, path] of [
      ['POST', '/v1/memories'],
      ['POST', '/v1/search'],
      ['DELETE', '/v1/memories/m1?namespace=a'],
      ['POST', '/v1/no-such-route'],
    ] as const) {
      const answer = await new Promise<{ status?: number; text?: string; error?: string }>((resolve) => {
        const req = http.request(
          {
            host: '127.0.0.1',
            port,
            method,
            path,
            // Node's client frames a DELETE body only when told its length.
            headers: { 'content-type': 'application/json', 'content-length': body.length },
          },
          (res) => {
            let text = '';
            res.on('data', (c) => {
              text += c;
            });
            res.on('end', () => resolve({ status: res.statusCode, text }));
          },
        );
        req.on('error', (e: NodeJS.ErrnoException) => resolve({ error: e.code }));
        req.end(body);
      });
      expect(answer.error, `${method} ${path}`).toBeUndefined();
      expect(answer.status, `${method} ${path} ${answer.text}`).toBe(413);
      expect(JSON.parse(answer.text!).error.code).toBe('PAYLOAD_TOO_LARGE');
    }
  });

  it('answers a chunked body that grows past the limit with 413, without resetting the connection', async () => {
    const chunk = Buffer.alloc(1024 * 1024, 97);
    const answer = await new Promise<{ status?: number; error?: string }>((resolve) => {
      const req = http.request(
        {
          host: '127.0.0.1',
          port,
          method: 'POST',
          path: '/v1/search',
          headers: { 'content-type': 'application/json' },
        },
        (res) => {
          res.resume();
          res.on('end', () => resolve({ status: res.statusCode }));
        },
      );
      req.on('error', (e: NodeJS.ErrnoException) => resolve({ error: e.code }));
      for (let i = 0; i < 9; i++) req.write(chunk);
      req.end();
    });
    expect(answer).toEqual({ status: 413 });
  });

  it("refuses a text/plain body (fetch's default for a string) as the wrong media type, not as a string", async () => {
    const res = await fetch(`http://127.0.0.1:${port}/v1/search`, {
      method: 'POST',
      body: JSON.stringify({ namespace: 'a', query: 'deploy' }),
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as ErrorShape).error).toMatchObject({
      code: 'INVALID_INPUT',
      field: 'content-type',
    });
    // No body with the header (fetch's DELETE with body '') is no body, as it is for application/json.
    engine.ingest([{ namespace: 'a', id: 'plain-gone', text: 'to be deleted' }]);
    const del = await fetch(`http://127.0.0.1:${port}/v1/memories/plain-gone?namespace=a`, {
      method: 'DELETE',
      body: '',
    });
    expect(del.status).toBe(200);
  });

  it('refuses a lone UTF-16 surrogate by field, and stores nothing', async () => {
    const res = await fetch(`http://127.0.0.1:${port}/v1/memories`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      // JSON's \ud800 escape: a string no UTF-8 can carry, read back as U+FFFD had it been stored.
      body: '{"namespace":"a","id":"lone","text":"lone \\ud800 surrogate"}',
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as ErrorShape).error).toMatchObject({ code: 'INVALID_INPUT', field: 'text' });
    expect(engine.get('a', ['lone']).missing).toEqual(['lone']);
  });

  it('refuses a lone UTF-16 surrogate in any string of a read request, naming the field as a write does', async () => {
    const post = async (path: string, body: string) => {
      const res = await fetch(`http://127.0.0.1:${port}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
      });
      return { status: res.status, body: (await res.json()) as ErrorShape & Record<string, unknown> };
    };
    // JSON's \uXXXX escapes: strings no UTF-8 can carry. A search for one was answered 200 (blank_query).
    const cases: Array<[path: string, body: string, field: string]> = [
      ['/v1/search', '{"namespace":"a","query":"\\ud800"}', 'query'],
      ['/v1/search', '{"namespace":"a","query":"deploy \\udc00 target"}', 'query'],
      [
        '/v1/search',
        '{"namespace":"a","query":"deploy","filters":{"tags":["ok","\\udc00"]}}',
        'filters.tags.1',
      ],
      ['/v1/search', '{"namespace":"a","query":"deploy","filters":{"since":"\\ud800"}}', 'filters.since'],
      [
        '/v1/search',
        '{"namespace":"a","query":"deploy","boosts":[{"tag":"\\ud800","factor":2}]}',
        'boosts.0.tag',
      ],
      ['/v1/search', '{"namespace":"a","query":"deploy","decay":"\\ud800"}', 'decay'],
      ['/v1/search/federated', '{"namespaces":["a"],"query":"\\ud800"}', 'query'],
      ['/v1/memories/get', '{"namespace":"a","ids":["m1","\\ud800"]}', 'ids.1'],
      ['/v1/context', '{"namespace":"a","query":"deploy \\udfff"}', 'query'],
      ['/v1/context', '{"namespace":"a","exclude_ids":["\\ud800"]}', 'exclude_ids.0'],
      ['/v1/hygiene/undo', '{"namespace":"a","ids":["\\ud800"]}', 'ids.0'],
      ['/v1/hygiene/prune', '{"namespace":"a","slot":"\\ud800","cap":1,"dry_run":true}', 'slot'],
    ];
    for (const [path, body, field] of cases) {
      const r = await post(path, body);
      expect(r.status, `${path} ${body}`).toBe(400);
      expect(r.body.error, `${path} ${body}`).toEqual({
        code: 'INVALID_INPUT',
        field,
        message: `${field} holds a lone UTF-16 surrogate: not valid Unicode text`,
      });
    }
    // A batch answers each query in its slot: the bad one is refused there, the good one answered.
    const batch = await post(
      '/v1/search/batch',
      '{"queries":[{"namespace":"a","query":"\\ud800"},{"namespace":"a","query":"deploy"}]}',
    );
    expect(batch.status).toBe(200);
    const [bad, good] = batch.body.results as Array<{ ok: boolean; error?: unknown }>;
    expect(bad).toEqual({
      ok: false,
      error: {
        code: 'INVALID_INPUT',
        field: 'queries.0.query',
        message: 'queries.0: query holds a lone UTF-16 surrogate: not valid Unicode text',
      },
    });
    expect(good?.ok).toBe(true);
    // A surrogate pair (an emoji) is text, and is searched as such.
    expect((await post('/v1/search', '{"namespace":"a","query":"deploy \\ud83d\\ude00"}')).status).toBe(200);
  });

  it('names the query parameter and what was sent when a number is not one', async () => {
    const r = await fetch(`http://127.0.0.1:${port}/v1/timeline?namespace=a&anchor=m1&before=abc`);
    expect(r.status).toBe(400);
    expect(((await r.json()) as ErrorShape).error).toEqual({
      code: 'INVALID_INPUT',
      field: 'before',
      message: 'before must be an integer, got "abc"',
    });
    const ok = await fetch(`http://127.0.0.1:${port}/v1/timeline?namespace=a&anchor=m1&before=2&after=0`);
    expect(ok.status).toBe(200);
  });

  it('without keys, serves requests addressed to this machine only (no DNS rebinding)', async () => {
    const as = (host: string) => raw(`GET /v1/stats HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`);
    for (const host of [
      `127.0.0.1:${port}`,
      `localhost:${port}`,
      'LOCALHOST',
      'localhost.',
      `app.localhost:${port}`,
      `[::1]:${port}`,
      '[::ffff:127.0.0.1]',
    ])
      expect((await as(host)).status, host).toBe(200);
    for (const host of [
      `attacker.example:${port}`,
      'localhost.attacker.example',
      '127.0.0.1.nip.io',
      '[::ffff:10.0.0.1]',
    ]) {
      const r = await as(host);
      expect(r.status, host).toBe(401);
      expect(r.body.error).toMatchObject({ code: 'UNAUTHORIZED', field: 'host' });
    }
  });

  it('a client that hangs up mid-body is not an internal error', async () => {
    const internal: unknown[] = [];
    const quiet = await createHttpServer({
      service: new MemoryService({ engine }),
      keys: null,
      onInternalError: (err) => internal.push(err),
    });
    await quiet.listen({ port: 0, host: '127.0.0.1' });
    const at = (quiet.server.address() as { port: number }).port;
    await new Promise<void>((resolve) => {
      const socket = connect(at, '127.0.0.1', () => {
        socket.write(
          'POST /v1/memories HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"namespace":"a"',
        );
        setTimeout(() => socket.destroy(), 200);
      });
      socket.on('close', () => resolve());
    });
    // The server reads on after the hang-up; a round trip to it shows it has.
    await new Promise((r) => setTimeout(r, 200));
    expect((await fetch(`http://127.0.0.1:${at}/healthz`)).status).toBe(200);
    await quiet.close();
    expect(internal).toEqual([]);
  });

  it('closes a request whose body trickles in past its time, with a 408 in the one shape, key or none', async () => {
    const slow = await createHttpServer({
      service: new MemoryService({ engine }),
      keys: null,
      // Not a multiple of 4: Node refuses a check interval that is not a whole number of ms.
      requestTimeoutMs: 502,
    });
    await slow.listen({ port: 0, host: '127.0.0.1' });
    const at = (slow.server.address() as { port: number }).port;
    try {
      // A byte every 100 ms of a body of 100,000: without a limit the connection stayed open for good.
      const answer = await new Promise<string>((resolve, reject) => {
        let data = '';
        const socket = connect(at, '127.0.0.1', () => {
          socket.write(
            'POST /v1/search HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{',
          );
          const drip = setInterval(() => socket.writable && socket.write(' '), 100);
          socket.on('close', () => clearInterval(drip));
        });
        socket.on('data', (c) => {
          data += c;
        });
        socket.on('error', reject);
        socket.on('close', () => resolve(data));
      });
      expect(answer).toMatch(/^HTTP\/1\.1 408 /);
      isErrorShape(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)));
      // The server serves on.
      expect((await fetch(`http://127.0.0.1:${at}/healthz`)).status).toBe(200);
    } finally {
      await slow.close();
    }
  });

  it('refuses a timestamp with trailing junk by name, and stores nothing', async () => {
    const res = await fetch(`http://127.0.0.1:${port}/v1/memories`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ namespace: 'a', id: 'junk', text: 'x', ts: '2024-01-01 junk' }),
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as ErrorShape).error).toMatchObject({ code: 'INVALID_INPUT', field: 'ts' });
    expect(engine.get('a', ['junk']).missing).toEqual(['junk']);
  });
});

describe('a full disk', () => {
  it('answers 507 STORAGE_FULL, stores nothing of the request, and writes again once there is room', async () => {
    const db = engine.store.db;
    const pages = db.pragma('page_count', { simple: true }) as number;
    // SQLite's own size cap fails a write exactly as a full disk does (SQLITE_FULL).
    db.pragma(`max_page_count = ${pages + 2}`);
    const batch = {
      namespace: 'full',
      memories: Array.from({ length: 200 }, (_, i) => ({
        id: `f${i}`,
        text: `a long memory ${i} ${'word '.repeat(200)}`,
      })),
    };
    const post = () =>
      fetch(`http://127.0.0.1:${port}/v1/memories`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(batch),
      });
    const full = await post();
    expect(full.status).toBe(507);
    expect(((await full.json()) as ErrorShape).error.code).toBe('STORAGE_FULL');
    expect(engine.get('full', ['f0', 'f199']).missing).toEqual(['f0', 'f199']);
    db.pragma('max_page_count = 1073741823');
    const again = await post();
    expect(again.status).toBe(201);
    expect(engine.get('full', ['f0', 'f199']).memories).toHaveLength(2);
  });
});
