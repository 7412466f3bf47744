import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { useEngines } from './helpers.js';

const engines = useEngines();
const words = [
  'alpha',
  'beta',
  'gamma',
  'delta',
  'redis',
  'auth',
  'config',
  'parseConfig',
  'src/app.ts',
  'error',
  'the',
];

describe('tenant isolation', () => {
  it('never returns, gets or walks another namespace’s memories, whatever the data and query', async () => {
    // Past 5 memories a namespace is searched through a graph, its vector list completed by the lexical leg.
    const engine = await engines.open({ exactThreshold: 5, completeVectorList: true });
    const namespaces = ['t1', 't2', 'org/x', 'org:y'];
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            ns: fc.constantFrom(...namespaces),
            words: fc.array(fc.constantFrom(...words), { minLength: 1, maxLength: 6 }),
            id: fc.constantFrom('m1', 'm2', 'm3', 'm4', 'm5'),
          }),
          { minLength: 1, maxLength: 12 },
        ),
        fc.constantFrom(...namespaces),
        fc.array(fc.constantFrom(...words), { minLength: 1, maxLength: 4 }),
        async (memories, ns, query) => {
          engine.ingest(memories.map((m) => ({ namespace: m.ns, id: m.id, text: m.words.join(' ') })));
          await engine.drain();
          const res = await engine.search({ namespace: ns, query: query.join(' '), k: 50, explain: 'full' });
          expect(res.hits.every((h) => h.namespace === ns)).toBe(true);
          const own = new Set(engine.get(ns, ['m1', 'm2', 'm3', 'm4', 'm5']).memories.map((m) => m.id));
          expect(res.explain.candidates!.every((c) => own.has(c.id))).toBe(true);
          for (const m of engine.get(ns, ['m1', 'm2', 'm3', 'm4', 'm5']).memories)
            expect(m.namespace).toBe(ns);
          const anchor = [...own][0];
          if (anchor) {
            const tl = engine.timeline(ns, anchor, 10, 10);
            expect([...tl.before, tl.anchor, ...tl.after].every((m) => m.namespace === ns)).toBe(true);
          }
        },
      ),
      { numRuns: 60 },
    );
  });
});

describe('search robustness', () => {
  it('never throws on any query string', async () => {
    const engine = await engines.open();
    engine.ingest(words.map((w, i) => ({ namespace: 'a', id: `w${i}`, text: `${w} and more ${w}` })));
    await engine.drain();
    const operatorSoup = fc
      .array(
        fc.constantFrom(
          'AND',
          'OR',
          'NOT',
          'NEAR',
          'NEAR(',
          '-',
          '+',
          '*',
          ':',
          '^',
          '"',
          '(',
          ')',
          '{',
          '}',
          'title:',
          ' ',
          'é',
          '🙂',
          '\u0000',
          '\\',
          "'",
        ),
        {
          maxLength: 20,
        },
      )
      .map((a) => a.join(''));
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(fc.string({ maxLength: 200 }), fc.string({ unit: 'grapheme', maxLength: 60 }), operatorSoup),
        async (q) => {
          const res = await engine.search({ namespace: 'a', query: q, explain: 'full' });
          expect(Array.isArray(res.hits)).toBe(true);
          if (res.hits.length === 0) expect(res.empty).toBeDefined();
        },
      ),
      { numRuns: 400 },
    );
  });
});
