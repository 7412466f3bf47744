import { join } from 'node:path';
import { MemoryStore } from '@cairn/store';
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
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

  it('property: a share is weight × the sum over words of the best match in its session, within the namespace', () => {
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
          ops.forEach((o, i) => {
            if (o.del) s.delete(o.namespace, o.id);
            else s.write([turn(o.id, o.text.join(' '), o.session, i, o.namespace)]);
          });
          for (const ns of ['a', 'b']) {
            const sessions = new Map(s.list(ns, {}, 100).map((m) => [m.id, m.session] as const));
            const contributions = perWord(s, ns, words);
            for (const c of lexical(s, ns, words.join(' '), 0.5)) {
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
