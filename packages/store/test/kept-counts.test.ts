import { embeddingSpaceOf, type PendingMemory } from '@cairn/core';
import { keptCountsDrift, MemoryStore, MIGRATIONS, migrate, recountKeptCounts } from '@cairn/store';
import Database from 'better-sqlite3';
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mem, openTempStore, T0, type TempStore } from './helpers.js';

let t: TempStore;
beforeEach(() => {
  t = openTempStore('cairn-kept-counts-');
});
afterEach(() => {
  t.cleanup();
});

const A = embeddingSpaceOf({ modelId: 'a', dimensions: 2 });
const B = embeddingSpaceOf({ modelId: 'b', dimensions: 2 });
const NAMESPACES = ['ns', 'other'] as const;
const DAY = 86_400_000;

/** The progress figures by their definition, joining every vector with its memory. */
function countedProgress(store: MemoryStore, spaceId: string) {
  return store.db
    .prepare(
      `SELECT
         (SELECT count(*) FROM memories WHERE deleted_at IS NULL) AS total,
         (SELECT count(*) FROM embeddings e JOIN memories m ON m.key = e.key
            WHERE e.space = ? AND m.deleted_at IS NULL AND e.seq = m.change_seq) AS embedded`,
    )
    .get(spaceId) as { total: number; embedded: number };
}

function countedNamespaces(store: MemoryStore) {
  return store.db
    .prepare(
      `SELECT namespace,
         sum(superseded_by IS NULL AND deleted_at IS NULL) AS live,
         sum(superseded_by IS NOT NULL AND deleted_at IS NULL) AS superseded,
         sum(deleted_at IS NOT NULL) AS deleted
       FROM memories GROUP BY namespace ORDER BY namespace`,
    )
    .all();
}

const op = fc.oneof(
  fc.record({
    type: fc.constant('write' as const),
    namespace: fc.constantFrom(...NAMESPACES),
    id: fc.integer({ min: 0, max: 7 }),
    // Two texts per id: writing the other one changes change_seq, the same one only its metadata.
    text: fc.constantFrom('redis timeout', 'kafka lag'),
    session: fc.option(fc.constantFrom('s1', 's2'), { nil: undefined }),
    day: fc.integer({ min: 0, max: 5 }),
    supersedes: fc.option(fc.integer({ min: 0, max: 7 }), { nil: undefined }),
  }),
  fc.record({
    type: fc.constant('delete' as const),
    namespace: fc.constantFrom(...NAMESPACES),
    id: fc.integer({ min: 0, max: 7 }),
  }),
  // Embeds up to `n` pending memories of the space; `stale` first reads them, then rewrites one, so its
  // vector is of a text it no longer has (put stores nothing for it).
  fc.record({
    type: fc.constant('embed' as const),
    space: fc.constantFrom(A, B),
    n: fc.integer({ min: 1, max: 6 }),
    stale: fc.boolean(),
  }),
  fc.record({ type: fc.constant('fail' as const), space: fc.constantFrom(A, B) }),
  fc.record({ type: fc.constant('dropB' as const) }),
  // No code path removes a memory's row today; the counts must survive one (the foreign keys cascade).
  fc.record({
    type: fc.constant('purge' as const),
    namespace: fc.constantFrom(...NAMESPACES),
    id: fc.integer({ min: 0, max: 7 }),
  }),
);
type Op = typeof op extends fc.Arbitrary<infer T> ? T : never;

function apply(store: MemoryStore, o: Op): void {
  switch (o.type) {
    case 'write':
      store.write([
        mem({
          namespace: o.namespace,
          id: `m${o.id}`,
          text: o.text,
          ts: T0 + o.day * DAY,
          ...(o.session === undefined ? {} : { session: o.session }),
          supersedes: o.supersedes === undefined ? [] : [`m${o.supersedes}`],
        }),
      ]);
      return;
    case 'delete':
      store.delete(o.namespace, `m${o.id}`);
      return;
    case 'embed': {
      store.spaces.ensureSpace(o.space, { state: 'ready' });
      const items: PendingMemory[] = store.embeddings.pending(o.space.id, o.n);
      if (o.stale && items[0]) {
        const row = store.db
          .prepare('SELECT namespace, id, text FROM memories WHERE key = ?')
          .get(items[0].key) as {
          namespace: string;
          id: string;
          text: string;
        };
        store.write([mem({ namespace: row.namespace, id: row.id, text: `${row.text}, again` })]);
      }
      store.embeddings.put(
        o.space,
        items.map((memory) => ({ memory, vector: new Float32Array([1, memory.key]) })),
        Math.max(0, ...items.map((m) => m.changeSeq)),
      );
      return;
    }
    case 'fail': {
      store.spaces.ensureSpace(o.space, { state: 'ready' });
      const [first] = store.embeddings.pending(o.space.id, 1);
      if (first)
        store.embeddings.recordFailures(o.space.id, [{ key: first.key, error: 'refused' }], first.changeSeq);
      return;
    }
    case 'purge':
      store.db.prepare('DELETE FROM memories WHERE namespace = ? AND id = ?').run(o.namespace, `m${o.id}`);
      return;
    case 'dropB':
      if (store.spaces.getSpace(B.id) && !store.spaces.getSpace(B.id)!.active) store.spaces.drop(B.id);
      return;
  }
}

