import type { SearchFilters } from '@cairn/core';
import { LexicalSearch, MemoryStore, planFtsQuery, renderFtsQuery, scopeToken } from '@cairn/store';
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mem, openTempStore, searchIds, T0, type TempStore } from './helpers.js';

let t: TempStore;
beforeEach(() => {
  t = openTempStore('cairn-lexical-');
});
afterEach(() => {
  t.cleanup();
});

/** Keys the FTS index itself (not the filtered search) holds for a term, across all namespaces. */
function ftsKeys(store: MemoryStore, term: string): number[] {
  return store.db
    .prepare('SELECT rowid FROM memories_fts WHERE memories_fts MATCH ? ORDER BY rowid')
    .pluck()
    .all(`"${term}"`) as number[];
}

/** Checks the external-content FTS index against the memories table; throws when they disagree. */
function assertFtsIntegrity(store: MemoryStore): void {
  store.db.prepare("INSERT INTO memories_fts (memories_fts, rank) VALUES ('integrity-check', 1)").run();
}

function namespaceOf(store: MemoryStore, key: number): string | undefined {
  return store.db.prepare('SELECT namespace FROM memories WHERE key = ?').pluck().get(key) as
    | string
    | undefined;
}

describe('LexicalSearch: FTS stays in sync with the records', () => {
  it('finds a memory as soon as it is written', () => {
    t.store.write([mem({ id: 'a', text: 'the kubernetes cluster was upgraded' })]);
    expect(searchIds(t.store, 'ns', 'kubernetes')).toEqual(['a']);
    assertFtsIntegrity(t.store);
  });

  it('finds the new text and not the old text after an update', () => {
    const [res] = t.store.write([mem({ id: 'a', text: 'we deploy with heroku' })]);
    t.store.write([mem({ id: 'a', text: 'we deploy with kamal' })]);
    expect(searchIds(t.store, 'ns', 'kamal')).toEqual(['a']);
    expect(searchIds(t.store, 'ns', 'heroku')).toEqual([]);
    // The old term is gone from the index itself, not merely filtered out.
    expect(ftsKeys(t.store, 'heroku')).toEqual([]);
    expect(ftsKeys(t.store, 'kamal')).toEqual([res!.key]);
    assertFtsIntegrity(t.store);
  });

  it('indexes and re-indexes the title', () => {
    t.store.write([mem({ id: 'a', title: 'Postgres migration', text: 'notes' })]);
    expect(searchIds(t.store, 'ns', 'postgres')).toEqual(['a']);
    t.store.write([mem({ id: 'a', title: 'MySQL migration', text: 'notes' })]);
    expect(searchIds(t.store, 'ns', 'postgres')).toEqual([]);
    expect(searchIds(t.store, 'ns', 'mysql')).toEqual(['a']);
    assertFtsIntegrity(t.store);
  });

  it('stops finding a memory once it is deleted', () => {
    t.store.write([
      mem({ id: 'a', text: 'ephemeral secret rotation' }),
      mem({ id: 'b', text: 'secret santa' }),
    ]);
    t.store.delete('ns', 'a');
    expect(searchIds(t.store, 'ns', 'secret')).toEqual(['b']);
    expect(searchIds(t.store, 'ns', 'ephemeral')).toEqual([]);
  });

  it('removes a row from the index when it is deleted from the table', () => {
    const [res] = t.store.write([mem({ id: 'a', text: 'purged entirely' })]);
    t.store.db.prepare('DELETE FROM memories WHERE key = ?').run(res!.key);
    expect(ftsKeys(t.store, 'purged')).toEqual([]);
    assertFtsIntegrity(t.store);
  });

  it('keeps the index consistent through any sequence of writes, rewrites and deletes', () => {
    const words = ['alpha', 'beta', 'gamma', 'delta', 'parseConfig', 'src/auth/x.ts'];
    const op = fc.record({
      id: fc.constantFrom('a', 'b', 'c'),
      del: fc.boolean(),
      text: fc.array(fc.constantFrom(...words), { minLength: 1, maxLength: 4 }).map((w) => w.join(' ')),
    });
    let run = 0;
    fc.assert(
      fc.property(fc.array(op, { maxLength: 12 }), (ops) => {
        const namespace = `sync${run++}`;
        const latest = new Map<string, string | null>();
        for (const o of ops) {
          if (o.del) {
            t.store.delete(namespace, o.id);
            latest.set(o.id, null);
          } else {
            t.store.write([mem({ namespace, id: o.id, text: o.text })]);
            latest.set(o.id, o.text);
          }
        }
        assertFtsIntegrity(t.store);
        for (const w of ['alpha', 'beta', 'gamma', 'delta']) {
          const expected = [...latest].filter(([, text]) => text?.split(' ').includes(w)).map(([id]) => id);
          expect(searchIds(t.store, namespace, w).sort()).toEqual(expected.sort());
        }
      }),
      { numRuns: 40 },
    );
  });
});

