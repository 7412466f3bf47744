import { embeddingSpaceOf } from '@cairn/core';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { useEngines } from './helpers.js';

const engines = useEngines();

/** The route rows and route vectors the data folder holds. */
function routeRows(engine: Awaited<ReturnType<typeof engines.open>>) {
  const db = engine.store.db;
  return {
    routes: db.prepare('SELECT count(*) FROM memory_routes').pluck().get() as number,
    vectors: db.prepare('SELECT count(*) FROM route_embeddings').pluck().get() as number,
  };
}

describe('multi-route recall (named fields)', () => {
  it('finds a memory by a field its own words do not say, once, naming the route', async () => {
    const engine = await engines.open();
    engine.ingest([
      {
        namespace: 'c',
        id: 'answer',
        kind: 'turn',
        session: 's1',
        text: 'Yes, last Friday!',
        fields: { question: 'When did you adopt the puppy?', facts: 'adopted a beagle puppy' },
      },
      { namespace: 'c', id: 'other', kind: 'turn', session: 's2', text: 'We watched a film about dogs.' },
      { namespace: 'c', id: 'plain', text: 'The puppy chewed the sofa.' },
    ]);
    await engine.drain();
    const r = await engine.search({ namespace: 'c', query: 'when was the puppy adopted', k: 5 });
    const hit = r.hits.find((h) => h.id === 'answer');
    expect(hit).toBeDefined();
    // One hit per memory, however many routes found it.
    expect(r.hits.filter((h) => h.id === 'answer')).toHaveLength(1);
    expect(hit!.routes).toEqual(expect.arrayContaining(['facts', 'question']));
    expect(hit!.routes).not.toContain('text');
    expect(hit!.parts.routes).toBeGreaterThan(0);
    expect(hit!.rrf).toBeCloseTo(hit!.parts.lexical + hit!.parts.vector + hit!.parts.routes, 12);
    expect(r.explain.settings.routes).toEqual(['facts', 'question']);
    // A memory its own words found lists the text route.
    expect(r.hits.find((h) => h.id === 'plain')!.routes).toEqual(['text']);
    // The relevance signal counts a field's words as the memory's own.
    expect(r.relevance?.missing ?? []).not.toContain('adopt');
    // Every route was embedded in the active space, and stats says so.
    expect(routeRows(engine)).toEqual({ routes: 2, vectors: 2 });
    expect(engine.stats().namespaces.c).toMatchObject({ fields: 2, fieldsEmbedded: 2 });
    // The record carries its fields.
    expect(engine.get('c', ['answer']).memories[0]!.fields).toEqual({
      facts: 'adopted a beagle puppy',
      question: 'When did you adopt the puppy?',
    });
  });

  it('searches each field by vector as well: a field its words alone would not reach by the lexical leg', async () => {
    const engine = await engines.open();
    engine.ingest([
      { namespace: 'v', id: 'm', text: 'ok', fields: { summary: 'kubernetes autoscaler tuning notes' } },
      { namespace: 'v', id: 'n', text: 'lunch order for friday' },
    ]);
    await engine.drain();
    const space = embeddingSpaceOf(engine.embedder!);
    const near = engine.store.routes.searchRoutes({
      namespace: 'v',
      query: 'kubernetes autoscaler',
      vector: (await engine.embedder!.embed(['kubernetes autoscaler']))[0]!,
      space,
      routes: ['summary'],
      filters: {},
      limit: 10,
    });
    const byVector = near.find((l) => l.leg === 'vector')!;
    expect(byVector.candidates.map((c) => c.key)).toEqual([engine.store.get('v', ['m']).memories[0]!.key]);
    // With the lexical leg off, the vector route alone finds it.
    const r = await engine.search({
      namespace: 'v',
      query: 'kubernetes autoscaler',
      weights: { lexical: 0 },
    });
    // (Hash collisions may bring the unrelated memory in by its own text; it never comes by a route.)
    const m = r.hits.find((h) => h.id === 'm');
    expect(m?.routes).toEqual(['summary']);
    expect(r.hits.find((h) => h.id === 'n')?.routes ?? ['text']).toEqual(['text']);
  });

  it('follows a rewritten field, a removed one and a deleted memory', async () => {
    const engine = await engines.open();
    engine.ingest([{ namespace: 'w', id: 'm', text: 'note', fields: { facts: 'zebra crossing' } }]);
    await engine.drain();
    const found = async (q: string) =>
      (await engine.search({ namespace: 'w', query: q, k: 5 })).hits.map((h) => h.id);
    expect(await found('zebra')).toEqual(['m']);
    // Rewritten: the old words stop finding it, in both legs' routes.
    engine.ingest([{ namespace: 'w', id: 'm', text: 'note', fields: { facts: 'giraffe habitat' } }]);
    await engine.drain();
    expect(await found('zebra')).toEqual([]);
    expect(await found('giraffe')).toEqual(['m']);
    expect(routeRows(engine)).toEqual({ routes: 1, vectors: 1 });
    const vectorOnly = await engine.search({
      namespace: 'w',
      query: 'zebra crossing',
      weights: { lexical: 0 },
    });
    expect(vectorOnly.hits.filter((h) => h.routes?.includes('facts'))).toEqual([]);
    // A field rewritten alone takes a new change_seq: a writer in another process sees by it that there
    // is something to embed.
    const seqOf = () =>
      engine.store.db.prepare("SELECT change_seq FROM memories WHERE id = 'm'").pluck().get() as number;
    const before = seqOf();
    engine.ingest([
      { namespace: 'w', id: 'm', text: 'note', fields: { facts: 'giraffe habitat', more: 'x' } },
    ]);
    expect(seqOf()).toBeGreaterThan(before);
    engine.ingest([{ namespace: 'w', id: 'm', text: 'note', fields: { facts: 'giraffe habitat' } }]);
    await engine.drain();
    // A re-ingest of the same fields is unchanged: no new route row, nothing to embed.
    const again = engine.ingest([
      { namespace: 'w', id: 'm', text: 'note', fields: { facts: 'giraffe habitat' } },
    ]);
    expect(again.counts.unchanged).toBe(1);
    // Removed.
    engine.ingest([{ namespace: 'w', id: 'm', text: 'note' }]);
    await engine.drain();
    expect(await found('giraffe')).toEqual([]);
    expect(engine.get('w', ['m']).memories[0]!.fields).toEqual({});
    // The namespace has no field left: no route is searched or listed.
    expect((await engine.search({ namespace: 'w', query: 'note' })).explain.settings.routes).toEqual([]);
    // Deleted: nothing of it is searchable, and its route rows and vectors are gone.
    engine.ingest([{ namespace: 'w', id: 'm', text: 'note', fields: { facts: 'okapi' } }]);
    await engine.drain();
    expect(await found('okapi')).toEqual(['m']);
    engine.delete('w', 'm');
    expect(await found('okapi')).toEqual([]);
    expect(routeRows(engine)).toEqual({ routes: 0, vectors: 0 });
  });

  it('refuses a memory with bad fields, naming the field, and stores nothing of it', async () => {
    const engine = await engines.open();
    const bad: Array<[Record<string, unknown>, string]> = [
      [{ text: 'x' }, 'fields.text'],
      [{ 'Bad Name': 'x' }, 'fields.Bad Name'],
      [{ facts: '   ' }, 'fields.facts'],
      [Object.fromEntries(Array.from({ length: 9 }, (_, i) => [`f${i}`, 'x'])), 'fields'],
    ];
    for (const [fields, field] of bad) {
      const r = engine.ingest([
        { namespace: 'b', id: 'ok', text: 'fine' },
        { namespace: 'b', id: 'bad', text: 'fine', fields },
      ]);
      expect(r.items[1]).toMatchObject({ status: 'rejected', error: { code: 'INVALID_INPUT', field } });
      expect(r.items[0]!.status).not.toBe('rejected');
    }
    expect(engine.get('b', ['bad']).missing).toEqual(['bad']);
    expect(routeRows(engine).routes).toBe(0);
  });

  it('never returns, from any route, a memory of another namespace or one outside the filters', async () => {
    const engine = await engines.open({ exactThreshold: 5 });
    const words = ['alpha', 'beta', 'gamma', 'delta', 'redis', 'auth'];
    const namespaces = ['t1', 't2'];
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            ns: fc.constantFrom(...namespaces),
            id: fc.constantFrom('m1', 'm2', 'm3', 'm4'),
            kind: fc.constantFrom('turn', 'fact'),
            tag: fc.constantFrom('x', 'y'),
            text: fc.array(fc.constantFrom(...words), { minLength: 1, maxLength: 3 }),
            facts: fc.option(fc.array(fc.constantFrom(...words), { minLength: 1, maxLength: 3 })),
          }),
          { minLength: 1, maxLength: 10 },
        ),
        fc.constantFrom(...namespaces),
        fc.array(fc.constantFrom(...words), { minLength: 1, maxLength: 3 }),
        fc.record({
          kinds: fc.option(fc.constant(['fact'] as string[])),
          tags: fc.option(fc.constant(['y'] as string[])),
        }),
        async (memories, ns, query, f) => {
          engine.ingest(
            memories.map((m) => ({
              namespace: m.ns,
              id: m.id,
              kind: m.kind,
              tags: [m.tag],
              text: m.text.join(' '),
              ...(m.facts ? { fields: { facts: m.facts.join(' ') } } : {}),
            })),
          );
          await engine.drain();
          const filters = { ...(f.kinds ? { kinds: f.kinds } : {}), ...(f.tags ? { tags: f.tags } : {}) };
          const r = await engine.search({
            namespace: ns,
            query: query.join(' '),
            k: 50,
            filters,
            routeWeight: 5,
          });
          const own = new Map(engine.get(ns, ['m1', 'm2', 'm3', 'm4']).memories.map((m) => [m.id, m]));
          for (const h of r.hits) {
            expect(h.namespace).toBe(ns);
            const m = own.get(h.id)!;
            if (f.kinds) expect(m.kind).toBe('fact');
            if (f.tags) expect(m.tags).toContain('y');
          }
          // The routes themselves, asked directly: parents of the namespace passing the filters only.
          const space = embeddingSpaceOf(engine.embedder!);
          const lists = engine.store.routes.searchRoutes({
            namespace: ns,
            query: query.join(' '),
            vector: (await engine.embedder!.embed([query.join(' ')]))[0]!,
            space,
            routes: ['facts'],
            filters,
            limit: 50,
          });
          const allowed = new Set(
            [...own.values()]
              .filter((m) => (!f.kinds || m.kind === 'fact') && (!f.tags || m.tags.includes('y')))
              .map((m) => m.key),
          );
          for (const list of lists) for (const c of list.candidates) expect(allowed.has(c.key)).toBe(true);
        },
      ),
      { numRuns: 40 },
    );
  });
});
