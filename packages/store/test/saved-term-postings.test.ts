import { MemoryStore, type MemoryStoreOptions } from '@cairn/store';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mem, openTempStore, T0, type TempStore } from './helpers.js';

// Saving starts at 20 matches here, so a corpus of a few hundred memories has common words to save.
const SAVING: Omit<MemoryStoreOptions, 'path'> = { lexical: { postings: { saveFromMatches: 20 } } };
const NOT_SAVING: Omit<MemoryStoreOptions, 'path'> = { lexical: { postings: { saveFromMatches: 0 } } };

let t: TempStore;
const opened: MemoryStore[] = [];
beforeEach(() => {
  t = openTempStore('cairn-saved-postings-', SAVING);
});
afterEach(() => {
  for (const s of opened.splice(0)) s.close();
  t.cleanup();
});

/** Another process's store on the same file (its own connection and caches). */
function another(opts: Omit<MemoryStoreOptions, 'path'> = SAVING): MemoryStore {
  const s = new MemoryStore({ ...opts, path: t.path });
  opened.push(s);
  return s;
}

const VOCAB = ['alpha', 'beta', 'gamma', 'delta', 'epsilon', 'zeta', 'eta', 'theta', 'iota', 'kappa'];

/** Seeded memories whose words are drawn with skew: a few words match most rows. */
function writeCorpus(store: MemoryStore, n: number, seed: number, from = 0): void {
  let s = seed;
  const rand = () => {
    s = (s * 1103515245 + 12345) % 2 ** 31;
    return s / 2 ** 31;
  };
  const batch = [];
  for (let i = from; i < from + n; i++) {
    const words = Array.from(
      { length: 3 + Math.floor(rand() * 10) },
      () => VOCAB[Math.floor(rand() ** 2 * 10)],
    );
    batch.push(mem({ id: `m${i}`, text: words.join(' ') }));
  }
  store.write(batch);
}

/** Keys and bm25 of a search, for comparing two stores exactly. */
function ranking(store: MemoryStore, query: string, limit = 40) {
  return store.lexical
    .searchLexical({ namespace: 'ns', query, filters: {}, limit })
    .candidates.map((c) => [c.key, c.bm25]);
}

const savedRows = (store: MemoryStore) =>
  store.db.prepare('SELECT count(*) FROM term_postings').pluck().get() as number;