describe('LexicalSearch: code-aware matching', () => {
  beforeEach(() => {
    t.store.write([
      mem({ id: 'camel', text: 'We fixed a crash in parseConfig yesterday' }),
      mem({ id: 'snake', text: 'The python helper parse_config reads yaml' }),
      mem({ id: 'path', text: 'Auth checks live in src/auth/middleware.ts now' }),
      mem({ id: 'prose', text: 'Please parse the config file before starting' }),
      mem({ id: 'mw', text: 'Express middleware ordering matters' }),
      mem({ id: 'noise', text: 'Lunch was pizza again' }),
    ]);
  });

  it("finds parseConfig and parse_config by 'config'", () => {
    expect(searchIds(t.store, 'ns', 'config')).toEqual(expect.arrayContaining(['camel', 'snake', 'prose']));
  });

  it("finds parseConfig and parse_config by 'parse'", () => {
    expect(searchIds(t.store, 'ns', 'parse')).toEqual(expect.arrayContaining(['camel', 'snake', 'prose']));
  });

  it("finds src/auth/middleware.ts by 'middleware' and by 'auth'", () => {
    expect(searchIds(t.store, 'ns', 'middleware')).toEqual(expect.arrayContaining(['path', 'mw']));
    expect(searchIds(t.store, 'ns', 'auth')).toContain('path');
  });

  it('ranks a document that says the word outright above one that only contains it inside an identifier', () => {
    const ids = searchIds(t.store, 'ns', 'config');
    expect(ids[0]).toBe('prose');
  });

  it('ranks the exact camelCase identifier first', () => {
    const ids = searchIds(t.store, 'ns', 'parseConfig');
    expect(ids[0]).toBe('camel');
    expect(ids).toContain('snake');
  });

  it('ranks the exact snake_case identifier first', () => {
    expect(searchIds(t.store, 'ns', 'parse_config')[0]).toBe('snake');
  });

  it('ranks the exact path first', () => {
    const ids = searchIds(t.store, 'ns', 'src/auth/middleware.ts');
    expect(ids[0]).toBe('path');
    expect(ids).toContain('mw');
  });

  it('ignores punctuation around an identifier', () => {
    expect(searchIds(t.store, 'ns', 'parseConfig()')[0]).toBe('camel');
    expect(searchIds(t.store, 'ns', '`parse_config`:')[0]).toBe('snake');
  });

  it('never returns documents without any query term', () => {
    expect(searchIds(t.store, 'ns', 'parseConfig src/auth/middleware.ts')).not.toContain('noise');
  });
});

describe('LexicalSearch: query handling', () => {
  beforeEach(() => {
    t.store.write([
      mem({ id: 'a', text: 'what is the retry policy for webhooks' }),
      mem({ id: 'b', text: 'it is what it is' }),
      mem({ id: 't', title: 'webhooks', text: 'delivery notes' }),
    ]);
  });

  it('drops stop words and reports them', () => {
    const res = t.store.lexical.searchLexical({
      namespace: 'ns',
      query: 'what is the retry policy',
      filters: {},
      limit: 10,
    });
    expect(res.droppedTerms).toEqual(expect.arrayContaining(['what', 'is', 'the']));
    expect(res.ftsQuery).not.toContain('"the"');
    expect(res.candidates.map((c) => c.key)).toHaveLength(1);
  });

  it('keeps stop words when the query has nothing else', () => {
    const res = t.store.lexical.searchLexical({
      namespace: 'ns',
      query: 'what is it',
      filters: {},
      limit: 10,
    });
    expect(res.droppedTerms).toEqual([]);
    expect(res.candidates.length).toBeGreaterThan(0);
  });

  it('returns no candidates and a null query for a query with no searchable term', () => {
    for (const query of ['', '   ', '!!! ??? ---', '"()"']) {
      const res = t.store.lexical.searchLexical({ namespace: 'ns', query, filters: {}, limit: 10 });
      expect(res).toEqual({ candidates: [], ftsQuery: null, droppedTerms: [] });
    }
  });

  it('returns 1-based consecutive ranks in bm25 order and respects the limit', () => {
    t.store.write(
      Array.from({ length: 20 }, (_, i) => mem({ id: `w${i}`, text: `webhooks ${'retry '.repeat(i)}` })),
    );
    const res = t.store.lexical.searchLexical({
      namespace: 'ns',
      query: 'webhooks retry',
      filters: {},
      limit: 7,
    });
    expect(res.candidates).toHaveLength(7);
    expect(res.candidates.map((c) => c.rank)).toEqual([1, 2, 3, 4, 5, 6, 7]);
    for (let i = 1; i < res.candidates.length; i++) {
      expect(res.candidates[i]!.bm25).toBeGreaterThanOrEqual(res.candidates[i - 1]!.bm25);
    }
  });

  it('ranks a title match above a text match', () => {
    expect(searchIds(t.store, 'ns', 'webhooks')[0]).toBe('t');
  });

  it('drops very frequent terms on large corpora but keeps the rarest', () => {
    t.cleanup();
    t = openTempStore('cairn-lexical-');
    const { store } = t;
    const pruning = new LexicalSearch(store.db, { pruneAboveDocs: 5, maxTermDocShare: 0.5 });
    store.write(
      Array.from({ length: 10 }, (_, i) =>
        mem({ id: `c${i}`, text: `common filler ${i === 3 ? 'rare' : ''}` }),
      ),
    );
    const res = pruning.searchLexical({ namespace: 'ns', query: 'common rare', filters: {}, limit: 10 });
    expect(res.droppedTerms).toEqual(['common']);
    expect(res.ftsQuery).not.toContain('"common"');
    expect(res.candidates).toHaveLength(1);
    const onlyFrequent = pruning.searchLexical({
      namespace: 'ns',
      query: 'common filler',
      filters: {},
      limit: 10,
    });
    expect(onlyFrequent.ftsQuery).not.toBeNull();
    expect(onlyFrequent.candidates).toHaveLength(10);
  });
});

