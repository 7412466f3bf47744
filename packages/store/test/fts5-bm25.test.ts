import { MemoryStore, StatementCache } from '@cairn/store';
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  bm25Weights,
  documentsBehindScore,
  scoreNewMatchesLocally,
  scoreRewrittenLocally,
  wordRowsUpTo,
} from '../src/fts5-bm25.js';
import { mem, openTempStore, type TempStore } from './helpers.js';

// The postings cache scores a word's new matches here rather than through bm25(), whose first call walks
// the word's whole doclist. These tests hold it to FTS5's own scores, row by row, on a real SQLite file.

const BM25 = 'bm25(memories_fts, 3, 1, 0.4, 0, 0.5)';
/** Two ulps of the scores here: FTS5's C `log` and V8's `Math.log` may round the idf apart. */
const ULPS = 4e-16;

let t: TempStore;
beforeEach(() => {
  t = openTempStore('cairn-fts5-bm25-');
});
afterEach(() => t.cleanup());

function fts5Scores(match: string, after: number): Map<number, number> {
  const rows = t.store.db
    .prepare(`SELECT rowid, ${BM25} FROM memories_fts WHERE memories_fts MATCH ? AND rowid > ?`)
    .raw()
    .all(match, after) as Array<[number, number]>;
  return new Map(rows);
}

function matchesUpTo(match: string, key: number): number {
  return t.store.db
    .prepare('SELECT count(*) FROM memories_fts WHERE memories_fts MATCH ? AND rowid <= ?')
    .pluck()
    .get(match, key) as number;
}

const maxKey = () => t.store.db.prepare('SELECT max(key) FROM memories').pluck().get() as number;

