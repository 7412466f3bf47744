import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CairnError, embeddingSpaceOf } from '@cairn/core';
import { MemoryStore, MIGRATIONS, type Migration, migrate, openDatabase } from '@cairn/store';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { scopeText } from '../src/facet-tokens.js';
import { cairnErrorFrom, mem } from './helpers.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'cairn-migrations-'));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

const LATEST = MIGRATIONS.at(-1)!.version;

describe('migrate', () => {
  it('creates the schema and sets user_version to the latest migration', () => {
    const db = openDatabase(join(dir, 'a.db'));
    try {
      expect(db.pragma('user_version', { simple: true })).toBe(LATEST);
      const tables = db
        .prepare("SELECT name FROM sqlite_master WHERE type IN ('table') ORDER BY name")
        .pluck()
        .all();
      expect(tables).toEqual(
        expect.arrayContaining([
          'memories',
          'memories_fts',
          'embeddings',
          'embedding_spaces',
          'embed_failures',
        ]),
      );
    } finally {
      db.close();
    }
  });

  it('creates parent folders of the database path', () => {
    const path = join(dir, 'deep', 'er', 'c.db');
    openDatabase(path).close();
    expect(existsSync(path)).toBe(true);
  });

  it('opens in WAL mode', () => {
    const db = openDatabase(join(dir, 'a.db'));
    try {
      expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
      expect(db.pragma('foreign_keys', { simple: true })).toBe(1);
    } finally {
      db.close();
    }
  });

  it('reopens an existing database without re-running migrations or losing data', () => {
    const path = join(dir, 'a.db');
    const s1 = new MemoryStore({ path });
    s1.write([mem({ id: 'x', text: 'kept across reopen' })]);
    s1.close();
    const s2 = new MemoryStore({ path });
    try {
      expect(s2.db.pragma('user_version', { simple: true })).toBe(LATEST);
      expect(s2.get('ns', ['x']).memories[0]?.text).toBe('kept across reopen');
    } finally {
      s2.close();
    }
  });

  it('refuses a database whose schema is newer than this build, with STORAGE_ERROR', () => {
    const path = join(dir, 'future.db');
    const raw = new Database(path);
    raw.pragma(`user_version = ${LATEST + 1}`);
    raw.close();
    const err = cairnErrorFrom(() => openDatabase(path));
    expect(err).toBeInstanceOf(CairnError);
    expect(err.code).toBe('STORAGE_ERROR');
    expect(err.message).toContain(String(LATEST + 1));
    expect(cairnErrorFrom(() => new MemoryStore({ path })).code).toBe('STORAGE_ERROR');
  });

  it('applies only migrations newer than user_version, in order', () => {
    const db = new Database(join(dir, 'custom.db'));
    try {
      const ran: number[] = [];
      const steps: Migration[] = [1, 2, 3].map((version) => ({
        version,
        description: `step ${version}`,
        up(d) {
          ran.push(version);
          d.exec(`CREATE TABLE t${version} (x)`);
        },
      }));
      expect(migrate(db, steps.slice(0, 2))).toBe(2);
      expect(ran).toEqual([1, 2]);
      expect(migrate(db, steps)).toBe(3);
      expect(ran).toEqual([1, 2, 3]);
      expect(db.pragma('user_version', { simple: true })).toBe(3);
      expect(migrate(db, steps)).toBe(3);
      expect(ran).toEqual([1, 2, 3]);
    } finally {
      db.close();
    }
  });

  it('rolls a failing migration back entirely, leaving user_version at the last good step', () => {
    const db = new Database(join(dir, 'failing.db'));
    try {
      const steps: Migration[] = [
        { version: 1, description: 'ok', up: (d) => d.exec('CREATE TABLE good (x)') },
        {
          version: 2,
          description: 'fails halfway',
          up(d) {
            d.exec('CREATE TABLE half (x)');
            throw new Error('boom');
          },
        },
      ];
      expect(() => migrate(db, steps)).toThrow('boom');
      expect(db.pragma('user_version', { simple: true })).toBe(1);
      const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").pluck().all();
      expect(tables).toContain('good');
      expect(tables).not.toContain('half');
    } finally {
      db.close();
    }
  });
});