describe('planFtsQuery and renderFtsQuery', () => {
  it('quotes every term and adds identifier and path phrases', () => {
    expect(planFtsQuery('parseConfig src/auth/middleware.ts').terms).toEqual([
      '"parseconfig"',
      '"src"',
      '"auth"',
      '"middleware"',
      '"ts"',
      '"parse config"',
      '"src auth middleware ts"',
    ]);
  });

  it('caps the number of terms', () => {
    const many = Array.from({ length: 100 }, (_, i) => `word${i}`).join(' ');
    expect(planFtsQuery(many).terms).toHaveLength(32);
    expect(planFtsQuery(many, { maxTerms: 3 }).terms).toHaveLength(3);
  });

  it('leaves stop words and the verb of a state question out of the query', () => {
    const plan = planFtsQuery('Which ORM are we using, and which do we use?');
    expect(plan.terms).toEqual(['"orm"']);
    expect(plan.stopWords).toEqual(expect.arrayContaining(['which', 'using', 'use']));
    // A query of nothing else still searches for what it has.
    expect(planFtsQuery('use').terms).toEqual(['"use"']);
  });

  it('removes duplicate terms', () => {
    expect(planFtsQuery('config Config CONFIG').terms).toEqual(['"config"']);
  });

  it('confines the rendered query to the namespace token', () => {
    expect(renderFtsQuery(['"a"', '"b"'], 'nsabc')).toBe('scope : "nsabc" AND ("a" OR "b")');
    expect(renderFtsQuery(['"a"'])).toBe('"a"');
    expect(renderFtsQuery([], 'nsabc')).toBeNull();
  });

  it('derives a fixed-length hex scope token per namespace', () => {
    expect(scopeToken('acme/api')).toMatch(/^ns[0-9a-f]{16}$/);
    expect(scopeToken('acme/api')).toBe(scopeToken('acme/api'));
    expect(scopeToken('acme/api')).not.toBe(scopeToken('acme/web'));
  });
});

