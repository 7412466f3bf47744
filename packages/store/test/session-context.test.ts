import { join } from 'node:path';
import { MemoryStore, MIGRATIONS, migrate, scopeToken } from '@cairn/store';
import Database from 'better-sqlite3';
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mem, openTempStore, searchIds, T0, type TempStore } from './helpers.js';

let t: TempStore;
beforeEach(() => {
  t = openTempStore('cairn-context-');
});
afterEach(() => {
  t.cleanup();
});

const at = (minutes: number) => new Date(T0 + minutes * 60_000).toISOString();

function turn(id: string, text: string, minutes: number, session = 's1', namespace = 'ns') {
  return mem({ namespace, id, text, kind: 'turn', session, ts: at(minutes) });
}

function contextOf(store: MemoryStore, namespace: string, id: string): string {
  return store.db
    .prepare('SELECT context FROM memories WHERE namespace = ? AND id = ?')
    .pluck()
    .get(namespace, id) as string;
}

function assertFtsIntegrity(store: MemoryStore): void {
  store.db.prepare("INSERT INTO memories_fts (memories_fts, rank) VALUES ('integrity-check', 1)").run();
}

describe('contextual indexing of turns', () => {
  it('finds a short answer by the words of the turn it answers, ranked below a turn that says them', () => {
    t.store.write([
      turn('q', 'When did you go hiking with your dog?', 0),
      turn('a', 'Yes, last Friday!', 1),
      turn('other', 'My dog loves hiking trails near the lake', 2, 's2'),
    ]);
    const ids = searchIds(t.store, 'ns', 'hiking dog');
    expect(ids).toContain('a');
    // Its own words weigh more than its context: the turns that say them rank first.
    expect(ids.indexOf('a')).toBeGreaterThan(ids.indexOf('q'));
    expect(ids.indexOf('a')).toBeGreaterThan(ids.indexOf('other'));
    assertFtsIntegrity(t.store);
  });

  it('matches by own words only with a context weight of 0', () => {
    t.store.write([turn('q', 'When did you go hiking with your dog?', 0), turn('a', 'Yes, last Friday!', 1)]);
    const search = (contextWeight?: number) =>
      t.store.lexical
        .searchLexical({
          namespace: 'ns',
          query: 'hiking dog',
          filters: {},
          limit: 10,
          ...(contextWeight === undefined ? {} : { contextWeight }),
        })
        .candidates.map((c) => c.key);
    expect(search()).toHaveLength(2);
    expect(search(0)).toHaveLength(1);
    // The same with a filter, which takes the FTS5 plans rather than the postings cache.
    const filtered = t.store.lexical.searchLexical({
      namespace: 'ns',
      query: 'hiking dog',
      filters: { kinds: ['turn'] },
      limit: 10,
      contextWeight: 0,
    });
    expect(filtered.candidates).toHaveLength(1);
  });

  it('never takes context across a session or a namespace', () => {
    t.store.write([
      turn('b1', 'the zeppelin launch is secret', 0, 's1', 'b'),
      turn('a1', 'first turn of a', 1, 's1', 'a'),
      turn('a2', 'second turn of a', 2, 's1', 'a'),
      turn('a3', 'a turn in another session', 3, 's2', 'a'),
    ]);
    expect(contextOf(t.store, 'a', 'a1')).toBe('');
    expect(contextOf(t.store, 'a', 'a2')).toBe('first turn of a');
    expect(contextOf(t.store, 'a', 'a3')).toBe('');
    expect(searchIds(t.store, 'a', 'zeppelin')).toEqual([]);
  });

  it('gives context only to the configured kinds', () => {
    t.store.write([
      turn('q', 'Which database did we pick?', 0),
      mem({ id: 'o', text: 'Observed a flaky test', kind: 'observation', session: 's1', ts: at(1) }),
    ]);
    expect(contextOf(t.store, 'ns', 'o')).toBe('');
    const custom = new MemoryStore({ path: join(t.dir, 'custom.db'), context: { kinds: ['observation'] } });
    try {
      custom.write([
        turn('q', 'Which database did we pick?', 0),
        mem({ id: 'o', text: 'Observed a flaky test', kind: 'observation', session: 's1', ts: at(1) }),
      ]);
      expect(contextOf(custom, 'ns', 'o')).toBe('Which database did we pick?');
    } finally {
      custom.close();
    }
  });

  it('indexes a turn by the reply it got too, with the `after` option', () => {
    t.store.write([turn('q', 'Did you ever finish it?', 0), turn('a', 'Yes, the pottery class ended', 1)]);
    // By default only what a turn answers is its context.
    expect(contextOf(t.store, 'ns', 'q')).toBe('');
    expect(contextOf(t.store, 'ns', 'a')).toBe('Did you ever finish it?');
    const both = new MemoryStore({ path: join(t.dir, 'both.db'), context: { after: true } });
    try {
      both.write([
        turn('q', 'Did you ever finish it?', 0),
        turn('a', 'Yes, the pottery class ended last week', 1),
        turn('q2', 'What is next?', 2, 's2'),
      ]);
      expect(contextOf(both, 'ns', 'q')).toBe('Yes, the pottery class ended last week');
      expect(searchIds(both, 'ns', 'pottery')).toEqual(['a', 'q']);
    } finally {
      both.close();
    }
  });

  it('re-derives the next turn when a turn arrives late, moves, or is deleted, and search follows', () => {
    t.store.write([turn('t1', 'alpha', 0), turn('t3', 'gamma', 2)]);
    expect(contextOf(t.store, 'ns', 't3')).toBe('alpha');
    // Warm the postings cache so the test sees it follow the rewrites.
    expect(searchIds(t.store, 'ns', 'beta')).toEqual([]);
    t.store.write([turn('t2', 'beta', 1)]);
    expect(contextOf(t.store, 'ns', 't2')).toBe('alpha');
    expect(contextOf(t.store, 'ns', 't3')).toBe('beta');
    expect(searchIds(t.store, 'ns', 'beta')).toEqual(['t2', 't3']);

    // t2 moves to another session (the same text: a metadata-only rewrite): t3 follows t1 again, and
    // searches see both contexts change, warm caches included.
    expect(searchIds(t.store, 'ns', 'alpha')).toEqual(['t1', 't2']);
    t.store.write([turn('t2', 'beta', 1, 's9')]);
    expect(contextOf(t.store, 'ns', 't3')).toBe('alpha');
    expect(contextOf(t.store, 'ns', 't2')).toBe('');
    expect(searchIds(t.store, 'ns', 'beta')).toEqual(['t2']);
    expect(searchIds(t.store, 'ns', 'alpha')).toEqual(['t1', 't3']);

    // A deleted memory's words leave its successor's context at once.
    t.store.write([turn('t2', 'beta', 1)]);
    expect(searchIds(t.store, 'ns', 'beta')).toEqual(['t2', 't3']);
    expect(t.store.delete('ns', 't2')).toBe(true);
    expect(contextOf(t.store, 'ns', 't3')).toBe('alpha');
    expect(searchIds(t.store, 'ns', 'beta')).toEqual([]);
    assertFtsIntegrity(t.store);
  });

  it('with `after`, re-derives both neighbours when a turn arrives late, moves, or is deleted', () => {
    const sorted = (ids: string[]) => [...ids].sort();
    t.cleanup();
    t = openTempStore('cairn-context-after-', { context: { after: true } });
    t.store.write([turn('t1', 'alpha', 0), turn('t3', 'gamma', 2)]);
    expect(contextOf(t.store, 'ns', 't3')).toBe('alpha');
    expect(contextOf(t.store, 'ns', 't1')).toBe('gamma');
    // Warm the postings cache so the test sees it follow the rewrites.
    expect(searchIds(t.store, 'ns', 'beta')).toEqual([]);
    t.store.write([turn('t2', 'beta', 1)]);
    expect(contextOf(t.store, 'ns', 't2')).toBe('alpha\ngamma');
    expect(contextOf(t.store, 'ns', 't3')).toBe('beta');
    expect(contextOf(t.store, 'ns', 't1')).toBe('beta');
    expect(sorted(searchIds(t.store, 'ns', 'beta'))).toEqual(['t1', 't2', 't3']);
    expect(searchIds(t.store, 'ns', 'beta')[0]).toBe('t2');

    // t2 moves to another session (the same text: a metadata-only rewrite): t1 and t3 are neighbours
    // again, and searches see every context change, warm caches included.
    expect(sorted(searchIds(t.store, 'ns', 'alpha'))).toEqual(['t1', 't2']);
    t.store.write([turn('t2', 'beta', 1, 's9')]);
    expect(contextOf(t.store, 'ns', 't3')).toBe('alpha');
    expect(contextOf(t.store, 'ns', 't1')).toBe('gamma');
    expect(contextOf(t.store, 'ns', 't2')).toBe('');
    expect(searchIds(t.store, 'ns', 'beta')).toEqual(['t2']);
    expect(sorted(searchIds(t.store, 'ns', 'alpha'))).toEqual(['t1', 't3']);

    // A deleted memory's words leave both neighbours' contexts at once.
    t.store.write([turn('t2', 'beta', 1)]);
    expect(sorted(searchIds(t.store, 'ns', 'beta'))).toEqual(['t1', 't2', 't3']);
    expect(t.store.delete('ns', 't2')).toBe(true);
    expect(contextOf(t.store, 'ns', 't3')).toBe('alpha');
    expect(contextOf(t.store, 'ns', 't1')).toBe('gamma');
    expect(searchIds(t.store, 'ns', 'beta')).toEqual([]);
    assertFtsIntegrity(t.store);
  });

  it('property: after any writes, moves and deletes, every live turn carries its live neighbours, and only them', () => {
    const op = fc.record({
      id: fc.constantFrom('m1', 'm2', 'm3', 'm4', 'm5'),
      namespace: fc.constantFrom('a', 'b'),
      session: fc.constantFrom('s1', 's2', null),
      minute: fc.integer({ min: 0, max: 4 }),
      word: fc.constantFrom('red', 'green', 'blue', 'amber'),
      kind: fc.constantFrom('turn', 'turn', 'observation'),
      del: fc.boolean(),
    });
    fc.assert(
      fc.property(fc.array(op, { minLength: 1, maxLength: 25 }), fc.boolean(), (ops, after) => {
        const s = new MemoryStore({ path: join(t.dir, `p-${Math.random()}.db`), context: { after } });
        try {
          for (const o of ops) {
            if (o.del) s.delete(o.namespace, o.id);
            else
              s.write([
                mem({
                  namespace: o.namespace,
                  id: o.id,
                  text: `${o.word} ${o.id}`,
                  kind: o.kind,
                  ts: at(o.minute),
                  ...(o.session ? { session: o.session } : {}),
                }),
              ]);
          }
          const rows = s.db
            .prepare(
              'SELECT key, namespace, session, kind, ts, text, context FROM memories WHERE deleted_at IS NULL',
            )
            .all() as Array<{
            key: number;
            namespace: string;
            session: string | null;
            kind: string;
            ts: number;
            text: string;
            context: string;
          }>;
          for (const r of rows) {
            const sameSession = rows.filter(
              (p) => r.session !== null && p.namespace === r.namespace && p.session === r.session,
            );
            const before = sameSession
              .filter((p) => p.ts < r.ts || (p.ts === r.ts && p.key < r.key))
              .sort((x, y) => y.ts - x.ts || y.key - x.key)[0];
            const next = sameSession
              .filter((p) => p.ts > r.ts || (p.ts === r.ts && p.key > r.key))
              .sort((x, y) => x.ts - y.ts || x.key - y.key)[0];
            const sides = [before?.text, after ? next?.text : undefined].filter((x) => x !== undefined);
            expect(r.context).toBe(r.kind === 'turn' ? sides.join('\n') : '');
          }
          assertFtsIntegrity(s);
        } finally {
          s.close();
        }
      }),
      { numRuns: 60 },
    );
  });
});