describe('migration 2: filter facets in the FTS scope column', () => {
  it('re-tokenises memories stored under schema 1 so filtered searches find them', () => {
    const path = join(dir, 'v1.db');
    const v1 = new Database(path);
    migrate(v1, MIGRATIONS.slice(0, 1));
    v1.prepare(
      `INSERT INTO memories (namespace, id, kind, title, text, parts, scope, session, agent, ts, tags, meta,
         importance, content_hash, fingerprint, created_at, updated_at, change_seq)
       VALUES ('ns', 'old', 'fact', NULL, 'redis runs with appendonly', '', 'ns0000000000000000', 's1', 'bot', 0,
         '["infra"]', '{}', 0.5, 'h', 'f', 0, 0, 1)`,
    ).run();
    v1.close();
    const store = new MemoryStore({ path });
    try {
      expect(store.db.pragma('user_version', { simple: true })).toBe(LATEST);
      for (const filters of [
        { kinds: ['fact'] },
        { tags: ['infra'] },
        { sessions: ['s1'] },
        { agents: ['bot'] },
        { since: 0, until: 1 },
      ]) {
        const res = store.lexical.searchLexical({ namespace: 'ns', query: 'redis', filters, limit: 5 });
        expect(res.candidates).toHaveLength(1);
      }
      expect(
        store.lexical.searchLexical({
          namespace: 'ns',
          query: 'redis',
          filters: { kinds: ['turn'] },
          limit: 5,
        }).candidates,
      ).toEqual([]);
    } finally {
      store.close();
    }
  });
});

describe('migration 11: fact ids', () => {
  it('renames a fact stored under the old id form of a slot with a colon, and nothing else', () => {
    const path = join(dir, 'v10.db');
    const v10 = new Database(path);
    migrate(
      v10,
      MIGRATIONS.filter((m) => m.version <= 10),
    );
    const insert = v10.prepare(
      `INSERT INTO memories (namespace, id, kind, title, text, parts, scope, session, agent, ts, tags, meta,
         importance, content_hash, fingerprint, created_at, updated_at, change_seq)
       VALUES ('ns', ?, 'fact', NULL, ?, '', 'ns0000000000000000', NULL, NULL, 0, '[]', ?, 0.5, ?, 'f', 0, 0, ?)`,
    );
    insert.run('fact:user:home:city', 'Lisbon', '{"slot":"user:home","key":"city"}', 'h1', 1);
    insert.run('fact:prefs:editor', 'vim', '{"slot":"prefs","key":"editor"}', 'h2', 2);
    // Its id is not the old derivation of its meta: a caller's own id, left alone.
    insert.run('fact:mine', 'own id', '{"slot":"a:b","key":"c"}', 'h3', 3);
    // Written again under the new id before the migration: the old row is superseded by it, not renamed.
    insert.run('fact:x:y:z', 'old value', '{"slot":"x:y","key":"z"}', 'h4', 4);
    insert.run('fact::3:x:y:z', 'new value', '{"slot":"x:y","key":"z"}', 'h5', 5);
    v10.close();
    const store = new MemoryStore({ path });
    try {
      const rows = store.db.prepare('SELECT id, superseded_by AS by FROM memories ORDER BY key').all();
      expect(rows).toEqual([
        { id: 'fact::9:user:home:city', by: null },
        { id: 'fact:prefs:editor', by: null },
        { id: 'fact:mine', by: null },
        { id: 'fact:x:y:z', by: 'fact::3:x:y:z' },
        { id: 'fact::3:x:y:z', by: null },
      ]);
    } finally {
      store.close();
    }
  });
});