describe('counts kept by triggers (migrations 17 and 18)', () => {
  it('agree with the tables after any interleaving of writes, rewrites, supersessions, deletes, vectors, failures and drops', () => {
    let runs = 0;
    fc.assert(
      fc.property(fc.array(fc.array(op, { maxLength: 8 }), { minLength: 1, maxLength: 6 }), (rounds) => {
        // A database per run: a count that drifted in one run must not surface as another run's failure.
        const store = new MemoryStore({ path: `${t.dir}/run-${runs++}.db` });
        try {
          for (const ops of rounds) {
            for (const o of ops) apply(store, o);
            expect(keptCountsDrift(store.db)).toEqual([]);
            expect(store.namespaces()).toEqual(countedNamespaces(store));
            for (const s of store.spaces.listSpaces()) {
              const p = store.spaces.progress(s.id);
              expect({ total: p.total, embedded: p.embedded }).toEqual(countedProgress(store, s.id));
              for (const ns of NAMESPACES)
                expect(store.embeddings.currentCount(s.id, ns)).toBe(
                  store.db
                    .prepare(
                      `SELECT count(*) FROM embeddings e JOIN memories m ON m.key = e.key
                     WHERE e.space = ? AND m.namespace = ? AND m.deleted_at IS NULL AND e.seq = m.change_seq`,
                    )
                    .pluck()
                    .get(s.id, ns),
                );
            }
          }
        } finally {
          store.close();
        }
      }),
      { numRuns: 60 },
    );
  });

  it('counts what was stored before migration 18, and a recount repairs counts that drifted', () => {
    const path = `${t.dir}/v17.db`;
    const v17 = new Database(path);
    migrate(
      v17,
      MIGRATIONS.filter((m) => m.version <= 17),
    );
    v17.close();
    // Memories and vectors written under schema 17, through a store of that schema's tables.
    const old = new Database(path);
    const insert = old.prepare(
      `INSERT INTO memories (namespace, id, kind, title, text, parts, scope, session, agent, ts, tags, meta,
         importance, content_hash, fingerprint, created_at, updated_at, change_seq, meta_seq, deleted_at, superseded_by)
       VALUES (?, ?, 'observation', NULL, ?, '', '', NULL, NULL, 0, '[]', '{}', 0.5, ?, 'f', 0, 0, ?, ?, ?, ?)`,
    );
    insert.run('ns', 'a', 'one', 'h1', 1, 1, null, null);
    insert.run('ns', 'b', 'two', 'h2', 2, 2, null, 'a');
    insert.run('ns', 'c', 'three', 'h3', 3, 3, 5, null);
    insert.run('other', 'd', 'four', 'h4', 4, 4, null, null);
    old
      .prepare(
        "INSERT INTO embedding_spaces (id, model_id, dimensions, created_at, active) VALUES ('a/2', 'a', 2, 0, 1)",
      )
      .run();
    const vector = old.prepare(
      "INSERT INTO embeddings (space, key, namespace, content_hash, seq, vector, write_seq) SELECT 'a/2', key, namespace, content_hash, ?, x'00000000', key FROM memories WHERE id = ?",
    );
    vector.run(1, 'a'); // current
    vector.run(1, 'b'); // stale: b is at change_seq 2
    vector.run(4, 'd'); // current
    old.close();

    const store = new MemoryStore({ path });
    try {
      expect(keptCountsDrift(store.db)).toEqual([]);
      expect(store.namespaces()).toEqual([
        { namespace: 'ns', live: 1, superseded: 1, deleted: 1 },
        { namespace: 'other', live: 1, superseded: 0, deleted: 0 },
      ]);
      expect(store.spaces.progress('a/2')).toEqual({ space: 'a/2', total: 3, embedded: 2, failed: 0 });
      store.db.prepare("UPDATE space_vectors SET current = 7 WHERE namespace = 'ns'").run();
      store.db.prepare("UPDATE namespace_rows SET live = 0 WHERE namespace = 'other'").run();
      expect(keptCountsDrift(store.db)).toHaveLength(2);
      recountKeptCounts(store.db);
      expect(keptCountsDrift(store.db)).toEqual([]);
    } finally {
      store.close();
    }
  });
});
