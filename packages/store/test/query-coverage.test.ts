import Database from 'better-sqlite3';
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Fts5Terms, MEMORIES_FTS_TOKENIZE } from '../src/fts5-terms.js';
import { wordsSaidBy } from '../src/query-coverage.js';
import { StatementCache } from '../src/statement-cache.js';
import { mem, openTempStore, type TempStore } from './helpers.js';

let t: TempStore;
let terms: Fts5Terms;
beforeEach(() => {
  t = openTempStore('cairn-query-coverage-');
  terms = new Fts5Terms();
});
afterEach(() => {
  terms.close();
  t.cleanup();
});

// Forms porter folds together and forms it does not, identifiers (split into the `parts` column), case,
// digits, punctuation, and words FTS5 folds or splits outside ASCII.
const VOCAB = [
  'run',
  'runs',
  'running',
  'ran',
  'error',
  'errors',
  'Errors',
  'connect',
  'connection',
  'connected',
  'count_graph_server',
  'registerHandlerStore',
  'handler',
  'store',
  'v2',
  'node20',
  'the',
  'a',
  'CI',
  'café',
  'cafe',
  'naïve',
  'naive',
  'Straße',
  'strasse',
  '日本',
  'c++',
  'foo-bar',
  'foo',
  'bar',
  "don't",
];
const PUNCT = [' ', ' ', ' ', ', ', '. ', ': ', ' (', ') ', ' / ', '\n'];

function keysOf(): number[] {
  const db = new Database(t.path, { readonly: true });
  try {
    return db.prepare('SELECT key FROM memories ORDER BY key').pluck().all() as number[];
  } finally {
    db.close();
  }
}

function probedAndRead(words: string[], keys: number[]) {
  const db = new Database(t.path, { readonly: true });
  try {
    const statements = new StatementCache(db);
    return {
      probed: wordsSaidBy(statements, 'ns', words, keys),
      read: wordsSaidBy(statements, 'ns', words, keys, terms),
    };
  } finally {
    db.close();
  }
}

describe('a question word said by a memory, read from its own text', () => {
  it('is the tokenizer memories_fts is made with', () => {
    const db = new Database(t.path, { readonly: true });
    const sql = db
      .prepare("SELECT sql FROM sqlite_master WHERE name = 'memories_fts'")
      .pluck()
      .get() as string;
    db.close();
    expect(sql).toContain(`tokenize = "${MEMORIES_FTS_TOKENIZE}"`);
  });

  it("gives FTS5's own terms: stems, splits and folds, none for a word of separators", () => {
    const got = terms.termsOf(['running', 'Errors', 'count_graph_server', 'foo-bar', '+++', 'Café']);
    expect(Object.fromEntries(got)).toEqual({
      running: ['run'],
      Errors: ['error'],
      count_graph_server: ['count_graph_serv'],
      'foo-bar': ['foo', 'bar'],
      '+++': [],
      Café: ['cafe'],
    });
    // Held: asked again, the same answer.
    expect(terms.termsOf(['running']).get('running')).toEqual(['run']);
  });

  it('property: says of every memory what FTS5 says when asked, ASCII or not, title or text or parts', () => {
    const text = fc
      .array(fc.tuple(fc.constantFrom(...VOCAB), fc.constantFrom(...PUNCT)), { minLength: 1, maxLength: 12 })
      .map(
        (ws) =>
          ws
            .map(([w, p]) => w + p)
            .join('')
            .trim() || 'x',
      );
    fc.assert(
      fc.property(
        fc.array(fc.record({ text, title: fc.option(text, { nil: undefined }) }), {
          minLength: 1,
          maxLength: 6,
        }),
        fc.uniqueArray(fc.constantFrom(...VOCAB), { minLength: 1, maxLength: 6 }),
        (memories, words) => {
          t.store.write(
            memories.map((m, i) => mem({ id: `m${i}`, text: m.text, kind: 'observation', title: m.title })),
          );
          const keys = keysOf().slice(-memories.length);
          const { probed, read } = probedAndRead(words, keys);
          expect(read).toEqual(probed);
        },
      ),
      { numRuns: 60 },
    );
  });

  it('finds a word only in the memory that says it (and not one that says it in its context alone)', () => {
    t.store.write([
      mem({ id: 'a', text: 'The connection was refused twice', kind: 'observation', session: 's' }),
      mem({ id: 'b', text: 'We retried later', kind: 'observation', session: 's' }),
    ]);
    const [a, b] = keysOf();
    const { probed, read } = probedAndRead(['connect', 'refuse', 'retry'], [a!, b!]);
    expect(read).toEqual(probed);
    expect([...read.get(a!)!].sort()).toEqual(['connect', 'refuse']);
    expect([...read.get(b!)!]).toEqual(['retry']);
  });
});