describe('scoreNewMatchesLocally', () => {
  it("gives each new match FTS5's own bm25, wherever and however often the word is said", () => {
    const old = [];
    for (let i = 0; i < 300; i++)
      old.push(mem({ id: `old-${i}`, text: i % 3 === 0 ? `omega filler ${i}` : `filler words ${i}` }));
    t.store.write(old);
    const after = maxKey();
    t.store.write([
      mem({ id: 'n1', text: 'omega' }),
      mem({ id: 'n2', text: 'omega omega omega and a much longer text than the others say' }),
      mem({ id: 'n3', title: 'Omega in the title', text: 'and once in the text: omega' }),
      mem({ id: 'n4', text: 'fix omegaParser and omega_cache', kind: 'code' }),
      mem({ id: 'n5', text: 'a control character \u0001 beside omega does not count as one' }),
      mem({ id: 'n6', text: 'no such word here' }),
      mem({ id: 'n7', text: 'omega', session: 's1' }),
    ]);
    const upTo = maxKey();
    const statements = new StatementCache(t.store.db);
    const term = { match: '"omega"', bm25: BM25 };
    const local = scoreNewMatchesLocally(statements, term, after, upTo, matchesUpTo('"omega"', after));
    const fts5 = fts5Scores('"omega"', after);
    expect(local).not.toBeNull();
    expect(local!.map(([key]) => key)).toEqual([...fts5.keys()].sort((a, b) => a - b));
    for (const [key, score] of local!) {
      const expected = fts5.get(key)!;
      expect(Math.abs((score - expected) / expected)).toBeLessThanOrEqual(ULPS);
    }
    // Nothing new for a word none of them say: no row, no statement of bm25().
    expect(scoreNewMatchesLocally(statements, { match: '"filler"', bm25: BM25 }, after, upTo, 0)).toEqual([]);
  });

  it("counts a match written past the caller's view in the idf, as FTS5 does, without returning it", () => {
    t.store.write(Array.from({ length: 50 }, (_, i) => mem({ id: `old-${i}`, text: `omega ${i}` })));
    const after = maxKey();
    t.store.write([mem({ id: 'n1', text: 'omega new' })]);
    const upTo = maxKey();
    t.store.write([mem({ id: 'n2', text: 'omega newer still' })]);
    const statements = new StatementCache(t.store.db);
    const local = scoreNewMatchesLocally(statements, { match: '"omega"', bm25: BM25 }, after, upTo, 50);
    expect(local?.map(([key]) => key)).toEqual([upTo]);
    const expected = fts5Scores('"omega"', after).get(upTo)!;
    expect(Math.abs((local![0]![1] - expected) / expected)).toBeLessThanOrEqual(ULPS);
  });

  it("gives a phrase's new matches FTS5's own bm25: a path's or an identifier's parts, in any column", () => {
    const old = [];
    for (let i = 0; i < 200; i++)
      old.push(
        mem({ id: `old-${i}`, text: i % 4 === 0 ? `map job cache ${i}` : `map the job to a cache ${i}` }),
      );
    t.store.write(old);
    const after = maxKey();
    t.store.write([
      mem({ id: 'n1', text: 'fix mapJobCache' }),
      mem({ id: 'n2', text: 'map job cache, map job cache and again map job cache: three times' }),
      mem({
        id: 'n3',
        title: 'Map job cache',
        text: 'said in the title, and here: map_job cache no, map job cache yes',
      }),
      mem({ id: 'n4', text: 'mapping jobs caching: the stems match the phrase too' }),
      mem({ id: 'n5', text: 'map job, then cache: not the phrase' }),
      mem({ id: 'n6', text: 'see packages/api/src/auth/index-limit.ts and packages api src auth' }),
    ]);
    const upTo = maxKey();
    const statements = new StatementCache(t.store.db);
    for (const match of ['"map job cache"', '"packages api src auth index limit ts"', '"api src"']) {
      const local = scoreNewMatchesLocally(
        statements,
        { match, bm25: BM25 },
        after,
        upTo,
        matchesUpTo(match, after),
      );
      const fts5 = fts5Scores(match, after);
      expect(local, match).not.toBeNull();
      expect(fts5.size, match).toBeGreaterThan(0);
      expect(local!.map(([key]) => key)).toEqual([...fts5.keys()].sort((a, b) => a - b));
      for (const [key, score] of local!) {
        const expected = fts5.get(key)!;
        expect(Math.abs((score - expected) / expected)).toBeLessThanOrEqual(ULPS);
      }
    }
  });

  it("property: a phrase scored here gets FTS5's bm25 for every new match, whatever its words share", () => {
    // Words whose stems collide or share letters ("test", "tests", "testing"; "map", "mapping"): a phrase the
    // rule takes must never be one whose matches overlap.
    const VOCAB = [
      'test',
      'tests',
      'testing',
      'tea',
      'team',
      'map',
      'maps',
      'mapping',
      'job',
      'cache',
      'src',
      'api',
    ];
    const word = fc.constantFrom(...VOCAB);
    fc.assert(
      fc.property(
        fc.array(fc.array(word, { minLength: 1, maxLength: 12 }), { minLength: 5, maxLength: 25 }),
        fc.array(word, { minLength: 2, maxLength: 3 }),
        (texts, phrase) => {
          t.cleanup();
          t = openTempStore('cairn-fts5-bm25-');
          t.store.write(texts.slice(0, 3).map((w, i) => mem({ id: `o${i}`, text: w.join(' ') })));
          const after = maxKey();
          t.store.write(texts.slice(3).map((w, i) => mem({ id: `n${i}`, text: w.join(' ') })));
          const match = `"${phrase.join(' ')}"`;
          const local = scoreNewMatchesLocally(
            new StatementCache(t.store.db),
            { match, bm25: BM25 },
            after,
            maxKey(),
            matchesUpTo(match, after),
          );
          if (local === null) return;
          const fts5 = fts5Scores(match, after);
          expect(local.map(([key]) => key)).toEqual([...fts5.keys()].sort((a, b) => a - b));
          for (const [key, score] of local)
            expect(Math.abs((score - fts5.get(key)!) / fts5.get(key)!)).toBeLessThanOrEqual(ULPS);
        },
      ),
      { numRuns: 150 },
    );
  });

  it('leaves to FTS5 a phrase whose matches can overlap, where highlight() would merge two into one', () => {
    // bm25() counts "test tests" twice in "test test test" (both stem to "test"); highlight() marks once.
    t.store.write([mem({ id: 'a', text: 'test test test' }), mem({ id: 'b', text: 'src api src api src' })]);
    const statements = new StatementCache(t.store.db);
    const score = (match: string) => scoreNewMatchesLocally(statements, { match, bm25: BM25 }, 0, 99, 0);
    expect(score('"test tests"')).toBeNull();
    expect(score('"src api src"')).toBeNull();
    // A word of one letter may share a stem with a longer one ("ies" stems to "i").
    expect(score('"i ies"')).toBeNull();
    expect(score('"test src"')).toEqual([]);
  });

  it('leaves to FTS5 a confined or column-filtered match, and other bm25 calls', () => {
    t.store.write([mem({ id: 'a', text: 'omega alpha' })]);
    const statements = new StatementCache(t.store.db);
    const score = (match: string, bm25 = BM25) =>
      scoreNewMatchesLocally(statements, { match, bm25 }, 0, 99, 0);
    expect(score('scope : "ns_x" AND ("omega")')).toBeNull();
    expect(score('{title text parts} : "omega"')).toBeNull();
    expect(score('"omega"', 'bm25(memories_fts)')).toBeNull();
    expect(score('"omega"')).not.toBeNull();
    expect(bm25Weights('bm25(memories_fts, 3, 1, 0.4, 0, 0.5)')).toEqual([3, 1, 0.4, 0, 0.5]);
  });
});

