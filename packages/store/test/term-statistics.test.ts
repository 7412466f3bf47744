import { MemoryStore, readCatalogChunk, renderFtsQuery, scopeToken } from '@cairn/store';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { mem, openTempStore, type TempStore } from './helpers.js';

// A corpus of two tenants: "big" holds most rows, "small" the rest. "rare" is in 40 of big's memories
// (5 of them superseded later) and 10 of small's; "everywhere" is in every memory, 1,700 in all, more
// than the 1,000 matches a frequency is estimated from.
const BIG = 1_500;
const SMALL = 200;

function fill(t: TempStore): void {
  const batch = [];
  for (let i = 0; i < BIG; i++)
    batch.push(mem({ namespace: 'big', id: `b${i}`, text: `everywhere note ${i < 40 ? 'rare' : 'plain'}` }));
  for (let i = 0; i < SMALL; i++)
    batch.push(
      mem({ namespace: 'small', id: `s${i}`, text: `everywhere note ${i < 10 ? 'rare' : 'plain'}` }),
    );
  t.store.write(batch);
  // Five rare memories of big are superseded: still in the FTS index, no longer live.
  t.store.write(
    [0, 1, 2, 3, 4].map((i) =>
      mem({ namespace: 'big', id: `r${i}`, text: 'replacement', supersedes: [`b${i}`] }),
    ),
  );
}

/** What FTS5 counts within a namespace's token (every row indexed, live or not). */
function ftsCount(t: TempStore, term: string, namespace: string): number {
  return t.store.db
    .prepare('SELECT count(*) FROM memories_fts WHERE memories_fts MATCH ?')
    .pluck()
    .get(renderFtsQuery([term], scopeToken(namespace))) as number;
}

/** Live memories of a namespace whose text holds the word. */
function liveCount(t: TempStore, word: string, namespace: string): number {
  return t.store.db
    .prepare(
      `SELECT count(*) FROM memories WHERE namespace = ? AND superseded_by IS NULL AND deleted_at IS NULL
         AND (' ' || text || ' ') LIKE ?`,
    )
    .pluck()
    .get(namespace, `% ${word} %`) as number;
}

let t: TempStore | undefined;
afterEach(() => {
  t?.cleanup();
  t = undefined;
});

describe('TermStatistics.documentFrequency', () => {
  it('counts the live memories of a majority namespace, in SQLite before the catalog loads and in memory after', async () => {
    t = openTempStore('cairn-df-');
    fill(t);
    // Before the catalog has loaded, SQLite counts the same live memories by key.
    expect(t.store.lexical.stats.documentFrequency('"rare"', 'big')).toBe(35);
    t.cleanup();
    t = openTempStore('cairn-df-');
    fill(t);
    await t.store.warmCatalog();
    expect(liveCount(t, 'rare', 'big')).toBe(35);
    expect(ftsCount(t, '"rare"', 'big')).toBe(40);
    // The catalog's count is of live memories: the superseded five are not among them.
    expect(t.store.lexical.stats.documentFrequency('"rare"', 'big')).toBe(35);
  });

  it('while the catalog loads, scales the corpus-wide count by the namespace’s share, and counts once it serves', async () => {
    t = openTempStore('cairn-df-');
    fill(t);
    // A reader thread that answers only when released: the load stays in progress meanwhile.
    let release: () => void = () => undefined;
    const released = new Promise<void>((r) => {
      release = r;
    });
    const other = new Database(t.path, { readonly: true });
    try {
      t.store.useCatalogReader(async ({ afterKey, limit }) => {
        await released;
        return readCatalogChunk(other, afterKey, limit);
      });
      const loading = t.store.warmCatalog();
      // 50 matches corpus-wide (40 in big, 10 in small), big holding 1,505 of the 1,705 rows.
      expect(t.store.lexical.stats.documentFrequency('"rare"', 'big')).toBe(Math.round((50 * 1505) / 1705));
      release();
      await loading;
      expect(t.store.lexical.stats.documentFrequency('"rare"', 'big')).toBe(35);
    } finally {
      other.close();
    }
  });

  it('reads a word’s first matches once for both counts of a search, and afresh after a write or in a later turn', async () => {
    // Without the catalog, a namespace's count is made in SQLite over the sample's keys, so a sample
    // read again sees rows a sample kept does not. Rows written by another connection (as another
    // process would) tell a kept sample from a new one.
    t = openTempStore('cairn-df-', { catalog: false });
    fill(t);
    const other = new MemoryStore({ path: t.path, catalog: false });
    try {
      const stats = t.store.lexical.stats;
      const rareInBig = (id: string) => mem({ namespace: 'big', id, text: 'one more rare note' });
      // Planning asks corpus-wide, then idf asks within the majority namespace: one sample serves both,
      // so a row written between them in the same turn is not counted.
      expect(stats.documentFrequency('"rare"')).toBe(50);
      other.write([rareInBig('n1')]);
      expect(stats.documentFrequency('"rare"', 'big')).toBe(35);
      // A later turn reads the word's matches again (a new word: counts are cached per word).
      expect(stats.documentFrequency('"zeppelin"')).toBe(0);
      other.write([0, 1, 2].map((i) => mem({ namespace: 'big', id: `z${i}`, text: `the zeppelin ${i}` })));
      await new Promise((r) => setImmediate(r));
      expect(stats.documentFrequency('"zeppelin"', 'big')).toBe(3);
      // This store's own write drops the sample at once, within the turn.
      expect(stats.documentFrequency('"airship"')).toBe(0);
      t.store.write([mem({ namespace: 'big', id: 'a1', text: 'the airship' })]);
      expect(stats.documentFrequency('"airship"', 'big')).toBe(1);
    } finally {
      other.close();
    }
  });

  it('estimates a word with more matches than its sample from the key range the sample covered', async () => {
    t = openTempStore('cairn-df-');
    fill(t);
    await t.store.warmCatalog();
    const df = t.store.lexical.stats.documentFrequency('"everywhere"', 'big');
    const live = liveCount(t, 'everywhere', 'big');
    expect(live).toBe(BIG - 5);
    expect(Math.abs(df - live) / live).toBeLessThan(0.1);
  });

  it('asks FTS5 within the token of a minority namespace; counts a majority one without the catalog too', async () => {
    t = openTempStore('cairn-df-');
    fill(t);
    await t.store.warmCatalog();
    expect(t.store.lexical.stats.documentFrequency('"rare"', 'small')).toBe(ftsCount(t, '"rare"', 'small'));
    expect(ftsCount(t, '"rare"', 'small')).toBe(10);
    t.cleanup();
    t = openTempStore('cairn-df-', { catalog: false });
    fill(t);
    expect(t.store.lexical.stats.documentFrequency('"rare"', 'big')).toBe(35);
    const df = t.store.lexical.stats.documentFrequency('"everywhere"', 'big');
    expect(Math.abs(df - (BIG - 5)) / (BIG - 5)).toBeLessThan(0.1);
  });
});
