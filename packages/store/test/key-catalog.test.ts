import type { SearchFilters } from '@cairn/core';
import {
  type CatalogChunkReader,
  KeyCatalog,
  liveFilterSql,
  MemoryStore,
  readCatalogChunk,
  StatementCache,
} from '@cairn/store';
import Database from 'better-sqlite3';
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mem, openTempStore, T0, type TempStore } from './helpers.js';

let t: TempStore;
beforeEach(() => {
  t = openTempStore('cairn-catalog-');
});
afterEach(() => {
  t.cleanup();
});

const DAY = 86_400_000;
const NAMESPACES = ['a', 'b'];
const KINDS = ['observation', 'turn', 'fact'];
const SESSIONS = ['s1', 's2', 's3'];
const AGENTS = ['claude', 'codex'];
const TAGS = ['db', 'ops', 'ui'];

/** What SQLite says, with the same conditions every leg used before the catalog. */
function sqlAllowed(store: MemoryStore, namespace: string, filters: SearchFilters): number[] {
  const where = liveFilterSql(namespace, filters);
  return (
    store.db
      .prepare(`SELECT m.key FROM memories m WHERE ${where.sql} ORDER BY m.key`)
      .pluck()
      .all(...where.params) as number[]
  ).sort((x, y) => x - y);
}

function allKeys(store: MemoryStore): number[] {
  return store.db.prepare('SELECT key FROM memories ORDER BY key').pluck().all() as number[];
}

const op = fc.oneof(
  fc.record({
    type: fc.constant('write' as const),
    namespace: fc.constantFrom(...NAMESPACES),
    id: fc.integer({ min: 0, max: 11 }),
    kind: fc.constantFrom(...KINDS),
    session: fc.option(fc.constantFrom(...SESSIONS), { nil: undefined }),
    agent: fc.option(fc.constantFrom(...AGENTS), { nil: undefined }),
    tags: fc.subarray(TAGS),
    day: fc.integer({ min: 0, max: 30 }),
    importance: fc.double({ min: 0, max: 1, noNaN: true }),
    confidence: fc.option(fc.double({ min: 0, max: 1, noNaN: true }), { nil: undefined }),
    slot: fc.option(fc.constantFrom('prefs', 'env'), { nil: undefined }),
    validFrom: fc.option(fc.integer({ min: 0, max: 20 }), { nil: undefined }),
    validDays: fc.option(fc.integer({ min: 1, max: 20 }), { nil: undefined }),
    text: fc.constantFrom('redis timeout', 'kafka lag', 'deploy failed'),
    supersedes: fc.option(fc.integer({ min: 0, max: 11 }), { nil: undefined }),
  }),
  fc.record({
    type: fc.constant('delete' as const),
    namespace: fc.constantFrom(...NAMESPACES),
    id: fc.integer({ min: 0, max: 11 }),
  }),
);

const filters: fc.Arbitrary<SearchFilters> = fc.record(
  {
    kinds: fc.subarray([...KINDS, 'unknown-kind'], { minLength: 1 }),
    sessions: fc.subarray(SESSIONS, { minLength: 1 }),
    agents: fc.subarray(AGENTS, { minLength: 1 }),
    tags: fc.subarray([...TAGS, 'never-used'], { minLength: 1 }),
    since: fc.integer({ min: 0, max: 30 }).map((d) => T0 + d * DAY),
    until: fc.integer({ min: 0, max: 31 }).map((d) => T0 + d * DAY),
    slots: fc.subarray(['prefs', 'env', 'never-used'], { minLength: 1 }),
    asOf: fc.integer({ min: 0, max: 40 }).map((d) => T0 + d * DAY),
  },
  { requiredKeys: [] },
);

