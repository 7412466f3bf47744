import { join } from 'node:path';
import { MemoryStore } from '@cairn/store';
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SessionMatch } from '../src/session-match.js';
import { mem, openTempStore, T0, type TempStore } from './helpers.js';

let t: TempStore;
beforeEach(() => {
  t = openTempStore('cairn-session-match-');
});
afterEach(() => {
  t.cleanup();
});

const turn = (id: string, text: string, session: string | null, minute: number, namespace = 'ns') =>
  mem({
    namespace,
    id,
    text,
    kind: 'observation',
    ts: T0 + minute * 60_000,
    ...(session === null ? {} : { session }),
  });

function lexical(store: MemoryStore, namespace: string, query: string, sessionWeight: number) {
  const res = store.lexical.searchLexical({ namespace, query, filters: {}, limit: 50, sessionWeight });
  const ids = store.liveByKeys(
    namespace,
    res.candidates.map((c) => c.key),
  );
  return res.candidates.map((c) => ({ ...c, id: ids.get(c.key)!.id, session: c.session ?? 0 }));
}

/** Each query word's own bm25 per memory id (session match off): the contributions a session is scored from. */
function perWord(store: MemoryStore, namespace: string, words: string[]) {
  return words.map((w) => new Map(lexical(store, namespace, w, 0).map((c) => [c.id, c.bm25] as const)));
}

describe('session match in the lexical leg', () => {
  it('lifts a memory whose session says the rest of the query above one that says as much alone', () => {
    t.store.write([
      turn('a1', 'We adopted a puppy named Rex', 's1', 0),
      turn('a2', 'The vet said he is healthy', 's1', 1),
      turn('b1', 'The vet clinic downtown closed', 's2', 2),
      turn('b2', 'Traffic was bad on the way home', 's2', 3),
    ]);
    const off = lexical(t.store, 'ns', 'rex vet', 0).map((c) => c.id);
    const on = lexical(t.store, 'ns', 'rex vet', 0.25).map((c) => c.id);
    expect(new Set(off)).toEqual(new Set(['a1', 'a2', 'b1']));
    // a2 and b1 each say "vet" once; only a2's session also says "rex".
    expect(on.indexOf('a2')).toBeLessThan(on.indexOf('b1'));
  });

  it('gives no share to a memory rewritten so it no longer says any word (warm postings cache)', () => {
    // Enough rows that one rewrite stays under the cache's drift limit: the rewrite is patched in.
    t.store.write(Array.from({ length: 100 }, (_, i) => turn(`f${i}`, `filler ${i}`, 'f', i, 'other')));
    t.store.write([turn('a1', 'rex the puppy', 's1', 0), turn('a2', 'the vet visit', 's1', 1)]);
    expect(new Set(lexical(t.store, 'ns', 'rex vet', 0.5).map((c) => c.id))).toEqual(new Set(['a1', 'a2']));
    t.store.write([turn('a2', 'the park visit', 's1', 1)]);
    expect(lexical(t.store, 'ns', 'rex vet', 0.5).map((c) => c.id)).toEqual(['a1']);
  });

  it('property: a share is weight × the sum over words of the best match in its session, within the namespace, and only matches get one', () => {
    const words = ['red', 'green', 'blue'];
    const op = fc.record({
      id: fc.constantFrom('m1', 'm2', 'm3', 'm4', 'm5', 'm6'),
      namespace: fc.constantFrom('a', 'b'),
      session: fc.constantFrom('s1', 's2', null),
      text: fc.subarray(['red', 'green', 'blue', 'plain', 'words'], { minLength: 1 }),
      del: fc.boolean(),
    });
    fc.assert(
      fc.property(fc.array(op, { minLength: 1, maxLength: 20 }), fc.boolean(), (ops, catalog) => {
        const s = new MemoryStore({
          path: join(t.dir, `p-${Math.random()}.db`),
          ...(catalog ? {} : { catalog: false }),
        });
        try {
          // Enough other rows that a few rewrites stay under the postings cache's drift limit (a tenth of
          // the corpus): the cache then patches rewritten rows instead of starting over.
          s.write(
            Array.from({ length: 300 }, (_, i) =>
              turn(`f${i}`, `${words[i % 3]} filler ${i}`, `f${i % 7}`, -1, 'filler'),
            ),
          );
          ops.forEach((o, i) => {
            if (o.del) s.delete(o.namespace, o.id);
            else s.write([turn(o.id, o.text.join(' '), o.session, i, o.namespace)]);
            // Searching between writes keeps the postings cache warm, so rewrites are patched into it.
            lexical(s, o.namespace, words.join(' '), 0.5);
          });
          for (const ns of ['a', 'b']) {
            const sessions = new Map(s.list(ns, {}, 100).map((m) => [m.id, m.session] as const));
            const contributions = perWord(s, ns, words);
            const found = lexical(s, ns, words.join(' '), 0.5);
            // Exactly the memories that say a word: a session's share never makes a match of a non-match
            // (a memory rewritten so it no longer says any word sums back to 0 in the warm cache).
            const matching = new Set(contributions.flatMap((byId) => [...byId.keys()]));
            expect(new Set(found.map((c) => c.id))).toEqual(matching);
            for (const c of found) {
              const session = sessions.get(c.id) ?? null;
              let expected = 0;
              if (session !== null) {
                for (const byId of contributions) {
                  const inSession = [...byId].filter(([id]) => sessions.get(id) === session);
                  if (inSession.length > 0) expected += Math.min(...inSession.map(([, bm25]) => bm25));
                }
              }
              expect(c.session).toBeCloseTo(0.5 * expected, 9);
            }
          }
        } finally {
          s.close();
        }
      }),
      { numRuns: 40 },
    );
  });
});