describe('migration 14: fact slots as a filter facet', () => {
  it('gives facts stored under schema 13 their slot token, so every filtered path finds them', async () => {
    const path = join(dir, 'v13.db');
    const v13 = new Database(path);
    migrate(
      v13,
      MIGRATIONS.filter((m) => m.version <= 13),
    );
    const insert = v13.prepare(
      `INSERT INTO memories (namespace, id, kind, title, text, parts, scope, session, agent, ts, tags, meta,
         importance, content_hash, fingerprint, created_at, updated_at, change_seq, meta_seq)
       VALUES ('ns', ?, 'fact', NULL, ?, '', ?, NULL, NULL, 0, '[]', ?, 0.5, ?, 'f', 0, 0, ?, ?)`,
    );
    const scope = scopeText({ namespace: 'ns', kind: 'fact', agent: null, session: null, tags: [], ts: 0 });
    insert.run(
      'fact:prefs:editor',
      'the editor is vim',
      scope,
      '{"slot":"prefs","key":"editor"}',
      'h1',
      1,
      1,
    );
    insert.run(
      'fact:env:region',
      'the region is eu-west',
      scope,
      '{"slot":"env","key":"region"}',
      'h2',
      2,
      2,
    );
    insert.run('note', 'the editor debate again', scope, '{}', 'h3', 3, 3);
    v13.close();
    const store = new MemoryStore({ path });
    try {
      const lexical = store.lexical.searchLexical({
        namespace: 'ns',
        query: 'editor',
        filters: { slots: ['prefs'] },
        limit: 10,
      });
      expect(lexical.candidates).toHaveLength(1);
      const keys = store.db.prepare('SELECT key FROM memories ORDER BY key').pluck().all() as number[];
      expect([...store.allowedKeys('ns', keys, { slots: ['prefs'] })]).toEqual([keys[0]]);
      expect(
        store
          .list('ns', { slots: ['env', 'prefs'] }, 10)
          .map((m) => m.id)
          .sort(),
      ).toEqual(['fact:env:region', 'fact:prefs:editor']);
    } finally {
      store.close();
    }
  });
});

describe('several processes opening a fresh folder at once', () => {
  it('migrate it once between them: none runs a migration another already ran', async () => {
    const path = join(dir, 'fresh.db');
    const storeDist = new URL('../dist/index.js', import.meta.url).href;
    // Each child waits for the same instant, then opens the store (which migrates).
    const at = Date.now() + 1_500;
    const script = `const { MemoryStore } = await import(${JSON.stringify(storeDist)});
      while (Date.now() < ${at}) {}
      new MemoryStore({ path: ${JSON.stringify(path)} }).close();`;
    const children = Array.from({ length: 6 }, () =>
      spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'ignore', 'pipe'] }),
    );
    const results = await Promise.all(
      children.map(
        (c) =>
          new Promise<{ code: number | null; err: string }>((resolve) => {
            let err = '';
            c.stderr!.on('data', (d) => {
              err += d;
            });
            c.on('exit', (code) => resolve({ code, err }));
          }),
      ),
    );
    expect(results.filter((r) => r.code !== 0)).toEqual([]);
    const db = openDatabase(path);
    try {
      expect(db.pragma('user_version', { simple: true })).toBe(LATEST);
    } finally {
      db.close();
    }
  });
});

describe('migration 27: the statistics table made with the schema', () => {
  it("closing a new store changes no schema version another process's statements depend on", () => {
    const path = join(dir, 'stat.db');
    const store = new MemoryStore({ path });
    store.write([mem({ namespace: 'ns', id: 'a', text: 'alpha' })]);
    const before = store.db.pragma('schema_version', { simple: true });
    // The close's `PRAGMA optimize` used to create sqlite_stat1 here: a schema change that made another
    // process opening the folder at that moment fail on its FTS5 tables (SQLITE_SCHEMA).
    store.close();
    const db = new Database(path, { readonly: true });
    try {
      expect(db.pragma('schema_version', { simple: true })).toBe(before);
      expect(db.prepare("SELECT 1 FROM sqlite_schema WHERE name = 'sqlite_stat1'").get()).toBeDefined();
    } finally {
      db.close();
    }
  });
});