describe('Saved term postings: a writer keeps the common words it scored', () => {
  it('saves a common word once scored, and another process loads it instead of scoring it', () => {
    writeCorpus(t.store, 300, 1);
    const want = ranking(t.store, 'alpha beta');
    expect(t.store.lexical.postings.size.saved).toBeGreaterThanOrEqual(2);
    expect(savedRows(t.store)).toBe(t.store.lexical.postings.size.saved);

    const next = another();
    expect(ranking(next, 'alpha beta')).toEqual(want);
    expect(next.lexical.postings.size.loaded).toBe(2);
    // It loaded what it needed: nothing was scored, so nothing was saved again.
    expect(next.lexical.postings.size.saved).toBe(0);
    // And exactly what a process that neither saves nor loads computes.
    expect(ranking(another(NOT_SAVING), 'alpha beta')).toEqual(want);
  });

  it('patches memories rewritten and appends memories added since the save, as scoring anew would', () => {
    writeCorpus(t.store, 400, 2);
    ranking(t.store, 'alpha gamma');
    expect(t.store.lexical.postings.size.saved).toBe(2);
    // A rewrite that drops alpha, one that gains it, and a few new memories (under a tenth of the corpus).
    t.store.write([
      mem({ id: 'm3', text: 'nothing of the sort' }),
      mem({ id: 'm4', text: 'alpha alpha alpha gamma' }),
      mem({ id: 'new1', text: 'alpha gamma newcomer' }),
      mem({ id: 'new2', text: 'gamma only' }),
    ]);
    const next = another();
    const got = ranking(next, 'alpha gamma', 500);
    expect(next.lexical.postings.size.loaded).toBe(2);
    // Exactly what the writer's own cache holds, having scored the words before the writes and followed
    // them since: the saved scores carry the corpus statistics of when they were scored, as a warm cache's do.
    expect(got).toEqual(ranking(t.store, 'alpha gamma', 500));
    // And the same memories as scoring anew, which alone sees today's statistics.
    const fresh = ranking(another(NOT_SAVING), 'alpha gamma', 500);
    expect(new Set(got.map(([k]) => k))).toEqual(new Set(fresh.map(([k]) => k)));
    const keyOf = (id: string) =>
      next.db.prepare('SELECT key FROM memories WHERE id = ?').pluck().get(id) as number;
    expect(got.map(([k]) => k)).not.toContain(keyOf('m3'));
    expect(got.map(([k]) => k)).toContain(keyOf('new1'));
    expect(got.map(([k]) => k)).toContain(keyOf('m4'));
  });

  it('scores a word anew once more than a tenth of the corpus was added since it was saved, and saves that', () => {
    writeCorpus(t.store, 200, 3);
    ranking(t.store, 'alpha');
    const savedAt = t.store.db.prepare('SELECT seq FROM term_postings').pluck().all() as number[];
    writeCorpus(t.store, 40, 4, 1000);
    const next = another();
    const got = ranking(next, 'alpha', 500);
    expect(next.lexical.postings.size.loaded).toBe(0);
    expect(next.lexical.postings.size.saved).toBe(1);
    expect(got.map(([k]) => k)).toEqual(ranking(another(NOT_SAVING), 'alpha', 500).map(([k]) => k));
    const now = t.store.db.prepare('SELECT seq FROM term_postings').pluck().all() as number[];
    expect(now[0]).toBeGreaterThan(savedAt[0]!);
  });

  it('saves a word past the cap with its count of rows: a new process scores its new matches without a walk', () => {
    const CAPPED = { lexical: { postings: { saveFromMatches: 20, maxPerTerm: 40 } } };
    const writer = another(CAPPED);
    writeCorpus(writer, 300, 11);
    ranking(writer, 'alpha');
    const hits = writer.db.prepare('SELECT hits FROM term_postings').pluck().all() as number[];
    const matches = writer.db
      .prepare(`SELECT count(*) FROM memories_fts WHERE memories_fts MATCH '"alpha"'`)
      .pluck()
      .get() as number;
    expect(matches).toBeGreaterThan(40);
    expect(hits).toEqual([matches]);
    // Written after the save: the next process's first search brings these in.
    writer.write([mem({ id: 'late1', text: 'alpha late' }), mem({ id: 'late2', text: 'alpha alpha later' })]);
    const next = another(CAPPED);
    const got = ranking(next, 'alpha', 500);
    expect(next.lexical.postings.size).toMatchObject({ loaded: 1, newScoredHere: 1, newScoredByFts5: 0 });
    // As the writer, which followed the writes, ranks them.
    expect(got).toEqual(ranking(writer, 'alpha', 500));
  });

  it('a word saved without its count (before migration 21) is scored once more by a writer, read as it is by a reader', () => {
    const CAPPED = { lexical: { postings: { saveFromMatches: 20, maxPerTerm: 40 } } };
    const writer = another(CAPPED);
    writeCorpus(writer, 300, 12);
    const want = ranking(writer, 'alpha', 500);
    writer.db.exec('UPDATE term_postings SET hits = -1');
    const reader = another({ ...CAPPED, readonly: true });
    expect(ranking(reader, 'alpha', 500)).toEqual(want);
    expect(reader.lexical.postings.size).toMatchObject({ loaded: 1, saved: 0 });
    const next = another(CAPPED);
    expect(ranking(next, 'alpha', 500)).toEqual(want);
    expect(next.lexical.postings.size).toMatchObject({ loaded: 0, saved: 1 });
    expect(writer.db.prepare('SELECT hits FROM term_postings').pluck().get()).toBeGreaterThan(40);
  });

  it('saves a word again once 1,000 new matches were added to it: a new process then scores none of them', () => {
    // Large enough that 1,000 new matches, among other new memories, stay under the tenth of the corpus past
    // which a cache starts over.
    writeCorpus(t.store, 25_000, 13);
    ranking(t.store, 'delta');
    const savedAt = () => t.store.db.prepare('SELECT watermark FROM term_postings').pluck().all() as number[];
    const [first] = savedAt();
    // The word keeps its share of the rows, so its idf stays what its saved scores carry (a word whose count
    // moves far from it is scored again: see the drift tests in term-postings.test.ts).
    const share =
      (t.store.db
        .prepare("SELECT count(*) FROM memories_fts WHERE memories_fts MATCH 'delta'")
        .pluck()
        .get() as number) / 25_000;
    const late = (from: number, n: number) =>
      t.store.write([
        ...Array.from({ length: n }, (_, i) => mem({ id: `late${from + i}`, text: `delta late ${i}` })),
        ...Array.from({ length: Math.round(n * (1 / share - 1)) }, (_, i) =>
          mem({ id: `other${from}-${i}`, text: `other late ${i}` }),
        ),
      ]);
    // 999 new matches: the row stays as saved, and a new process scores them all on its first search.
    late(0, 999);
    ranking(t.store, 'delta');
    expect(savedAt()).toEqual([first]);
    const behind = another();
    ranking(behind, 'delta');
    expect(behind.lexical.postings.size).toMatchObject({ loaded: 1, newScoredHere: 1 });
    // The thousandth: the writer, bringing the word up to date for a search, saves it as it now holds.
    late(999, 1);
    const want = ranking(t.store, 'delta', 30_000);
    const top = t.store.db.prepare('SELECT max(key) FROM memories').pluck().get() as number;
    expect(savedAt()).toEqual([top]);
    const next = another();
    expect(ranking(next, 'delta', 30_000)).toEqual(want);
    expect(next.lexical.postings.size).toMatchObject({ loaded: 1, newScoredHere: 0, newScoredByFts5: 0 });
  });

  it('is not used under another cap on matches per term', () => {
    writeCorpus(t.store, 300, 5);
    ranking(t.store, 'alpha');
    const capped = another({ lexical: { postings: { saveFromMatches: 20, maxPerTerm: 50 } } });
    ranking(capped, 'alpha');
    expect(capped.lexical.postings.size.loaded).toBe(0);
  });

  it('is loaded by a read-only process, which never saves', () => {
    writeCorpus(t.store, 300, 6);
    ranking(t.store, 'alpha');
    const ro = another({ ...SAVING, readonly: true });
    ranking(ro, 'alpha beta');
    expect(ro.lexical.postings.size.loaded).toBe(1);
    expect(ro.lexical.postings.size.saved).toBe(0);
    expect(savedRows(t.store)).toBe(1);
  });

  it('searches as before in a read-only process on a folder from before the table (migration 20)', () => {
    writeCorpus(t.store, 300, 10);
    const want = ranking(t.store, 'alpha beta');
    // What a reader meets when no writer of this version has opened the folder yet.
    t.store.db.exec('DROP TABLE term_postings');
    t.store.db.pragma('user_version = 19');
    const ro = another({ ...SAVING, readonly: true });
    expect(ranking(ro, 'alpha beta')).toEqual(want);
    expect(ro.lexical.postings.size.loaded).toBe(0);
  });

  it('never waits for a lock to save: the search is answered and the word stays unsaved', () => {
    writeCorpus(t.store, 300, 7);
    const other = new Database(t.path);
    try {
      other.exec('BEGIN IMMEDIATE');
      const started = Date.now();
      expect(ranking(t.store, 'alpha').length).toBeGreaterThan(0);
      // The store's own busy timeout is seconds long; a save that waited on it would show here.
      expect(Date.now() - started).toBeLessThan(2_000);
      expect(t.store.lexical.postings.size.saved).toBe(0);
      other.exec('ROLLBACK');
    } finally {
      other.close();
    }
    // The store's busy timeout is as it was.
    expect(t.store.db.pragma('busy_timeout', { simple: true })).toBeGreaterThan(0);
  });
});