describe('KeyCatalog: per-key search fields held in memory', () => {
  it('agrees with SQLite on every filter after any interleaving of writes, rewrites, supersessions and deletes, made through another connection', () => {
    // The writer is a second connection, as a `cairn worker` or the primary of `serve --processes` is.
    const writer = new MemoryStore({ path: t.path });
    try {
      fc.assert(
        fc.property(fc.array(fc.array(op, { maxLength: 6 }), { maxLength: 6 }), filters, (rounds, f) => {
          for (const ops of rounds) {
            for (const o of ops) {
              if (o.type === 'delete') writer.delete(o.namespace, `m${o.id}`);
              else
                writer.write([
                  mem({
                    namespace: o.namespace,
                    id: `m${o.id}`,
                    kind: o.kind,
                    session: o.session,
                    agent: o.agent,
                    tags: o.tags,
                    ts: T0 + o.day * DAY,
                    importance: o.importance,
                    ...(o.confidence === undefined ? {} : { confidence: o.confidence }),
                    ...(o.slot === undefined ? {} : { meta: { slot: o.slot, key: 'k' } }),
                    ...(o.validFrom === undefined ? {} : { validFrom: T0 + o.validFrom * DAY }),
                    ...(o.validDays === undefined
                      ? {}
                      : { validTo: T0 + ((o.validFrom ?? 0) + o.validDays) * DAY }),
                    text: o.text,
                    supersedes: o.supersedes === undefined ? [] : [`m${o.supersedes}`],
                  }),
                ]);
            }
            // The reader's catalog is consulted between rounds, so it must follow each round's changes.
            const keys = allKeys(t.store);
            for (const ns of [...NAMESPACES, 'unknown-ns']) {
              const got = [...t.store.allowedKeys(ns, keys, f)].sort((x, y) => x - y);
              expect(got).toEqual(sqlAllowed(t.store, ns, f));
              const scoring = t.store.scoringByKeys(ns, keys);
              const live = sqlAllowed(t.store, ns, {});
              expect([...scoring.keys()].sort((x, y) => x - y)).toEqual(live);
              for (const key of live) {
                const row = t.store.db
                  .prepare(
                    'SELECT id, ts, kind, importance, confidence, session, agent FROM memories WHERE key = ?',
                  )
                  .get(key) as { id: string; ts: number; importance: number };
                expect(scoring.get(key)).toEqual({ key, ...row });
              }
            }
          }
        }),
        { numRuns: 40 },
      );
    } finally {
      writer.close();
    }
  });

  it('reflects a metadata-only update (same text, new ts, importance and tags) at once', () => {
    t.store.write([mem({ id: 'x', text: 'same words', ts: T0, importance: 0.2, tags: ['db'] })]);
    const [key] = allKeys(t.store);
    expect([...t.store.allowedKeys('ns', [key!], { tags: ['db'] })]).toEqual([key]);
    t.store.write([
      mem({ id: 'x', text: 'same words', ts: T0 + DAY, importance: 0.9, confidence: 0.4, tags: ['ops'] }),
    ]);
    expect([...t.store.allowedKeys('ns', [key!], { tags: ['db'] })]).toEqual([]);
    expect([...t.store.allowedKeys('ns', [key!], { tags: ['ops'], since: T0 + DAY })]).toEqual([key]);
    expect(t.store.scoringByKeys('ns', [key!]).get(key!)).toEqual({
      key,
      id: 'x',
      ts: T0 + DAY,
      kind: 'observation',
      importance: 0.9,
      confidence: 0.4,
      session: null,
      agent: null,
    });
  });

  it('serves cached page records only while their rows are unchanged, whichever connection changed them', () => {
    const other = new MemoryStore({ path: t.path });
    try {
      t.store.write([mem({ id: 'p', text: 'first words', tags: ['db'], ts: T0 })]);
      const [key] = allKeys(t.store);
      const page = () => t.store.liveByKeys('ns', [key!]).get(key!);
      expect(page()).toMatchObject({ text: 'first words', tags: ['db'], accessCount: 0 });
      // A caller changing what it got does not change the cache.
      page()!.tags.push('mutated');
      expect(page()!.tags).toEqual(['db']);
      other.write([mem({ id: 'p', text: 'second words', tags: ['ops'], ts: T0 })]);
      expect(page()).toMatchObject({ text: 'second words', tags: ['ops'] });
      other.get('ns', ['p']);
      expect(page()).toMatchObject({ accessCount: 1 });
      other.write([mem({ id: 'p', text: 'second words', tags: ['ops'], ts: T0 + DAY, importance: 0.9 })]);
      expect(page()).toMatchObject({ ts: T0 + DAY, importance: 0.9 });
      other.delete('ns', 'p');
      expect(page()).toBeUndefined();
      expect(t.store.liveByKeys('other-ns', [key!]).size).toBe(0);
    } finally {
      other.close();
    }
  });

  it("estimates a filter's pass rate from probes spread over the whole key range", () => {
    const batch = [];
    for (let i = 0; i < 2_000; i++)
      batch.push(
        mem({
          namespace: i % 4 === 0 ? 'small' : 'big',
          id: `m${i}`,
          text: `note ${i}`,
          kind: i % 3 === 0 ? 'fact' : 'observation',
          ts: T0 + Math.floor(i / 20) * DAY,
        }),
      );
    t.store.write(batch);
    const exact = (ns: string, f: SearchFilters) =>
      sqlAllowed(t.store, ns, f).length / sqlAllowed(t.store, ns, {}).length;
    for (const f of [
      {},
      { kinds: ['fact'] },
      { since: T0 + 90 * DAY },
      { since: T0 + 10 * DAY, until: T0 + 20 * DAY },
    ]) {
      for (const ns of ['big', 'small'])
        expect(Math.abs(t.store.passRate(ns, f)! - exact(ns, f))).toBeLessThan(0.03);
    }
    expect(t.store.passRate('big', { kinds: ['never-stored'] })).toBe(0);
    expect(t.store.passRate('unknown-ns', {})).toBeNull();
    // Too few probes land in a namespace this sparse: no estimate rather than a poor one.
    t.store.write([mem({ namespace: 'tiny', id: 'x', text: 'only one' })]);
    expect(t.store.passRate('tiny', {})).toBeNull();
  });

  it('loads in the background, answering nothing until done, and then includes rows written meanwhile', async () => {
    t.store.write(
      Array.from({ length: 9 }, (_, i) => mem({ id: `m${i}`, text: `note ${i}`, ts: T0 + i * DAY })),
    );
    const catalog = new KeyCatalog(new StatementCache(t.store.db));
    const loading = catalog.warm(2);
    // Loading: callers fall back to SQLite.
    expect(catalog.allowed('ns', allKeys(t.store), {})).toBeNull();
    t.store.write([mem({ id: 'late', text: 'written while loading', ts: T0 })]);
    t.store.delete('ns', 'm1');
    t.store.write([mem({ id: 'm8', text: 'note 8', ts: T0 + 30 * DAY })]);
    await loading;
    // A caller that never yields still sees a load finish: each sync loads one more chunk.
    const eager = new KeyCatalog(new StatementCache(t.store.db));
    void eager.warm(3);
    let calls = 0;
    while (!eager.sync()) calls++;
    expect(calls).toBeLessThanOrEqual(4);
    expect([...eager.allowed('ns', allKeys(t.store), {})!].sort((x, y) => x - y)).toEqual(
      sqlAllowed(t.store, 'ns', {}),
    );
    for (const f of [{}, { since: T0 + 20 * DAY }, { until: T0 + DAY }]) {
      expect([...catalog.allowed('ns', allKeys(t.store), f)!].sort((x, y) => x - y)).toEqual(
        sqlAllowed(t.store, 'ns', f),
      );
    }
  });

  it('loads through a chunk reader on another connection, reading no rows itself, and ends the load itself when the reader fails', async () => {
    t.store.write(
      Array.from({ length: 20 }, (_, i) =>
        mem({
          namespace: NAMESPACES[i % 2],
          id: `m${i}`,
          text: `note ${i}`,
          kind: KINDS[i % 3],
          ...(i % 4 ? { session: SESSIONS[i % 3] } : {}),
          ...(i % 5 ? { agent: AGENTS[i % 2] } : {}),
          tags: TAGS.slice(0, i % 4),
          ts: T0 + i * DAY,
          ...(i % 6 === 0 ? { meta: { slot: 'prefs' } } : {}),
        }),
      ),
    );
    // The reader thread's own read connection, as the worker task has.
    const other = new Database(t.path, { readonly: true });
    try {
      const asked: number[] = [];
      const reader =
        (failOnCall?: number): CatalogChunkReader =>
        async ({ afterKey, limit }) => {
          await new Promise((r) => setImmediate(r));
          asked.push(afterKey);
          if (asked.length === failOnCall) throw new Error('the thread is gone');
          return readCatalogChunk(other, afterKey, limit);
        };
      const here = new KeyCatalog(new StatementCache(t.store.db));
      const check = (catalog: KeyCatalog) => {
        expect(here.sync()).toBe(true);
        expect(catalog.sync()).toBe(true);
        const keys = allKeys(t.store);
        for (const namespace of NAMESPACES) {
          expect(catalog.scoring(namespace, keys)).toEqual(here.scoring(namespace, keys));
          for (const f of [
            {},
            { tags: ['ops'] },
            { sessions: ['s2'], agents: ['codex'] },
            { slots: ['prefs'] },
          ])
            expect(catalog.allowed(namespace, keys, f)).toEqual(here.allowed(namespace, keys, f));
        }
      };

      const catalog = new KeyCatalog(new StatementCache(t.store.db), { readerChunk: 3 });
      catalog.useChunkReader(reader());
      const loading = catalog.warm();
      // Loading: callers fall back to SQLite, and a sync reads no chunk here.
      expect(catalog.sync()).toBe(false);
      expect(asked).toEqual([]);
      t.store.write([mem({ namespace: 'a', id: 'läte-✓', text: 'written while loading', tags: ['ui'] })]);
      t.store.delete('b', 'm1');
      await loading;
      // Each chunk reads the rows there are then: 21 with 'läte-✓', in chunks of 3, and an empty last one.
      expect(asked).toEqual([0, 3, 6, 9, 12, 15, 18, 21]);
      expect(catalog.rowsFromReader).toBe(21);
      check(catalog);

      asked.length = 0;
      const failing = new KeyCatalog(new StatementCache(t.store.db), { readerChunk: 3 });
      failing.useChunkReader(reader(2));
      await failing.warm();
      expect(asked).toHaveLength(2);
      expect(failing.rowsFromReader).toBe(3);
      check(failing);
    } finally {
      other.close();
    }
  });

  it('catches up in chunks after a bulk write, answering nothing meanwhile, then as SQLite does', async () => {
    t.store.write(
      Array.from({ length: 5 }, (_, i) => mem({ id: `m${i}`, text: `note ${i}`, ts: T0 + i * DAY })),
    );
    const catalog = new KeyCatalog(new StatementCache(t.store.db), { catchUpAtOnceUpTo: 50 });
    expect(catalog.sync()).toBe(true);
    // A bulk import, a rewrite, a deletion and a supersession among the rows to catch up.
    t.store.write(
      Array.from({ length: 400 }, (_, i) =>
        mem({ namespace: NAMESPACES[i % 2], id: `b${i}`, text: `bulk ${i}`, ts: T0 + (i % 30) * DAY }),
      ),
    );
    t.store.write([mem({ id: 'm1', text: 'rewritten', ts: T0 + 25 * DAY })]);
    t.store.delete('ns', 'm2');
    t.store.write([mem({ id: 'm3b', text: 'replaces m3', supersedes: ['m3'], ts: T0 })]);
    expect(catalog.sync()).toBe(false);
    expect(catalog.allowed('ns', allKeys(t.store), {})).toBeNull();
    const catchingUp = catalog.warm();
    // Written during the catch-up: stamped after every row it reads, so it is in by the end.
    t.store.write([mem({ namespace: 'a', id: 'late', text: 'written while catching up', ts: T0 })]);
    await catchingUp;
    expect(catalog.sync()).toBe(true);
    for (const namespace of ['ns', ...NAMESPACES]) {
      for (const f of [{}, { since: T0 + 20 * DAY }, { until: T0 + DAY }]) {
        expect([...catalog.allowed(namespace, allKeys(t.store), f)!].sort((x, y) => x - y)).toEqual(
          sqlAllowed(t.store, namespace, f),
        );
      }
    }
    // A few rows behind is applied at once, as before.
    t.store.write([mem({ id: 'one', text: 'one more' })]);
    expect(catalog.sync()).toBe(true);
    expect(catalog.allowed('ns', allKeys(t.store), {})!.size).toBe(sqlAllowed(t.store, 'ns', {}).length);
  });

  it('turns itself off past maxKeys and leaves every answer to SQLite, unchanged', () => {
    const small = new MemoryStore({ path: t.path, catalog: { maxKeys: 3 } });
    try {
      small.write(
        ['a', 'b', 'c', 'd', 'e'].map((id, i) => mem({ id, text: `note ${id}`, ts: T0 + i * DAY })),
      );
      small.delete('ns', 'b');
      const keys = allKeys(small);
      const f = { since: T0 + DAY };
      expect([...small.allowedKeys('ns', keys, f)].sort((x, y) => x - y)).toEqual(sqlAllowed(small, 'ns', f));
      expect([...small.scoringByKeys('ns', keys).keys()].sort((x, y) => x - y)).toEqual(
        sqlAllowed(small, 'ns', {}),
      );
      const hits = small.lexical.searchLexical({ namespace: 'ns', query: 'note', filters: f, limit: 10 });
      expect(hits.candidates.map((c) => c.key).sort((x, y) => x - y)).toEqual(sqlAllowed(small, 'ns', f));
    } finally {
      small.close();
    }
  });
});

describe('MemoryStore.catalogState', () => {
  it('says loading, loaded or off, and off both when turned off and when the store outgrew it', async () => {
    t.store.write([0, 1, 2].map((i) => mem({ namespace: 'a', id: `m${i}`, text: `note ${i}` })));
    const reader: CatalogChunkReader = async ({ afterKey, limit }) =>
      readCatalogChunk(t.store.db, afterKey, limit);
    t.store.useCatalogReader(reader);
    const loading = t.store.warmCatalog();
    expect(t.store.catalogState().state).toBe('loading');
    await loading;
    expect(t.store.catalogState()).toMatchObject({ state: 'loaded', serving: true });

    const off = new MemoryStore({ path: t.path, catalog: false });
    const outgrown = new MemoryStore({ path: t.path, catalog: { maxKeys: 2 } });
    try {
      expect(off.catalogState()).toMatchObject({ state: 'off', serving: false });
      expect(outgrown.catalogState()).toMatchObject({ state: 'off', serving: false });
    } finally {
      off.close();
      outgrown.close();
    }
  });
});