describe('documentsBehindScore', () => {
  it('reads back from one FTS5 score how many rows hold the word, as count(*) says', () => {
    t.store.write(
      Array.from({ length: 500 }, (_, i) =>
        mem({ id: `m${i}`, text: i % 4 === 0 ? `omega ${'filler '.repeat(i % 9)}${i}` : `filler ${i}` }),
      ),
    );
    const statements = new StatementCache(t.store.db);
    const term = { match: '"omega"', bm25: BM25 };
    const [key, score] = t.store.db
      .prepare(
        `SELECT rowid, ${BM25} FROM memories_fts WHERE memories_fts MATCH ? ORDER BY rowid DESC LIMIT 1`,
      )
      .raw()
      .get('"omega"') as [number, number];
    expect(documentsBehindScore(statements, term, key, score)).toBe(125);
    // A word in most rows: FTS5 clamps its idf, and the count cannot be read back.
    const [fk, fs] = t.store.db
      .prepare(
        `SELECT rowid, ${BM25} FROM memories_fts WHERE memories_fts MATCH ? ORDER BY rowid DESC LIMIT 1`,
      )
      .raw()
      .get('"filler"') as [number, number];
    expect(documentsBehindScore(statements, { match: '"filler"', bm25: BM25 }, fk, fs)).toBeNull();
  });

  it('counts the rows holding a word up to a key, read back or counted, whatever was written past it', () => {
    t.store.write(
      Array.from({ length: 400 }, (_, i) =>
        mem({ id: `m${i}`, text: `${i % 4 === 0 ? 'omega ' : ''}filler ${'pad '.repeat(i % 5)}${i}` }),
      ),
    );
    const upTo = maxKey();
    // Written past the caller's view: FTS5 counts them in the idf, the count up to `upTo` must not.
    t.store.write(
      Array.from({ length: 30 }, (_, i) => mem({ id: `late${i}`, text: `omega filler late ${i}` })),
    );
    const statements = new StatementCache(t.store.db);
    const newest = (match: string) =>
      t.store.db
        .prepare(
          `SELECT rowid, ${BM25} FROM memories_fts WHERE memories_fts MATCH ? AND rowid <= ? ORDER BY rowid DESC LIMIT 1`,
        )
        .raw()
        .get(match, upTo) as [number, number];
    // A word in a quarter of the rows: read back from its newest score.
    for (const match of ['"omega"', '"filler"']) {
      const term = { match, bm25: BM25 };
      const counted = statements.snapshot(() => wordRowsUpTo(statements, term, newest(match), upTo));
      expect(counted).toBe(matchesUpTo(match, upTo));
    }
    // "filler" is in every row: FTS5 clamps its idf, so it was counted, not read back.
    expect(
      documentsBehindScore(statements, { match: '"filler"', bm25: BM25 }, ...newest('"filler"')),
    ).toBeNull();
    // A phrase: read back from its newest score as a word's count is.
    const phrase = { match: '"omega filler"', bm25: BM25 };
    expect(statements.snapshot(() => wordRowsUpTo(statements, phrase, newest(phrase.match), upTo))).toBe(
      matchesUpTo(phrase.match, upTo),
    );
    // A phrase whose matches may overlap is not plain: unknown.
    expect(
      wordRowsUpTo(statements, { match: '"filler fillers"', bm25: BM25 }, newest('"filler"'), upTo),
    ).toBe(-1);
  });
});

