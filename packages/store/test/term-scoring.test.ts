import { MemoryStore, type ScoredMatches, type TermScoreRequest, type TermScorer } from '@cairn/store';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import scoreTermTask from '../src/term-score-task.js';
import { mem, openTempStore, type TempStore } from './helpers.js';

// A server scores the terms it sees for the first time on a thread of its own (the engine's term pool runs
// term-score-task.ts); here the same task runs behind a gate the test opens, so writes and searches can land
// between a term being asked for and its scores arriving. Whatever happens meanwhile, the leg must rank
// exactly as a reader scoring everything inline.

let t: TempStore;
beforeEach(() => {
  t = openTempStore('cairn-term-scoring-');
  // 5,000 memories: "common" in every one, "usual" in every other, "rare" in a few.
  const batch = [];
  for (let i = 0; i < 5_000; i++) {
    const words = ['common', 'filler', `w${i % 97}`];
    if (i % 2 === 0) words.push('usual');
    if (i % 500 === 0) words.push('rare');
    batch.push(mem({ id: `m${i}`, namespace: 'ns', text: words.join(' ') }));
  }
  t.store.write(batch);
});
afterEach(() => t.cleanup());

/**
 * The task, answering when the test says so; `asked` lists the requests. `readEarly`: it reads the store
 * at once (a snapshot older than what the test writes next) and answers later.
 */
function gatedScorer(readEarly = false) {
  const asked: TermScoreRequest[] = [];
  let open!: () => void;
  const gate = new Promise<void>((r) => {
    open = r;
  });
  const scorer: TermScorer = async (req): Promise<ScoredMatches> => {
    asked.push(req);
    const early = readEarly ? scoreTermTask({ ...req, path: t.path }) : null;
    await gate;
    return early ?? scoreTermTask({ ...req, path: t.path });
  };
  return { scorer, asked, open };
}

const request = (query: string) => ({ namespace: 'ns', query, filters: {}, limit: 50 });

/** The ranking of a reader that scores every term inline, on its own connection. */
function inlineRanking(query: string) {
  const reader = new MemoryStore({ path: t.path, readonly: true });
  try {
    return reader.lexical.searchLexical(request(query)).candidates;
  } finally {
    reader.close();
  }
}

