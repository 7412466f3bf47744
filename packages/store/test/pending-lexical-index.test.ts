import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mem, openTempStore, searchIds, T0, type TempStore } from './helpers.js';

let t: TempStore;
beforeEach(() => {
  t = openTempStore('cairn-pending-fts-');
});
afterEach(() => {
  t.cleanup();
});

/** FTS5's own check that each index holds exactly what its content table says (throws when not). */
function assertIndexesMatchRows(): void {
  t.store.db.prepare("INSERT INTO memories_fts (memories_fts, rank) VALUES ('integrity-check', 1)").run();
  t.store.db.prepare("INSERT INTO routes_fts (routes_fts, rank) VALUES ('integrity-check', 1)").run();
}

function routeMatches(word: string): number {
  return t.store.db
    .prepare('SELECT count(*) FROM routes_fts WHERE routes_fts MATCH ?')
    .pluck()
    .get(word) as number;
}

describe('new rows indexed at the end of their batch', () => {
  it('indexes every row of a batch, rows rewritten within the batch as they end up', () => {
    t.store.write([
      mem({ id: 'old', text: 'an earlier turn about walruses', kind: 'turn', session: 's', ts: T0 + 10_000 }),
    ]);
    const res = t.store.write([
      mem({ id: 'a', text: 'penguins waddle', kind: 'turn', session: 's', ts: T0 + 20_000 }),
      mem({
        id: 'b',
        text: 'narwhals sing',
        fields: { user: 'likes herons' },
        session: 's',
        ts: T0 + 30_000,
      }),
      // Rewrites of rows inserted earlier in this batch: their update triggers delete what they indexed.
      mem({ id: 'a', text: 'penguins toboggan', kind: 'turn', session: 's', ts: T0 + 20_000 }),
      mem({
        id: 'b',
        text: 'narwhals sing',
        fields: { user: 'likes egrets' },
        session: 's',
        ts: T0 + 30_000,
      }),
      // Lands before 'a' in the session: 'a' (inserted in this batch) gets a new context.
      mem({ id: 'c', text: 'capybaras lounge', kind: 'turn', session: 's', ts: T0 + 15_000 }),
    ]);
    expect(res.map((r) => r.status)).toEqual(['stored', 'stored', 'updated', 'updated', 'stored']);
    assertIndexesMatchRows();
    expect(searchIds(t.store, 'ns', 'toboggan')).toEqual(['a']);
    expect(searchIds(t.store, 'ns', 'waddle')).toEqual([]);
    // 'a' is indexed with the text of the turn before it, now 'c'.
    expect(searchIds(t.store, 'ns', 'capybaras').sort()).toEqual(['a', 'c']);
    expect(searchIds(t.store, 'ns', 'narwhals')).toEqual(['b']);
    expect(routeMatches('egrets')).toBe(1);
    expect(routeMatches('herons')).toBe(0);
  });

  it('indexes nothing of a batch that rolled back, and the next batch is indexed as written', () => {
    t.store.db.exec(`CREATE TEMP TRIGGER refuse BEFORE INSERT ON memories WHEN new.id = 'boom'
      BEGIN SELECT RAISE(ABORT, 'refused by the test'); END`);
    expect(() =>
      t.store.write([
        mem({ id: 'x', text: 'flamingos balance', fields: { user: 'storks' } }),
        mem({ id: 'boom', text: 'never stored' }),
      ]),
    ).toThrow(/refused by the test/);
    t.store.db.exec('DROP TRIGGER refuse');
    // The rolled-back rows' keys are given out again: held entries of theirs would index these rows.
    t.store.write([mem({ id: 'y', text: 'otters juggle' }), mem({ id: 'z', text: 'lemurs bask' })]);
    assertIndexesMatchRows();
    expect(searchIds(t.store, 'ns', 'flamingos')).toEqual([]);
    expect(searchIds(t.store, 'ns', 'otters')).toEqual(['y']);
    expect(routeMatches('storks')).toBe(0);
  });

  it('holds nothing after a batch rolled back: a delete that follows indexes nothing of it', () => {
    t.store.write([mem({ id: 'e', text: 'egrets wade', fields: { user: 'herons' } })]);
    const pages = t.store.db.pragma('page_count', { simple: true }) as number;
    // A full disk mid-batch: its new field's row and its memories roll back, their ids given out again.
    t.store.db.pragma(`max_page_count = ${pages + 20}`);
    const big = Array.from({ length: 40 }, (_, i) =>
      mem({ id: `big${i}`, text: `flamingos ${'lorem ipsum dolor '.repeat(800)} ${i}` }),
    );
    expect(() =>
      t.store.write([mem({ id: 'e', text: 'egrets wade', fields: { user: 'storks' } }), ...big]),
    ).toThrow(/full/);
    t.store.db.pragma('max_page_count = 1073741823');
    // Its delete removes e's routes from the index: a held entry of the failed batch would be written then.
    expect(t.store.deleteMany('ns', ['e'])).toEqual(['e']);
    t.store.write([mem({ id: 'y', text: 'otters juggle', fields: { user: 'cranes' } })]);
    assertIndexesMatchRows();
    expect(searchIds(t.store, 'ns', 'flamingos')).toEqual([]);
    expect(routeMatches('storks')).toBe(0);
  });

  it("indexes a row inserted outside a write batch on the writer's connection by its trigger", () => {
    t.store.db
      .prepare(
        `INSERT INTO memories (namespace, id, kind, text, scope, ts, content_hash, fingerprint, created_at,
           updated_at, change_seq) VALUES ('ns', 'o', 'note', 'stray herons', '', 0, 'h', 'f', 0, 0, 1)`,
      )
      .run();
    assertIndexesMatchRows();
    expect(
      t.store.db.prepare("SELECT count(*) FROM memories_fts WHERE memories_fts MATCH 'stray'").pluck().get(),
    ).toBe(1);
  });

  it('keeps a deleted memory out of its session neighbour and its routes out of the index', () => {
    t.store.write([
      mem({
        id: 'p',
        text: 'quokkas smile',
        fields: { user: 'ibis' },
        kind: 'turn',
        session: 's',
        ts: T0 + 1,
      }),
      mem({ id: 'q', text: 'wombats dig', kind: 'turn', session: 's', ts: T0 + 2 }),
    ]);
    expect(t.store.delete('ns', 'p')).toBe(true);
    assertIndexesMatchRows();
    expect(routeMatches('ibis')).toBe(0);
    expect(searchIds(t.store, 'ns', 'quokkas')).toEqual([]);
  });

  it("makes an insert by a connection without the writer's function fail, not store an unfindable row", () => {
    // The sqlite3 shell, say: its insert trigger cannot ask whether a writer indexes the row.
    const older = new Database(t.path);
    try {
      expect(() =>
        older
          .prepare(
            `INSERT INTO memories (namespace, id, kind, text, scope, ts, content_hash, fingerprint, created_at,
               updated_at, change_seq) VALUES ('ns', 'o', 'note', 'stray', '', 0, 'h', 'f', 0, 0, 1)`,
          )
          .run(),
      ).toThrow(/no such function: cairn_writer_indexes_fts/);
    } finally {
      older.close();
    }
  });
});