describe('migration 5: embeddings carry the order they were written in', () => {
  it('keeps the old order for stored vectors and continues the clock above it', () => {
    const path = join(dir, 'v4.db');
    const v4 = new Database(path);
    migrate(v4, MIGRATIONS.slice(0, 4));
    v4.prepare(
      "INSERT INTO embedding_spaces (id, model_id, dimensions, created_at, active) VALUES ('s', 'm', 4, 0, 1)",
    ).run();
    for (const [id, seq] of [
      ['a', 7],
      ['b', 3],
    ] as const) {
      const key = v4
        .prepare(
          `INSERT INTO memories (namespace, id, kind, title, text, parts, scope, ts, tags, meta, importance,
             content_hash, fingerprint, created_at, updated_at, change_seq)
           VALUES ('ns', ?, 'turn', NULL, 't', '', '', 0, '[]', '{}', 0.5, ?, 'f', 0, 0, ?)`,
        )
        .run(id, id, seq).lastInsertRowid;
      v4.prepare(
        `INSERT INTO embeddings (space, key, namespace, content_hash, seq, vector) VALUES ('s', ?, 'ns', ?, ?, zeroblob(16))`,
      ).run(key, id, seq);
    }
    v4.close();
    const store = new MemoryStore({ path });
    try {
      expect([...store.embeddings.iterate('s', 'ns')].map((e) => e.writeSeq)).toEqual([3, 7]);
      store.write([mem({ namespace: 'ns', id: 'c', text: 'new' })]);
      const space = store.spaces.getSpace('s')!;
      const pending = store.embeddings.pending('s', 10).filter((p) => p.text === 'new');
      const [stored] = store.embeddings.put(space, [{ memory: pending[0]!, vector: new Float32Array(4) }]);
      expect(stored!.writeSeq).toBe(8);
    } finally {
      store.close();
    }
  });
});

describe('openDatabase', () => {
  it('refuses to open a missing file read-only, with STORAGE_ERROR', () => {
    expect(cairnErrorFrom(() => openDatabase(join(dir, 'missing.db'), { readonly: true })).code).toBe(
      'STORAGE_ERROR',
    );
  });

  it('refuses writes through a read-only store', () => {
    const path = join(dir, 'ro.db');
    new MemoryStore({ path }).close();
    const ro = new MemoryStore({ path, readonly: true });
    try {
      expect(cairnErrorFrom(() => ro.write([mem({ text: 'x' })])).code).toBe('STORAGE_ERROR');
    } finally {
      ro.close();
    }
  });

  it('lets a read-only store read and search without bumping access counts', () => {
    const path = join(dir, 'ro.db');
    const rw = new MemoryStore({ path });
    rw.write([mem({ id: 'a', text: 'readable from a read-only handle' })]);
    rw.close();
    const ro = new MemoryStore({ path, readonly: true });
    try {
      const got = ro.get('ns', ['a']);
      expect(got.memories[0]?.accessCount).toBe(0);
      expect(
        ro.lexical.searchLexical({ namespace: 'ns', query: 'readable', filters: {}, limit: 5 }).candidates,
      ).toHaveLength(1);
    } finally {
      ro.close();
    }
  });
});