describe('LexicalSearch.prepare: terms scored elsewhere', () => {
  it('scores common terms on the scorer, rare ones inline, and ranks as inline scoring does', async () => {
    const { scorer, asked, open } = gatedScorer();
    t.store.lexical.useTermScorer(scorer);
    const ready = t.store.lexical.prepare(request('common usual rare'));
    open();
    await ready;
    // "rare" matches 10 memories: cheaper inline than a round trip, so only the other two were asked for.
    expect(asked.map((r) => r.match).sort()).toEqual(['"common"', '"usual"']);
    const before = t.store.lexical.postings.size.terms;
    const got = t.store.lexical.searchLexical(request('common usual rare')).candidates;
    expect(t.store.lexical.postings.size.terms).toBe(before + 1);
    expect(got).toEqual(inlineRanking('common usual rare'));
    expect(got).toHaveLength(50);
  });

  it('scores a phrase of common words on the scorer however few memories hold the phrase', async () => {
    // "filler common" is in no memory (the texts say "common filler"), but FTS5 finds that out by walking
    // both words' positions in every memory: the cost is its words', not its matches'.
    const { scorer, asked, open } = gatedScorer();
    t.store.lexical.useTermScorer(scorer);
    const ready = t.store.lexical.prepare(request('filler-common rare'));
    open();
    await ready;
    expect(asked.map((r) => r.match).sort()).toEqual(['"common"', '"filler common"', '"filler"']);
    expect(t.store.lexical.searchLexical(request('filler-common rare')).candidates).toEqual(
      inlineRanking('filler-common rare'),
    );
  });

  it('brings in what was written while the scores were on their way', async () => {
    // The scores are of the store before the writes below, and arrive after another search has seen them.
    const { scorer, open } = gatedScorer(true);
    t.store.lexical.useTermScorer(scorer);
    const ready = t.store.lexical.prepare(request('usual'));
    // A reader that scored the term inline at the same moment, and sees the same writes after.
    const twin = new MemoryStore({ path: t.path, readonly: true });
    twin.lexical.searchLexical(request('usual'));
    // New memories that say the word, and old ones rewritten so they no longer do.
    t.store.write([
      mem({ id: 'new-1', namespace: 'ns', text: 'usual usual usual word' }),
      mem({ id: 'new-2', namespace: 'ns', text: 'usual' }),
    ]);
    t.store.write([0, 2, 4].map((i) => mem({ id: `m${i}`, namespace: 'ns', text: 'rewritten without it' })));
    t.store.lexical.searchLexical(request('filler'));
    open();
    await ready;
    const got = t.store.lexical.searchLexical(request('usual')).candidates;
    expect(got).toEqual(twin.lexical.searchLexical(request('usual')).candidates);
    twin.close();
    expect(t.store.lexical.postings.size.prefetched).toBe(1);
    const ids = new Set(got.map((c) => c.key));
    const keyOf = (id: string) =>
      t.store.db.prepare('SELECT key FROM memories WHERE id = ?').pluck().get(id) as number;
    expect(ids.has(keyOf('new-1'))).toBe(true);
    expect(ids.has(keyOf('m0'))).toBe(false);
  });

  it('matches exactly the memories inline scoring would when the scorer reads after the writes', async () => {
    const { scorer, open } = gatedScorer();
    t.store.lexical.useTermScorer(scorer);
    const ready = t.store.lexical.prepare(request('usual'));
    t.store.write([mem({ id: 'new-1', namespace: 'ns', text: 'usual' })]);
    t.store.write([0, 2].map((i) => mem({ id: `m${i}`, namespace: 'ns', text: 'rewritten without it' })));
    t.store.lexical.searchLexical(request('filler'));
    open();
    await ready;
    expect(t.store.lexical.postings.size.prefetched).toBe(1);
    const all = { ...request('usual'), limit: 10_000 };
    const got = t.store.lexical.searchLexical(all).candidates.map((c) => c.key);
    const reader = new MemoryStore({ path: t.path, readonly: true });
    const want = reader.lexical.searchLexical(all).candidates.map((c) => c.key);
    reader.close();
    expect(new Set(got)).toEqual(new Set(want));
    expect(got).toHaveLength(2_499);
  });

  it('drops scores that arrive after the cache started over', async () => {
    const { scorer, open } = gatedScorer();
    t.store.lexical.useTermScorer(scorer);
    const ready = t.store.lexical.prepare(request('usual'));
    // More than a tenth of the corpus rewritten: the next search starts the cache over.
    t.store.write(
      Array.from({ length: 600 }, (_, i) => mem({ id: `m${i * 2}`, namespace: 'ns', text: 'filler only' })),
    );
    t.store.lexical.searchLexical(request('filler'));
    open();
    await ready;
    // The term was scored before the rewrite; had it been kept, these memories would still match.
    expect(t.store.lexical.postings.size.terms).toBe(1);
    expect(t.store.lexical.postings.size.prefetched).toBe(0);
    expect(t.store.lexical.searchLexical(request('usual')).candidates).toEqual(inlineRanking('usual'));
  });

  it('leaves a term to inline scoring when the scorer fails', async () => {
    t.store.lexical.useTermScorer(() => Promise.reject(new Error('thread gone')));
    await t.store.lexical.prepare(request('common'));
    expect(t.store.lexical.postings.size.prefetched).toBe(0);
    expect(t.store.lexical.searchLexical(request('common')).candidates).toEqual(inlineRanking('common'));
  });
});

describe('LexicalSearch.prepare: a term whose idf drifted', () => {
  it('is scored again on the scorer, once, not from its saved copy and not on the calling thread', async () => {
    // "kestrel" in 2,100 of 7,100 memories, then 600 more (under the tenth of the corpus after which the
    // whole cache starts over): its idf moves by more than a tenth.
    const kestrel = (from: number, n: number) =>
      t.store.write(
        Array.from({ length: n }, (_, i) =>
          mem({ id: `k${from + i}`, namespace: 'ns', text: `kestrel seen ${i}` }),
        ),
      );
    kestrel(0, 2_100);
    const asked: TermScoreRequest[] = [];
    const scorer: TermScorer = async (req) => {
      asked.push(req);
      return scoreTermTask({ ...req, path: t.path });
    };
    t.store.lexical.useTermScorer(scorer);
    const search = async () => {
      await t.store.lexical.prepare(request('kestrel'));
      return t.store.lexical.searchLexical(request('kestrel')).candidates;
    };
    await search();
    expect(asked.filter((r) => r.match === '"kestrel"')).toHaveLength(1);
    kestrel(2_100, 600);
    const inlineBefore = t.store.lexical.postings.size;
    // The first search after the writes sums the term as it was and leaves it to the next prefetch, which
    // asks the scorer (the saved copy carries the old idf, so it is not loaded instead).
    await search();
    const second = await search();
    expect(asked.filter((r) => r.match === '"kestrel"')).toHaveLength(2);
    expect(second).toEqual(inlineRanking('kestrel'));
    // Nothing more to do after that: neither asked again nor loaded again.
    const loaded = t.store.lexical.postings.size.loaded;
    expect(await search()).toEqual(inlineRanking('kestrel'));
    expect(asked.filter((r) => r.match === '"kestrel"')).toHaveLength(2);
    expect(t.store.lexical.postings.size.loaded).toBe(loaded);
    expect(t.store.lexical.postings.size.loaded).toBe(inlineBefore.loaded);
  });
});