describe('warmCommonWords: the common words scored ahead of any search', () => {
  it('saves the namespace’s common words, which the first search of another process then loads', async () => {
    writeCorpus(t.store, 400, 8);
    const warmed = await t.store.warmCommonWords();
    expect(warmed).toBeGreaterThanOrEqual(3);
    expect(savedRows(t.store)).toBe(warmed);
    const next = another();
    ranking(next, 'alpha beta gamma');
    expect(next.lexical.postings.size.loaded).toBe(3);
    expect(next.lexical.postings.size.saved).toBe(0);
  });

  it('saves the phrase of a common identifier’s parts, which a search naming the identifier scores too', async () => {
    // "readGraphSearch" plans two terms: the token itself and the phrase "read graph search" (its parts
    // column); both are common here, so both are scored ahead and the search loads both.
    // A tenth of the rows name it (a term in over a fifth is dropped from a query that has others).
    writeCorpus(t.store, 540, 10);
    const names = ['readGraphSearch', 'ReadGraphSearch'];
    t.store.write(
      Array.from({ length: 60 }, (_, i) =>
        mem({ id: `c${i}`, text: `fixed ${names[i % 2]} in module ${i} and moved on` }),
      ),
    );
    const warmed = await t.store.warmCommonWords();
    expect(savedRows(t.store)).toBe(warmed);
    const next = another();
    const got = ranking(next, 'readGraphSearch');
    expect(next.lexical.postings.size.loaded).toBe(2);
    expect(next.lexical.postings.size.saved).toBe(0);
    expect(got).toEqual(ranking(t.store, 'readGraphSearch'));
  });

  it('does nothing in a read-only process', async () => {
    writeCorpus(t.store, 400, 9);
    expect(await another({ ...SAVING, readonly: true }).warmCommonWords()).toBe(0);
    expect(savedRows(t.store)).toBe(0);
  });
});