describe('session match and filters', () => {
  it('counts only the memories that pass the filters', () => {
    t.store.write([
      turn('a1', 'We adopted a puppy named Rex', 's1', 0),
      turn('a2', 'The vet said he is healthy', 's1', 1),
      turn('a3', 'Rex chewed the vet bill', 's1', 60 * 24 * 30),
    ]);
    const until = T0 + 2 * 60_000;
    const shareOf = (filters: { until?: number }) =>
      t.store.lexical
        .searchLexical({ namespace: 'ns', query: 'rex vet', filters, limit: 10, sessionWeight: 0.5 })
        .candidates.map((c) => c.session ?? 0);
    const [rexAlone] = perWord(t.store, 'ns', ['rex']);
    const [vetAlone] = perWord(t.store, 'ns', ['vet']);
    // Without a filter, a3 (which says both words) sets the session's best for each word.
    const unfiltered = Math.min(...rexAlone!.values()) + Math.min(...vetAlone!.values());
    expect(Math.min(...shareOf({}))).toBeCloseTo(0.5 * unfiltered, 9);
    // Before a3 was said, only a1 and a2 judge the session.
    const before = rexAlone!.get('a1')! + vetAlone!.get('a2')!;
    for (const share of shareOf({ until })) expect(share).toBeCloseTo(0.5 * before, 9);
  });
});

describe('SessionMatch', () => {
  /** One query of two terms over keys 1–3 (sessions 1, 1, 2); each session's score. */
  function scores(m: SessionMatch): number[] {
    m.begin((key) => (key === 3 ? 2 : 1));
    m.beginTerm();
    m.add(1, -1);
    m.add(2, -3);
    m.add(3, -0.5);
    m.endTerm();
    m.beginTerm();
    m.add(2, -2);
    m.add(1, -0.25);
    m.endTerm();
    return [m.scoreOf(1), m.scoreOf(2)];
  }

  it('scores sessions the same once its term numbers have wrapped around', () => {
    const m = new SessionMatch();
    expect(scores(m)).toEqual([-5, -0.5]);
    // A server that has summed 2^31 terms: past that, every match looked like its session's first of the
    // term, and a session took its last score instead of its best.
    (m as unknown as { term: number }).term = 0x7fffffff - 1;
    expect(scores(m)).toEqual([-5, -0.5]);
    expect(scores(m)).toEqual([-5, -0.5]);
  });

  it('keeps its scores right over queries that touch more sessions than it first had room for', () => {
    const m = new SessionMatch();
    for (const sessions of [10, 5_000, 3, 20_000]) {
      m.begin((key) => key);
      m.beginTerm();
      for (let s = 1; s <= sessions; s++) m.add(s, -s);
      m.endTerm();
      expect(m.scoreOf(1)).toBe(-1);
      expect(m.scoreOf(sessions)).toBe(-sessions);
      expect(m.scoreOf(sessions + 1)).toBe(0);
    }
  });
});