describe('migration 6: contextual indexing', () => {
  it('derives the context of existing turns and rebuilds the index with it', () => {
    const path = join(t.dir, 'v5.db');
    const v5 = new Database(path);
    migrate(v5, MIGRATIONS.slice(0, 5));
    const insert = v5.prepare(
      `INSERT INTO memories (namespace, id, kind, title, text, parts, scope, session, ts, tags, meta, importance,
         content_hash, fingerprint, created_at, updated_at, change_seq)
       VALUES (?, ?, 'turn', NULL, ?, '', ?, ?, ?, '[]', '{}', 0.5, ?, 'f', 0, 0, ?)`,
    );
    // The scope column as a writer of that version filled it: the namespace's token first.
    insert.run('ns', 'q', 'Where is the lighthouse?', scopeToken('ns'), 's1', 0, 'h1', 1);
    insert.run('ns', 'a', 'On the northern cape', scopeToken('ns'), 's1', 1, 'h2', 2);
    insert.run('other', 'x', 'unrelated', scopeToken('other'), 's1', 0, 'h3', 3);
    v5.close();
    const store = new MemoryStore({ path });
    try {
      expect(contextOf(store, 'ns', 'a')).toBe('Where is the lighthouse?');
      expect(contextOf(store, 'ns', 'q')).toBe('');
      expect(searchIds(store, 'ns', 'lighthouse')).toEqual(['q', 'a']);
      assertFtsIntegrity(store);
    } finally {
      store.close();
    }
  });
});