describe('upkeepAfterBulkWrite: sized to what the process wrote', () => {
  /** Steps a full merge takes now: 2 (one per FTS5 table) when nothing is left to merge. */
  const mergeSteps = async (store: MemoryStore) => store.compactLexicalIndex(50);

  it('merges and scores after a bulk write; after a small one into a large folder, neither', async () => {
    // A first ingest: every row is this process's.
    writeCorpus(t.store, 400, 11);
    expect(await t.store.upkeepAfterBulkWrite({ scoreCommonWords: true })).toEqual({
      merged: true,
      scored: ['ns'],
      refreshed: [],
    });
    const saved = savedRows(t.store);
    expect(saved).toBeGreaterThanOrEqual(3);
    expect(await mergeSteps(t.store)).toBe(2);
    // The next process adds 5% in small batches: a few segments and saved words that still load.
    const next = another();
    for (let b = 0; b < 4; b++) writeCorpus(next, 5, 20 + b, 1_000 + b * 5);
    expect(await next.upkeepAfterBulkWrite({ scoreCommonWords: true })).toEqual({
      merged: false,
      scored: [],
      refreshed: [],
    });
    expect(savedRows(next)).toBe(saved);
    expect(await mergeSteps(next)).toBeGreaterThan(2);
    // Loaded, not scored again, by a third process's first search.
    const third = another();
    ranking(third, 'alpha beta gamma');
    expect(third.lexical.postings.size).toMatchObject({ loaded: 3, saved: 0 });
  });

  it('saves again the words a small write said so often that later processes would score their new matches', async () => {
    writeCorpus(t.store, 20_000, 13);
    await t.store.upkeepAfterBulkWrite({ scoreCommonWords: true });
    // 6% of the namespace: below the bulk share, but "alpha" alone gains over 1,000 new matches.
    const next = another();
    writeCorpus(next, 1_200, 14, 20_000);
    expect(await next.upkeepAfterBulkWrite({ scoreCommonWords: true })).toEqual({
      merged: false,
      scored: [],
      refreshed: ['ns'],
    });
    // A later process loads the saved words with nothing new to score.
    const third = another();
    const got = ranking(third, 'alpha');
    expect(third.lexical.postings.size).toMatchObject({ loaded: 1, newScoredHere: 0, newScoredByFts5: 0 });
    expect(got).toEqual(ranking(next, 'alpha'));
  });

  it('scores the common words again when a small write rewrote older rows, as a bulk write does', async () => {
    writeCorpus(t.store, 400, 15);
    t.store.write(
      Array.from({ length: 5 }, (_, i) =>
        mem({ id: `s${i}`, kind: 'turn', session: 'S', ts: T0 + i * 60_000, text: `alpha turn ${i}` }),
      ),
    );
    await t.store.upkeepAfterBulkWrite({ scoreCommonWords: true });
    const next = another();
    // A turn of session S said between two others: the next one's context is rewritten.
    next.write([
      mem({ id: 's5', kind: 'turn', session: 'S', ts: T0 + 30_000, text: 'alpha beta turn between' }),
    ]);
    expect(await next.upkeepAfterBulkWrite({ scoreCommonWords: true })).toEqual({
      merged: false,
      scored: ['ns'],
      refreshed: [],
    });
    const third = another();
    expect(ranking(third, 'alpha beta')).toEqual(ranking(next, 'alpha beta'));
    expect(third.lexical.postings.size).toMatchObject({ loaded: 2 });
  });

  it("counts each namespace's share apart: a new namespace beside a large one has its words scored", async () => {
    writeCorpus(t.store, 400, 12);
    await t.store.upkeepAfterBulkWrite({ scoreCommonWords: true });
    const next = another();
    next.write(
      Array.from({ length: 30 }, (_, i) =>
        mem({ id: `o${i}`, namespace: 'other', text: `omega ${i % 2 ? 'sigma' : 'tau'} note ${i}` }),
      ),
    );
    // 30 of 430 rows: no merge; but all of "other"'s rows are new, so its words are scored.
    expect(await next.upkeepAfterBulkWrite({ scoreCommonWords: true })).toEqual({
      merged: false,
      scored: ['other'],
      refreshed: [],
    });
    // Counted again from zero: a second call has nothing to do.
    expect(await next.upkeepAfterBulkWrite({ scoreCommonWords: true })).toEqual({
      merged: false,
      scored: [],
      refreshed: [],
    });
  });
});