describe('scoreRewrittenLocally', () => {
  const keyOf = (id: string) =>
    t.store.db
      .prepare("SELECT key FROM memories WHERE namespace = 'ns' AND id = ?")
      .pluck()
      .get(id) as number;

  it("gives rewritten memories FTS5's own bm25 now (NaN where the term left them) and the count up to a key", () => {
    t.store.write(
      Array.from({ length: 400 }, (_, i) =>
        mem({
          id: `m${i}`,
          text: `${i % 3 === 0 ? 'omega alpha beta ' : ''}filler ${'pad '.repeat(i % 7)}${i}`,
        }),
      ),
    );
    // Rewritten: some keep the word with another length, some lose it, some gain it, one says it in a title.
    t.store.write([
      mem({ id: 'm0', text: 'omega omega and a text much longer than it was before, omega' }),
      mem({ id: 'm3', text: 'no longer says the word' }),
      mem({ id: 'm4', text: 'now says omega alpha beta, once' }),
      mem({ id: 'm5', title: 'Omega', text: 'in the title and the text: omega alpha beta' }),
      mem({ id: 'm7', text: 'never said it, still does not' }),
    ]);
    const upTo = maxKey();
    // Written past the caller's view: counted in FTS5's idf, not in the count up to `upTo`.
    t.store.write(
      Array.from({ length: 20 }, (_, i) => mem({ id: `late${i}`, text: `omega alpha beta late ${i}` })),
    );
    const statements = new StatementCache(t.store.db);
    const keys = ['m0', 'm3', 'm4', 'm5', 'm7'].map(keyOf);
    for (const match of ['"omega"', '"omega alpha beta"']) {
      const got = scoreRewrittenLocally(statements, { match, bm25: BM25 }, keys, upTo)!;
      const fts5 = fts5Scores(match, 0);
      expect([...got.scores.keys()].sort((a, b) => a - b)).toEqual([...keys].sort((a, b) => a - b));
      for (const key of keys) {
        const expected = fts5.get(key);
        if (expected === undefined) expect(got.scores.get(key)).toBeNaN();
        else expect(Math.abs((got.scores.get(key)! - expected) / expected)).toBeLessThanOrEqual(ULPS);
      }
      expect(got.hits).toBe(matchesUpTo(match, upTo));
    }
    // None still holds it: every one NaN, the count not told.
    const gone = scoreRewrittenLocally(
      statements,
      { match: '"omega"', bm25: BM25 },
      [keyOf('m3'), keyOf('m7')],
      upTo,
    );
    expect(gone).toMatchObject({ hits: -1 });
    expect([...gone!.scores.values()].every(Number.isNaN)).toBe(true);
    // A phrase whose matches may overlap is left to FTS5.
    expect(scoreRewrittenLocally(statements, { match: '"pad pads"', bm25: BM25 }, keys, upTo)).toBeNull();
  });
});