describe('LexicalSearch: the query sanitizer never lets input reach FTS5 as syntax', () => {
  const FTS_TOKENS = [
    'AND',
    'OR',
    'NOT',
    'NEAR',
    'NEAR(',
    'NEAR/2',
    '-',
    '+',
    '*',
    ':',
    '^',
    '"',
    "'",
    '(',
    ')',
    '{',
    '}',
    '[',
    ']',
    ',',
    '.',
    '/',
    '\\',
    'title:',
    'scope:',
    'text :',
    '{title text}:',
    'alpha*',
    '^alpha',
    '-beta',
    'alpha',
    'beta',
    'and',
    'or',
    'not',
    'near',
    'parseConfig',
    'parse_config',
    'src/auth/middleware.ts',
    'café',
    'naïve',
    '東京',
    'Ελληνικά',
    'עברית',
    '🙂',
    '\u200b',
    '\u0000',
    '\ufeff',
    '\ud800',
    'ǅ',
    'ﬁ',
    'ᅟ',
    '١٢٣',
    ' ',
    '\t',
    '\n',
  ];
  const tokenSoup = fc
    .array(fc.constantFrom(...FTS_TOKENS), { maxLength: 20 })
    .chain((toks) => fc.constantFrom(toks.join(''), toks.join(' ')));
  const utf16 = fc.string({
    unit: fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c)),
    maxLength: 40,
  });
  const queries = fc.oneof(
    fc.string(),
    fc.string({ unit: 'binary' }),
    fc.string({ unit: 'grapheme' }),
    utf16,
    tokenSoup,
  );
  // The namespace clause is added only when the namespace is a minority of the corpus.
  const RENDERED = /^(scope : "ns[0-9a-f]{16}" AND \("[^"]+"( OR "[^"]+")*\)|"[^"]+"( OR "[^"]+")*)$/u;

  beforeEach(() => {
    t.store.write([
      mem({ id: '1', text: 'alpha AND beta OR gamma NOT delta near the end' }),
      mem({ id: '2', title: 'title: scope:', text: 'parseConfig src/auth/middleware.ts café 東京 🙂' }),
      mem({ id: '3', text: '"quoted" (parenthesised) {braced} a*b ^c -d +e' }),
      mem({ namespace: 'other', id: '4', text: 'alpha beta gamma in another namespace' }),
    ]);
  });

  it('never throws on arbitrary strings, and renders only quoted terms', () => {
    fc.assert(
      fc.property(queries, (query) => {
        const res = t.store.lexical.searchLexical({ namespace: 'ns', query, filters: {}, limit: 10 });
        if (res.ftsQuery !== null) expect(res.ftsQuery).toMatch(RENDERED);
        for (const c of res.candidates) expect(namespaceOf(t.store, c.key)).toBe('ns');
      }),
      { numRuns: 1000 },
    );
  });

  it('renders each planned term as one double-quoted string with no quote inside', () => {
    fc.assert(
      fc.property(queries, (query) => {
        // Not only letters and digits: lower-casing may add combining marks ('İ' → 'i̇'), which are
        // harmless inside an FTS5 string. Only a double quote could end the string early.
        for (const term of planFtsQuery(query).terms) {
          expect(term).toMatch(/^"[^"]+"$/u);
          expect(term.slice(1, -1).trim()).not.toBe('');
        }
      }),
      { numRuns: 1000 },
    );
  });

  it('treats operator words as plain words', () => {
    for (const query of ['NOT', 'alpha NOT beta', 'NEAR(alpha beta)', 'alpha*', '-delta', 'title:alpha']) {
      expect(() =>
        t.store.lexical.searchLexical({ namespace: 'ns', query, filters: {}, limit: 10 }),
      ).not.toThrow();
    }
    expect(searchIds(t.store, 'ns', 'NOT')).toEqual(['1']);
    expect(searchIds(t.store, 'ns', 'scope')).toEqual(['2']);
  });
});

describe('LexicalSearch: namespace isolation', () => {
  it("never returns another namespace's rows, even for identical text", () => {
    const a = t.store.write([mem({ namespace: 'team/a', id: 'x', text: 'shared words about deployment' })]);
    const b = t.store.write([mem({ namespace: 'team/b', id: 'x', text: 'shared words about deployment' })]);
    const resA = t.store.lexical.searchLexical({
      namespace: 'team/a',
      query: 'deployment',
      filters: {},
      limit: 10,
    });
    const resB = t.store.lexical.searchLexical({
      namespace: 'team/b',
      query: 'deployment',
      filters: {},
      limit: 10,
    });
    expect(resA.candidates.map((c) => c.key)).toEqual([a[0]!.key]);
    expect(resB.candidates.map((c) => c.key)).toEqual([b[0]!.key]);
    expect(
      t.store.lexical.searchLexical({ namespace: 'team', query: 'deployment', filters: {}, limit: 10 })
        .candidates,
    ).toEqual([]);
  });

  it("never counts another tenant's matches in the plan it reports, though its terms are counted folder-wide", () => {
    t.store.write([
      mem({ namespace: 'team/bob', id: 'b1', text: 'acquisition target is initech' }),
      mem({ namespace: 'team/bob', id: 'b2', text: 'layoffs planned in march' }),
      // Alice holds half of the folder: her terms are scored with the folder's counts.
      mem({ namespace: 'team/alice', id: 'a1', text: 'lunch order for friday' }),
      mem({ namespace: 'team/alice', id: 'a2', text: 'standup moved to ten' }),
    ]);
    const plan = (namespace: string, query: string) =>
      t.store.lexical.searchLexical({ namespace, query, filters: {}, limit: 10 }).plan;
    // It was 1 for initech and 0 for globex: a yes/no test of a word in Bob's memories.
    for (const word of ['initech', 'globex', 'layoffs'])
      expect(plan('team/alice', word)).not.toHaveProperty('estimatedMatches');
    // A folder of one tenant still reports it.
    t.store.write([mem({ namespace: 'solo', id: 's1', text: 'initech' })]);
    for (const id of ['b1', 'b2', 'a1', 'a2'])
      t.store.delete(id.startsWith('b') ? 'team/bob' : 'team/alice', id);
    expect(plan('solo', 'initech')).toHaveProperty('estimatedMatches');
  });

  it('keeps namespaces apart for arbitrary corpora and queries', () => {
    const words = ['red', 'green', 'blue', 'parseConfig', 'auth', 'the'];
    const doc = fc.record({
      namespace: fc.constantFrom('a', 'b', 'a/b', 'b:a'),
      text: fc.array(fc.constantFrom(...words), { minLength: 1, maxLength: 5 }).map((w) => w.join(' ')),
    });
    let run = 0;
    fc.assert(
      fc.property(
        fc.array(doc, { minLength: 1, maxLength: 15 }),
        fc.constantFrom(...words),
        (docs, query) => {
          const prefix = `iso${run++}`;
          t.store.write(
            docs.map((d, i) => mem({ namespace: `${prefix}-${d.namespace}`, id: `d${i}`, text: d.text })),
          );
          for (const ns of ['a', 'b', 'a/b', 'b:a']) {
            const namespace = `${prefix}-${ns}`;
            const res = t.store.lexical.searchLexical({ namespace, query, filters: {}, limit: 100 });
            for (const c of res.candidates) expect(namespaceOf(t.store, c.key)).toBe(namespace);
            const expected = docs.filter(
              (d) => d.namespace === ns && d.text.split(' ').includes(query),
            ).length;
            expect(res.candidates).toHaveLength(expected);
          }
        },
      ),
      { numRuns: 40 },
    );
  });
});