describe('migration 17: row counts per namespace', () => {
  const counted = (db: Database.Database) =>
    db
      .prepare('SELECT namespace, count(*) AS rows FROM memories GROUP BY namespace ORDER BY namespace')
      .all();
  const kept = (db: Database.Database) =>
    db.prepare('SELECT namespace, rows FROM namespace_rows WHERE rows > 0 ORDER BY namespace').all();

  it('counts the rows stored before it, then keeps the count through inserts, rewrites and deletes', () => {
    const path = join(dir, 'v16.db');
    const v16 = new Database(path);
    migrate(
      v16,
      MIGRATIONS.filter((m) => m.version <= 16),
    );
    // Rows written under schema 16, before the triggers exist.
    const insert = v16.prepare(
      `INSERT INTO memories (namespace, id, kind, title, text, parts, scope, session, agent, ts, tags, meta,
         importance, content_hash, fingerprint, created_at, updated_at, change_seq, meta_seq)
       VALUES (?, ?, 'observation', NULL, ?, '', '', NULL, NULL, 0, '[]', '{}', 0.5, ?, 'f', 0, 0, ?, ?)`,
    );
    insert.run('ns', 'a', 'one', 'h1', 1, 1);
    insert.run('ns', 'b', 'two', 'h2', 2, 2);
    insert.run('other', 'c', 'x', 'h3', 3, 3);
    v16.close();
    const store = new MemoryStore({ path });
    try {
      expect(kept(store.db)).toEqual(counted(store.db));
      expect(kept(store.db)).toEqual([
        { namespace: 'ns', rows: 2 },
        { namespace: 'other', rows: 1 },
      ]);
      store.write([mem({ id: 'd', text: 'three' }), mem({ id: 'a', text: 'one, rewritten' })]);
      store.write([mem({ id: 'e', namespace: 'third', text: 'y' })]);
      expect(kept(store.db)).toEqual(counted(store.db));
      store.db.prepare("DELETE FROM memories WHERE id = 'c'").run();
      expect(kept(store.db)).toEqual(counted(store.db));
      expect(kept(store.db)).toEqual([
        { namespace: 'ns', rows: 3 },
        { namespace: 'third', rows: 1 },
      ]);
    } finally {
      store.close();
    }
  });
});

describe('migration 26: when each vector was first written', () => {
  it("leaves an older vector's first write unknown until its next rewrite records the write before it", () => {
    const path = join(dir, 'v25.db');
    const space = embeddingSpaceOf({ modelId: 'm26', dimensions: 2 });
    // Each in a session of its own, so a write rewrites no neighbour's context.
    const note = (id: string, text: string) => mem({ namespace: 'ns', id, text, session: `s-${id}` });
    const embed = (store: MemoryStore) => {
      const pending = store.embeddings.pending(space.id, 100);
      return store.embeddings.put(
        space,
        pending.map((memory) => ({ memory, vector: new Float32Array([1, memory.key]) })),
        Math.max(0, ...pending.map((p) => p.changeSeq)),
      );
    };
    let store = new MemoryStore({ path });
    store.spaces.ensureSpace(space);
    store.write([note('a', 'alpha'), note('b', 'beta')]);
    const [a, b] = embed(store);
    store.close();
    // The database as migration 25 left it: no column.
    const raw = new Database(path);
    raw.exec('ALTER TABLE embeddings DROP COLUMN first_write_seq');
    raw.exec('ALTER TABLE term_postings DROP COLUMN idf');
    raw.exec('DROP INDEX memories_superseded_by');
    raw.pragma('user_version = 25');
    raw.close();

    store = new MemoryStore({ path });
    try {
      const watermark = Math.max(a!.writeSeq, b!.writeSeq);
      expect(store.embeddings.countRewrittenAfter(space.id, 'ns', watermark)).toBe(0);
      // `a` rewritten (its old vector is what a graph saved at the watermark holds), `c` new.
      store.write([note('a', 'alpha again'), note('c', 'gamma')]);
      expect(embed(store)).toHaveLength(2);
      expect(store.embeddings.countWrittenAfter(space.id, 'ns', watermark)).toBe(2);
      expect(store.embeddings.countRewrittenAfter(space.id, 'ns', watermark)).toBe(1);
      // Rewritten again: still one vector the graph holds.
      store.write([note('a', 'alpha, a third time')]);
      embed(store);
      expect(store.embeddings.countRewrittenAfter(space.id, 'ns', watermark)).toBe(1);
      // Deleted, then written anew: its vector is new, the graph's copy goes with the delete.
      store.delete('ns', 'a');
      store.write([note('a', 'alpha reborn')]);
      embed(store);
      expect(store.embeddings.countRewrittenAfter(space.id, 'ns', watermark)).toBe(0);
    } finally {
      store.close();
    }
  });
});