describe('TermPostingsCache: new matches of a cached word', () => {
  it('a word past maxPerTerm knows its count from its scoring: its new matches are scored here, never walked', () => {
    t.cleanup();
    t = openTempStore('cairn-fts5-bm25-');
    const store = new MemoryStore({ path: `${t.dir}/capped.db`, lexical: { postings: { maxPerTerm: 20 } } });
    try {
      store.write(
        Array.from({ length: 200 }, (_, i) => mem({ id: `m${i}`, text: `common ${i % 2 ? 'x' : 'y'} ${i}` })),
      );
      store.write(Array.from({ length: 300 }, (_, i) => mem({ id: `o${i}`, text: `other ${i}` })));
      const search = () =>
        store.lexical.searchLexical({ namespace: 'ns', query: 'common', filters: {}, limit: 1_000 });
      search();
      const check = (after: number) => {
        const expected = new Map(
          store.db
            .prepare(`SELECT rowid, ${BM25} FROM memories_fts WHERE memories_fts MATCH ? AND rowid > ?`)
            .raw()
            .all('"common"', after) as Array<[number, number]>,
        );
        const got = new Map(search().candidates.map((c) => [c.key, c.bm25]));
        for (const [key, score] of expected)
          expect(Math.abs((got.get(key)! - score) / score)).toBeLessThanOrEqual(ULPS);
        return expected.size;
      };
      const top = () => store.db.prepare('SELECT max(key) FROM memories').pluck().get() as number;
      // Scoring the word's newest 20 matches also told how many rows hold it (read back from a score), so
      // even the first new match is scored here, from highlight(), with no walk of the doclist.
      for (const text of ['common common', 'common again', 'and common once more, common']) {
        const after = top();
        store.write([mem({ id: text, title: 'Common', text })]);
        expect(check(after)).toBe(1);
      }
      expect(store.lexical.postings.size).toMatchObject({ newScoredHere: 3, newScoredByFts5: 0 });
    } finally {
      store.close();
    }
  });

  it("a phrase past maxPerTerm knows its count from its scoring: an identifier's new matches are scored here", () => {
    t.cleanup();
    t = openTempStore('cairn-fts5-bm25-');
    const store = new MemoryStore({ path: `${t.dir}/capped.db`, lexical: { postings: { maxPerTerm: 20 } } });
    try {
      store.write(
        Array.from({ length: 120 }, (_, i) => mem({ id: `m${i}`, text: `fix map job cache ${i}` })),
      );
      store.write(Array.from({ length: 300 }, (_, i) => mem({ id: `o${i}`, text: `map other job ${i}` })));
      // The query names the identifier: its plan holds the phrase of its parts.
      const search = () =>
        store.lexical.searchLexical({ namespace: 'ns', query: 'mapJobCache', filters: {}, limit: 1_000 });
      search();
      const top = () => store.db.prepare('SELECT max(key) FROM memories').pluck().get() as number;
      for (const text of ['map job cache', 'a note: mapJobCache, map job cache']) {
        const after = top();
        store.write([mem({ id: text, text })]);
        const expected = store.db
          .prepare('SELECT rowid FROM memories_fts WHERE memories_fts MATCH ? AND rowid > ?')
          .pluck()
          .all('"map job cache"', after) as number[];
        expect(expected).toHaveLength(1);
        const key = expected[0]!;
        expect(search().candidates.some((c) => c.key === key)).toBe(true);
      }
      // Both phrase and word: every new match was scored from highlight(), none by bm25()'s walk.
      expect(store.lexical.postings.size).toMatchObject({ newScoredByFts5: 0 });
      expect(store.lexical.postings.size.newScoredHere).toBeGreaterThanOrEqual(2);
    } finally {
      store.close();
    }
  });

  it('score as FTS5 scores them, through a search, after the word was cached', () => {
    t.store.write(
      Array.from({ length: 400 }, (_, i) => mem({ id: `m${i}`, text: `common filler ${i % 7}` })),
    );
    const search = () =>
      t.store.lexical.searchLexical({ namespace: 'ns', query: 'common', filters: {}, limit: 1_000 });
    search();
    const after = maxKey();
    t.store.write([
      mem({ id: 'new-1', text: 'common common common' }),
      mem({ id: 'new-2', title: 'Common', text: 'said once more: common' }),
    ]);
    const fts5 = fts5Scores('"common"', after);
    const got = new Map(search().candidates.map((c) => [c.key, c.bm25]));
    // Scored here, from highlight(): the 400 matches were all held, so their count was known.
    expect(t.store.lexical.postings.size).toMatchObject({ newScoredHere: 1, newScoredByFts5: 0 });
    expect(fts5.size).toBe(2);
    for (const [key, expected] of fts5)
      expect(Math.abs((got.get(key)! - expected) / expected)).toBeLessThanOrEqual(ULPS);
  });

  it('patches rewritten memories as FTS5 scores them, keeping the count: the next new match is not walked', () => {
    t.store.write(
      Array.from({ length: 400 }, (_, i) =>
        mem({ id: `m${i}`, text: `${i % 2 ? 'common' : 'rare'} filler ${i % 7}` }),
      ),
    );
    const search = () =>
      t.store.lexical.searchLexical({ namespace: 'ns', query: 'common', filters: {}, limit: 1_000 });
    search();
    // Rewrites (a write into a session rewrites its neighbours' context too): gained, lost, kept longer;
    // under a tenth of the corpus, which the cache tolerates before starting over.
    t.store.write(
      Array.from({ length: 24 }, (_, i) =>
        mem({
          id: `m${i * 5}`,
          text: i % 3 === 0 ? 'rare now' : `common ${'common '.repeat(i % 4)}again ${i}`,
        }),
      ),
    );
    const keyOf = (id: string) =>
      t.store.db.prepare('SELECT key FROM memories WHERE id = ?').pluck().get(id) as number;
    const rewritten = Array.from({ length: 24 }, (_, i) => keyOf(`m${i * 5}`));
    // The matches are FTS5's; the scores of the memories rewritten (or written) since the word was cached
    // are FTS5's as they read now. (The others keep the scores of the corpus they were scored in.)
    const check = (fresh: number[]) => {
      const fts5 = fts5Scores('"common"', 0);
      const got = new Map(search().candidates.map((c) => [c.key, c.bm25]));
      expect([...got.keys()].sort((a, b) => a - b)).toEqual([...fts5.keys()].sort((a, b) => a - b));
      for (const key of fresh) {
        const expected = fts5.get(key);
        if (expected === undefined) expect(got.has(key)).toBe(false);
        else expect(Math.abs((got.get(key)! - expected) / expected)).toBeLessThanOrEqual(ULPS);
      }
    };
    check(rewritten);
    // The count survived the rewrites, so a new match is scored here, with no walk of the doclist.
    t.store.write([mem({ id: 'new-1', text: 'common once more' })]);
    check([keyOf('new-1')]);
    expect(t.store.lexical.postings.size).toMatchObject({ newScoredHere: 1, newScoredByFts5: 0 });
  });
});
