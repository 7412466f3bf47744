import { CairnError } from '@cairn/core';
import { describe, expect, it } from 'vitest';
import { useEngines } from './helpers.js';

const engines = useEngines();
const DAY = 86_400_000;
const T = Date.UTC(2026, 0, 1);

describe('a blank query with filters is a listing', () => {
  it('answers the memories passing the filters, newest first, paged by offset, unranked', async () => {
    const engine = await engines.open();
    engine.ingest([
      ...Array.from({ length: 5 }, (_, i) => ({
        namespace: 'a',
        id: `f${i}`,
        kind: 'fact',
        text: `fact number ${i}`,
        ts: T + i * DAY,
      })),
      { namespace: 'a', id: 'o1', kind: 'observation', text: 'not a fact', ts: T + 9 * DAY },
      // Another tenant's fact, newer than all: never listed for `a`.
      { namespace: 'b', id: 'bf', kind: 'fact', text: 'b fact', ts: T + 10 * DAY },
    ]);
    await engine.drain();
    const page = (offset?: number) =>
      engine.search({
        namespace: 'a',
        query: '',
        filters: { kinds: ['fact'] },
        k: 2,
        ...(offset ? { offset } : {}),
      });
    const first = await page();
    expect(first.listing).toEqual({ offset: 0 });
    expect(first.hits.map((h) => h.id)).toEqual(['f4', 'f3']);
    expect(first.hits[0]).toMatchObject({ score: 0, bm25Rank: null, vecRank: null, namespace: 'a' });
    expect((await page(2)).hits.map((h) => h.id)).toEqual(['f2', 'f1']);
    expect((await page(4)).hits.map((h) => h.id)).toEqual(['f0']);
    const past = await page(5);
    expect(past.hits).toEqual([]);
    expect(past.empty?.reason).toBe('no_match');

    // Filters that nothing passes say so; a blank query without filters is still no search at all.
    const none = await engine.search({ namespace: 'a', query: '  ', filters: { kinds: ['summary'] } });
    expect(none.empty?.reason).toBe('filtered_out');
    const blank = await engine.search({ namespace: 'a', query: '' });
    expect(blank.listing).toBeUndefined();
    expect(blank.empty?.reason).toBe('blank_query');
  });

  it('refuses offset beside a query with words, naming the field', async () => {
    const engine = await engines.open();
    engine.ingest([{ namespace: 'a', id: 'x', text: 'deploy notes' }]);
    const err = await engine.search({ namespace: 'a', query: 'deploy', offset: 3 }).catch((e) => e);
    expect(err).toBeInstanceOf(CairnError);
    expect(err).toMatchObject({ code: 'INVALID_INPUT', data: { field: 'offset' } });
  });
});