describe("LexicalSearch: a namespace's scores are its own", () => {
  const FILLER = ['alpha', 'beta', 'gamma', 'delta', 'epsilon', 'zeta', 'theta', 'kappa'];
  /** Five tokens a memory ("won't" is two), so that every row is as long and the file's average stays put. */
  const five = (i: number, ...say: string[]) => {
    const tokens = say.join(' ').split(/\W+/).filter(Boolean).length;
    return [...say, ...FILLER.slice(i % 3, (i % 3) + 5 - tokens)].join(' ');
  };
  const ranked = (namespace: string, query: string) =>
    t.store.lexical
      .searchLexical({ namespace, query, filters: {}, limit: 10 })
      .candidates.map((c) => ({ key: c.key, bm25: c.bm25 }));

  /** The same memories in the same order, with the same scores. */
  function expectSameScores(got: ReturnType<typeof ranked>, want: ReturnType<typeof ranked>): void {
    expect(got.map((c) => c.key)).toEqual(want.map((c) => c.key));
    for (const [i, c] of got.entries()) expect(c.bm25).toBeCloseTo(want[i]!.bm25, 9);
  }

  /** Tenant p1: a few memories say "deploy", fewer "rollback", and two of them both. */
  function writeP1(extra = 0): void {
    t.store.write(
      Array.from({ length: 20 + extra }, (_, i) =>
        mem({
          namespace: 'p1',
          id: `m${i}`,
          text: five(i, ...(i < 3 ? ['deploy'] : []), ...(i === 1 || i === 4 || i === 5 ? ['rollback'] : [])),
        }),
      ),
    );
  }

  it("scores a minority tenant as if it were alone, whatever another tenant writes (the idf is the tenant's)", () => {
    writeP1();
    const alone = ranked('p1', 'deploy rollback');
    expect(alone.length).toBe(5);
    // Another tenant says "deploy" in a thousand memories: in the whole file the word is now in nearly every
    // row, where FTS5 clamps its idf to 1e-6. p1 is now a minority: its MATCH is confined to its token.
    t.store.write(
      Array.from({ length: 1000 }, (_, i) => mem({ namespace: 'p2', id: `n${i}`, text: five(i, 'deploy') })),
    );
    const fts5 = t.store.db
      .prepare(
        `SELECT rowid, bm25(memories_fts, 3, 1, 0.4, 0, 0.5) AS s FROM memories_fts WHERE memories_fts MATCH ? AND rowid = ?`,
      )
      .get('"deploy"', alone[0]!.key) as { s: number };
    expect(fts5.s).toBeGreaterThan(-0.001);
    const shared = ranked('p1', 'deploy rollback');
    expectSameScores(shared, alone);
  });

  it("keeps a cached term's scores on one idf when another tenant moves the file's count between writes", () => {
    // p1 is a minority from the start: its terms are confined to its token and cached as such.
    t.store.write(
      Array.from({ length: 5000 }, (_, i) => mem({ namespace: 'p0', id: `f${i}`, text: five(i) })),
    );
    writeP1();
    const before = ranked('p1', 'deploy');
    // Another tenant says the word 400 times (under a tenth of the file: the cache does not start over),
    // then p1 writes a memory shaped as its first: appended to the cached term, scored by FTS5 at the
    // file's new count, and scaled back to the idf the term's other scores carry.
    t.store.write(
      Array.from({ length: 400 }, (_, i) => mem({ namespace: 'p2', id: `n${i}`, text: five(i, 'deploy') })),
    );
    t.store.write([mem({ namespace: 'p1', id: 'late', text: five(0, 'deploy') })]);
    const after = ranked('p1', 'deploy');
    const first = t.store.get('p1', ['m0', 'late']).memories.map((m) => m.key);
    const score = (key: number) => after.find((c) => c.key === key)!.bm25;
    expect(score(first[1]!)).toBeCloseTo(score(first[0]!), 9);
    // Four of p1's 21 rows say it now, against three of 20: what p1 alone would give.
    const idf = (rows: number, hits: number) => Math.log((rows - hits + 0.5) / (hits + 0.5));
    expect(score(first[0]!)).toBeCloseTo(
      (before.find((c) => c.key === first[0])!.bm25 * idf(21, 4)) / idf(20, 3),
      9,
    );
  });

  it('weighs a phrase of a short word ("won\'t") by the tenant\'s count too', () => {
    t.store.write(
      Array.from({ length: 20 }, (_, i) =>
        mem({ namespace: 'p1', id: `m${i}`, text: five(i, ...(i < 2 ? ["won't", 'deploy'] : [])) }),
      ),
    );
    const alone = ranked('p1', "won't deploy");
    t.store.write(
      Array.from({ length: 1000 }, (_, i) =>
        mem({ namespace: 'p2', id: `n${i}`, text: five(i, ...(i % 2 ? ["won't"] : [])) }),
      ),
    );
    const shared = ranked('p1', "won't deploy");
    expectSameScores(shared, alone);
  });

  it('keeps one idf in a tenant whose word another tenant pushes past half the file, then writes once more', () => {
    t.store.write(
      Array.from({ length: 455 }, (_, i) =>
        mem({ namespace: 'a', id: `a${i}`, text: five(i, ...(i < 3 ? ['deploy'] : [])) }),
      ),
    );
    t.store.write(
      Array.from({ length: 482 }, (_, i) => mem({ namespace: 'b', id: `b${i}`, text: five(i, 'deploy') })),
    );
    const before = ranked('a', 'deploy');
    t.store.write(
      Array.from({ length: 45 }, (_, i) => mem({ namespace: 'b', id: `c${i}`, text: five(i, 'deploy') })),
    );
    t.store.write([mem({ namespace: 'a', id: 'late', text: five(0, 'deploy') })]);
    const after = ranked('a', 'deploy');
    const [first, late] = t.store.get('a', ['a0', 'late']).memories.map((m) => m.key);
    const score = (key: number) => after.find((c) => c.key === key)!.bm25;
    expect(score(late!)).toBeCloseTo(score(first!), 9);
    const idf = (rows: number, hits: number) => Math.log((rows - hits + 0.5) / (hits + 0.5));
    expect(score(first!)).toBeCloseTo((before[0]!.bm25 * idf(456, 4)) / idf(455, 3), 9);
  });

  it("counts a tenant's own new rows of the word at once", () => {
    /** p1 with 600 rows, 3 saying the word; searched, then 50 more say it; alone, or beside a larger tenant. */
    const run = (other: boolean) => {
      const s = openTempStore('cairn-lexical-');
      try {
        s.store.write(
          Array.from({ length: 600 }, (_, i) =>
            mem({ namespace: 'p1', id: `a${i}`, text: five(i, ...(i < 3 ? ['deploy'] : [])) }),
          ),
        );
        if (other)
          s.store.write(
            Array.from({ length: 700 }, (_, i) => mem({ namespace: 'p2', id: `b${i}`, text: five(i) })),
          );
        s.store.lexical.searchLexical({ namespace: 'p1', query: 'deploy', filters: {}, limit: 10 });
        s.store.write(
          Array.from({ length: 50 }, (_, i) =>
            mem({ namespace: 'p1', id: `n${i}`, text: five(i + 1, 'deploy') }),
          ),
        );
        return s.store.lexical
          .searchLexical({ namespace: 'p1', query: 'deploy', filters: {}, limit: 60 })
          .candidates.map((c) => c.bm25)
          .sort((x, y) => x - y);
      } finally {
        s.cleanup();
      }
    };
    const alone = run(false);
    const shared = run(true);
    expect(shared).toHaveLength(alone.length);
    for (const [i, b] of shared.entries()) expect(b).toBeCloseTo(alone[i]!, 9);
  });

  it("counts another process's writes into the namespace as its own cache syncs", () => {
    t.store.write(
      Array.from({ length: 1000 }, (_, i) => mem({ namespace: 'z', id: `z${i}`, text: five(i) })),
    );
    t.store.write(
      Array.from({ length: 5 }, (_, i) =>
        mem({ namespace: 'p', id: `p${i}`, text: five(i, ...(i === 0 ? ['deploy'] : [])) }),
      ),
    );
    ranked('p', 'deploy');
    const other = new MemoryStore({ path: t.path });
    try {
      other.write(
        Array.from({ length: 30 }, (_, i) =>
          mem({ namespace: 'p', id: `q${i}`, text: five(i, ...(i % 3 === 0 ? ['deploy'] : [])) }),
        ),
      );
      const fresh = new MemoryStore({ path: t.path, readonly: true });
      try {
        const want = fresh.lexical
          .searchLexical({ namespace: 'p', query: 'deploy', filters: {}, limit: 10 })
          .candidates.map((c) => ({ key: c.key, bm25: c.bm25 }));
        expectSameScores(ranked('p', 'deploy'), want);
        expect(want[0]!.bm25).toBeLessThan(-0.1);
      } finally {
        fresh.close();
      }
    } finally {
      other.close();
    }
  });

  it('weighs a search without context by the rows saying the word in their own columns', () => {
    /** Turns in one session each (their context is the turn before), one in forty saying the word. */
    const turns = (ns: string, word: boolean) =>
      Array.from({ length: 600 }, (_, i) =>
        mem({
          namespace: ns,
          id: `${ns}${i}`,
          kind: 'turn',
          session: `s-${ns}`,
          ts: T0 + i * 1000,
          text: five(i, ...(word && i % 40 === 0 ? ['deploy'] : [])),
        }),
      );
    t.store.write(turns('p1', true));
    const alone = t.store.lexical
      .searchLexical({ namespace: 'p1', query: 'deploy', filters: {}, limit: 10, contextWeight: 0 })
      .candidates.map((c) => ({ key: c.key, bm25: c.bm25 }));
    // Two tenants shaped as p1's turns, without the word: the file's average length stays put.
    t.store.write([...turns('p2', false), ...turns('p3', false)]);
    const shared = t.store.lexical
      .searchLexical({ namespace: 'p1', query: 'deploy', filters: {}, limit: 10, contextWeight: 0 })
      .candidates.map((c) => ({ key: c.key, bm25: c.bm25 }));
    expectSameScores(shared, alone);
  });

  it("gives the second tenant's words to the first at once, not after the row counts' age", () => {
    writeP1();
    const alone = ranked('p1', 'deploy');
    // p1's 20 rows become a minority of the file with p2's first write.
    t.store.write(
      Array.from({ length: 25 }, (_, i) => mem({ namespace: 'p2', id: `n${i}`, text: five(i, 'deploy') })),
    );
    expectSameScores(ranked('p1', 'deploy'), alone);
  });
});

