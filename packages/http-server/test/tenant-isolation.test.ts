import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CairnEngine } from '@cairn/engine';
import { MemoryService } from '@cairn/service';
import fc from 'fast-check';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHttpServer, parseApiKeys } from '../src/index.js';

// Property: whatever key, endpoint, namespaces and query a caller picks, no response ever carries a
// memory (its id or its text) of a namespace that key may not read.

const NAMESPACES = ['org/red', 'org/green', 'org/blue', 'other/gold'];
const SHARED = ['redis', 'deploy', 'timeout', 'parser', 'config', 'cache', 'queue', 'token'];
/** Marker of namespace n: appears in its ids and texts only. */
const marker = (n: number) => `mk${n}q`;

// Every non-empty subset of the namespaces is one key.
const SUBSETS = Array.from({ length: 2 ** NAMESPACES.length - 1 }, (_, i) =>
  NAMESPACES.map((_, n) => n).filter((n) => (i + 1) & (1 << n)),
);
const keyOf = (subset: number[]) => `key-${subset.join('-')}-pad`;

let dir: string;
let engine: CairnEngine;
let app: FastifyInstance;
let base: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'cairn-isolation-'));
  engine = await CairnEngine.open({ dataDir: dir, persistIntervalMs: 0 });
  engine.ingest(
    NAMESPACES.flatMap((namespace, n) =>
      Array.from({ length: 12 }, (_, i) => ({
        namespace,
        id: `${marker(n)}-${i}`,
        session: `s${i % 3}`,
        kind: i % 4 === 0 ? 'summary' : 'observation',
        ts: 1_700_000_000_000 + i * 60_000,
        text: `${SHARED[i % SHARED.length]} ${SHARED[(i + 3) % SHARED.length]} note ${marker(n)} number ${i}`,
      })),
    ),
  );
  await engine.drain();
  const keys = parseApiKeys(
    SUBSETS.map((s) => `${keyOf(s)}=${s.map((n) => NAMESPACES[n]).join(',')}`).join(';'),
  );
  app = await createHttpServer({ service: new MemoryService({ engine }), keys });
  await app.listen({ port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
});

afterAll(async () => {
  await app?.close();
  await engine?.close();
  rmSync(dir, { recursive: true, force: true });
});

const query = fc.oneof(
  fc.constantFrom(...SHARED, 'note', 'number', 'mk0q', 'mk1q mk2q', 'mk3q OR redis', '"note" NEAR mk2q'),
  fc.string({ maxLength: 30 }),
  fc
    .array(fc.constantFrom(...SHARED, ...NAMESPACES.map((_, n) => marker(n))), { minLength: 1, maxLength: 4 })
    .map((w) => w.join(' ')),
);

const request = fc.record({
  subset: fc.constantFrom(...SUBSETS),
  target: fc.integer({ min: 0, max: NAMESPACES.length - 1 }),
  others: fc.subarray(
    NAMESPACES.map((_, n) => n),
    { minLength: 1 },
  ),
  endpoint: fc.constantFrom(
    'search',
    'batch',
    'federated',
    'timeline',
    'timelineQuery',
    'get',
    'context',
    'stats',
  ),
  query,
  item: fc.integer({ min: 0, max: 11 }),
});

type Req = typeof request extends fc.Arbitrary<infer T> ? T : never;

function build(r: Req): { method: string; path: string; body?: unknown } {
  const namespace = NAMESPACES[r.target]!;
  const ids = r.others.map((n) => `${marker(n)}-${r.item}`);
  switch (r.endpoint) {
    case 'search':
      return {
        method: 'POST',
        path: '/v1/search',
        body: { namespace, query: r.query, k: 20, explain: 'full' },
      };
    case 'batch':
      return {
        method: 'POST',
        path: '/v1/search/batch',
        body: { queries: r.others.map((n) => ({ namespace: NAMESPACES[n], query: r.query, k: 20 })) },
      };
    case 'federated':
      return {
        method: 'POST',
        path: '/v1/search/federated',
        body: { namespaces: r.others.map((n) => NAMESPACES[n]), query: r.query, k: 20 },
      };
    case 'timeline':
      return {
        method: 'GET',
        path: `/v1/timeline?namespace=${namespace}&anchor=${ids[0]}&before=20&after=20`,
      };
    case 'timelineQuery':
      return {
        method: 'GET',
        path: `/v1/timeline?namespace=${namespace}&query=${encodeURIComponent(r.query || 'note')}&before=20&after=20`,
      };
    case 'get':
      return { method: 'POST', path: '/v1/memories/get', body: { namespace, ids } };
    case 'context':
      return { method: 'POST', path: '/v1/context', body: { namespace, query: r.query, max_tokens: 4_000 } };
    default:
      return { method: 'GET', path: '/v1/stats' };
  }
}

describe('tenant isolation (property)', () => {
  it('no response ever contains a memory of a namespace the key may not read', async () => {
    await fc.assert(
      fc.asyncProperty(request, async (r) => {
        const { method, path, body } = build(r);
        const res = await fetch(`${base}${path}`, {
          method,
          headers: {
            authorization: `Bearer ${keyOf(r.subset)}`,
            ...(body ? { 'content-type': 'application/json' } : {}),
          },
          body: body ? JSON.stringify(body) : null,
        });
        const text = await res.text();
        expect(res.status, text).toBeLessThan(500);
        const forbidden = NAMESPACES.map((_, n) => n).filter((n) => !r.subset.includes(n));
        for (const n of forbidden) {
          // Responses echo what the caller sent (its query, the ids it asked for as `missing`); strip the
          // echoes before looking for leaks. The ids first: a query such as "0" stripped from an echoed id
          // ("mk3q-0") left "mk3q-" behind, read as a leak.
          let rest = text;
          for (const id of r.others.map((o) => `${marker(o)}-${r.item}`)) rest = rest.replaceAll(id, '');
          rest = rest.replaceAll(JSON.stringify(r.query).slice(1, -1), '');
          const leaked = rest.includes(`${marker(n)}-`);
          expect(leaked, `${method} ${path} leaked ${NAMESPACES[n]}: ${text.slice(0, 300)}`).toBe(false);
          expect(text).not.toContain(`note ${marker(n)} number`);
          expect(text).not.toContain(`"${NAMESPACES[n]}"`);
        }
        // A request naming a namespace outside the key is refused outright.
        const named =
          r.endpoint === 'federated' ? r.others : ['batch', 'stats'].includes(r.endpoint) ? [] : [r.target];
        if (named.some((n) => !r.subset.includes(n))) expect(res.status).toBe(403);
      }),
      { numRuns: 150 },
    );
  });
});
