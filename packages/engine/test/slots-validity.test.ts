import { asFactMemory } from '@cairn/core';
import { describe, expect, it } from 'vitest';
import { DAY, useEngines } from './helpers.js';

const engines = useEngines();
const T = Date.UTC(2026, 0, 1);

describe('search within a fact slot, and as-of queries over validity windows', () => {
  it('filters.slots confines every leg and a listing to the slot’s facts', async () => {
    const engine = await engines.open({ consolidation: false });
    engine.ingest([
      asFactMemory({
        namespace: 'a',
        slot: 'deploy',
        key: 'target',
        text: 'Deploys go to the eu-west cluster',
        ts: T,
      }),
      asFactMemory({
        namespace: 'a',
        slot: 'deploy',
        key: 'window',
        text: 'Deploy window is Tuesday morning',
        ts: T + 1,
      }),
      asFactMemory({
        namespace: 'a',
        slot: 'team',
        key: 'oncall',
        text: 'The deploy on-call is Priya',
        ts: T + 2,
      }),
      { namespace: 'a', id: 'note', text: 'Deploy notes: the eu-west cluster was slow', ts: T + 3 },
      // Another tenant's fact in a slot of the same name.
      asFactMemory({ namespace: 'b', slot: 'deploy', key: 'target', text: 'Deploys go to us-east', ts: T }),
    ]);
    await engine.drain();
    for (const weights of [{}, { lexical: 0 }, { vector: 0 }]) {
      const res = await engine.search({
        namespace: 'a',
        query: 'deploy cluster',
        filters: { slots: ['deploy'] },
        weights,
      });
      for (const h of res.hits) expect(['fact:deploy:target', 'fact:deploy:window']).toContain(h.id);
      expect(res.hits.length).toBeGreaterThan(0);
    }
    const listing = await engine.search({
      namespace: 'a',
      query: '',
      filters: { slots: ['deploy', 'team'] },
      k: 10,
    });
    expect(listing.hits.map((h) => h.id)).toEqual([
      'fact:team:oncall',
      'fact:deploy:window',
      'fact:deploy:target',
    ]);
    const none = await engine.search({ namespace: 'a', query: 'deploy', filters: { slots: ['nope'] } });
    expect(none.empty?.reason).toBe('filtered_out');
  });

  it('asOf sees only the memories valid at that time; validity survives a round trip', async () => {
    const engine = await engines.open({ consolidation: false });
    engine.ingest([
      {
        namespace: 'a',
        id: 'old',
        text: 'Our ORM is Sequelize',
        ts: T,
        validFrom: T,
        validTo: T + 100 * DAY,
      },
      { namespace: 'a', id: 'new', text: 'Our ORM is Prisma', ts: T + 100 * DAY, validFrom: T + 100 * DAY },
      { namespace: 'a', id: 'always', text: 'The ORM question came up in planning', ts: T },
    ]);
    await engine.drain();
    const at = async (asOf: number) =>
      (await engine.search({ namespace: 'a', query: 'which ORM do we use', filters: { asOf }, k: 5 })).hits
        .map((h) => h.id)
        .sort();
    expect(await at(T + 50 * DAY)).toEqual(['always', 'old']);
    expect(await at(T + 100 * DAY)).toEqual(['always', 'new']);
    expect(await at(T - DAY)).toEqual(['always']);
    expect(engine.get('a', ['old']).memories[0]).toMatchObject({ validFrom: T, validTo: T + 100 * DAY });
    expect(() =>
      engine.ingest([{ namespace: 'a', id: 'bad', text: 'x', validFrom: T + DAY, validTo: T }]),
    ).not.toThrow();
    const bad = engine.ingest([{ namespace: 'a', id: 'bad', text: 'x', validFrom: T + DAY, validTo: T }]);
    expect(bad.items[0]).toMatchObject({ status: 'rejected', error: { field: 'validTo' } });
  });
});