describe('LexicalSearch: superseded and deleted memories', () => {
  it('excludes superseded memories from search', () => {
    t.store.write([mem({ id: 'old', text: 'the staging database is db1' })]);
    t.store.write([mem({ id: 'new', text: 'the staging database is db2', supersedes: ['old'] })]);
    expect(searchIds(t.store, 'ns', 'staging database')).toEqual(['new']);
    expect(searchIds(t.store, 'ns', 'db1')).toEqual([]);
  });

  it('excludes deleted memories from search and from counts', () => {
    t.store.write([mem({ id: 'a', text: 'rotate keys' }), mem({ id: 'b', text: 'rotate tyres' })]);
    t.store.delete('ns', 'a');
    expect(searchIds(t.store, 'ns', 'rotate')).toEqual(['b']);
    expect(t.store.countLive('ns')).toBe(1);
  });
});

describe('LexicalSearch: filters are never violated', () => {
  const KINDS = ['fact', 'turn', 'summary'] as const;
  const SESSIONS = ['s1', 's2'] as const;
  const AGENTS = ['claude', 'codex'] as const;
  const TAGS = ['red', 'green', 'blue'] as const;
  const DAY = 86_400_000;

  const record = fc.record({
    kind: fc.constantFrom(...KINDS),
    session: fc.option(fc.constantFrom(...SESSIONS), { nil: undefined }),
    agent: fc.option(fc.constantFrom(...AGENTS), { nil: undefined }),
    tags: fc.subarray([...TAGS]),
    day: fc.integer({ min: 0, max: 9 }),
    fate: fc.constantFrom('live', 'live', 'live', 'deleted', 'superseded'),
  });
  const filters: fc.Arbitrary<SearchFilters> = fc.record(
    {
      kinds: fc.subarray([...KINDS, 'prompt']),
      sessions: fc.subarray([...SESSIONS, 's3']),
      agents: fc.subarray([...AGENTS]),
      tags: fc.subarray([...TAGS, 'purple']),
      since: fc.integer({ min: -1, max: 10 }).map((d) => T0 + d * DAY),
      until: fc.integer({ min: 0, max: 11 }).map((d) => T0 + d * DAY),
    },
    { requiredKeys: [] },
  );

  type Rec = typeof record extends fc.Arbitrary<infer R> ? R : never;

  function passes(r: Rec, f: SearchFilters): boolean {
    const ts = T0 + r.day * DAY;
    if (f.kinds?.length && !f.kinds.includes(r.kind)) return false;
    if (f.sessions?.length && (r.session === undefined || !f.sessions.includes(r.session))) return false;
    if (f.agents?.length && (r.agent === undefined || !f.agents.includes(r.agent))) return false;
    if (f.tags?.length && !r.tags.some((tag) => f.tags!.includes(tag))) return false;
    if (f.since !== undefined && ts < f.since) return false;
    if (f.until !== undefined && ts >= f.until) return false;
    return r.fate === 'live';
  }

  it('returns exactly the live memories that pass kinds, sessions, agents, tags, since and until', () => {
    let run = 0;
    fc.assert(
      fc.property(fc.array(record, { minLength: 1, maxLength: 20 }), filters, (recs, f) => {
        const namespace = `filters${run++}`;
        t.store.write(
          recs.map((r, i) =>
            mem({
              namespace,
              id: `m${i}`,
              text: `harbour report number ${i}`,
              kind: r.kind,
              session: r.session,
              agent: r.agent,
              tags: r.tags,
              ts: T0 + r.day * DAY,
            }),
          ),
        );
        recs.forEach((r, i) => {
          if (r.fate === 'deleted') t.store.delete(namespace, `m${i}`);
          if (r.fate === 'superseded') {
            t.store.write([
              mem({ namespace, id: `r${i}`, text: 'replacement without the word', supersedes: [`m${i}`] }),
            ]);
          }
        });
        const expected = recs.flatMap((r, i) => (passes(r, f) ? [`m${i}`] : [])).sort();
        const res = t.store.lexical.searchLexical({ namespace, query: 'harbour', filters: f, limit: 100 });
        const found = t.store.liveByKeys(
          namespace,
          res.candidates.map((c) => c.key),
        );
        expect(found.size).toBe(res.candidates.length);
        expect([...found.values()].map((m) => m.id).sort()).toEqual(expected);
        // The replacement memories are live too (kind observation, no session/agent/tags, ts T0).
        const replacement: Rec = {
          kind: 'observation' as Rec['kind'],
          session: undefined,
          agent: undefined,
          tags: [],
          day: 0,
          fate: 'live',
        };
        const replacements = recs.filter((r) => r.fate === 'superseded').length;
        expect(t.store.countMatching(namespace, f)).toBe(
          expected.length + (passes(replacement, f) ? replacements : 0),
        );
      }),
      { numRuns: 120 },
    );
  });

  it('matches a tag filter against any of the tags, not a prefix or substring', () => {
    t.store.write([
      mem({ id: 'a', text: 'harbour', tags: ['blue'] }),
      mem({ id: 'b', text: 'harbour', tags: ['blueberry'] }),
      mem({ id: 'c', text: 'harbour', tags: ['red', 'blue'] }),
    ]);
    const res = t.store.lexical.searchLexical({
      namespace: 'ns',
      query: 'harbour',
      filters: { tags: ['blue'] },
      limit: 10,
    });
    const ids = [
      ...t.store
        .liveByKeys(
          'ns',
          res.candidates.map((c) => c.key),
        )
        .values(),
    ]
      .map((m) => m.id)
      .sort();
    expect(ids).toEqual(['a', 'c']);
  });

  it('treats since as inclusive and until as exclusive', () => {
    t.store.write([
      mem({ id: 'at', text: 'harbour', ts: T0 }),
      mem({ id: 'after', text: 'harbour', ts: T0 + 1 }),
    ]);
    const ids = (filters: SearchFilters) => {
      const res = t.store.lexical.searchLexical({ namespace: 'ns', query: 'harbour', filters, limit: 10 });
      return [
        ...t.store
          .liveByKeys(
            'ns',
            res.candidates.map((c) => c.key),
          )
          .values(),
      ]
        .map((m) => m.id)
        .sort();
    };
    expect(ids({ since: T0 })).toEqual(['after', 'at']);
    expect(ids({ until: T0 + 1 })).toEqual(['at']);
    expect(ids({ since: T0, until: T0 })).toEqual([]);
  });
});

describe('LexicalSearch: corpus statistics', () => {
  it("counts a namespace's rows and the corpus's as count(*) does, writes included", () => {
    t.store.write([mem({ id: 'a', text: 'alpha' }), mem({ id: 'b', text: 'beta' })]);
    t.store.write([mem({ id: 'c', namespace: 'other', text: 'gamma' })]);
    const count = (ns?: string) =>
      (ns === undefined
        ? t.store.db.prepare('SELECT count(*) FROM memories').pluck().get()
        : t.store.db.prepare('SELECT count(*) FROM memories WHERE namespace = ?').pluck().get(ns)) as number;
    const stats = new LexicalSearch(t.store.db).stats;
    expect([stats.rows('ns'), stats.rows('other'), stats.rows('none'), stats.rows()]).toEqual([
      count('ns'),
      count('other'),
      0,
      count(),
    ]);
    expect(stats.rows()).toBe(3);
  });
});
