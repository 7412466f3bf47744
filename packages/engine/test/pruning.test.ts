import { CairnError, parsePrunePolicy } from '@cairn/core';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DAY, useEngines } from './helpers.js';

const engines = useEngines();
const NOW = Date.UTC(2026, 5, 1);

function fact(i: number, ageDays: number) {
  return {
    namespace: 'a',
    id: `fact:prefs:k${i}`,
    kind: 'fact',
    text: `preference number ${i}: the user likes colour ${['red', 'green', 'blue', 'teal'][i % 4]} item ${i}`,
    meta: { slot: 'prefs', key: `k${i}` },
    ts: NOW - ageDays * DAY,
  };
}

describe('access tracking and pruning', () => {
  it('searches count accesses; a policy keeps the cap of the most used, never what it protects, and a dry run only lists', async () => {
    const engine = await engines.open({ consolidation: false });
    engine.ingest([
      ...Array.from({ length: 10 }, (_, i) => fact(i, 30 + i)),
      // Young: protected by min_age whatever its use.
      fact(10, 0.5),
      // Outside the slot: never covered.
      {
        namespace: 'a',
        id: 'other',
        kind: 'fact',
        text: 'unrelated fact',
        meta: { slot: 'env', key: 'x' },
        ts: NOW - 90 * DAY,
      },
      // Another tenant's fact in a slot of the same name: never covered by `a`'s policy.
      { ...fact(0, 90), namespace: 'b' },
    ]);
    await engine.drain();
    // Searches return k7 three times and k8 once; listings do not count.
    for (let i = 0; i < 3; i++) {
      const res = await engine.search({ namespace: 'a', query: 'preference number 7 item 7', k: 1 });
      expect(res.hits[0]!.id).toBe('fact:prefs:k7');
    }
    await engine.search({ namespace: 'a', query: 'preference number 8 item 8', k: 1 });
    await engine.search({ namespace: 'a', query: '', filters: { kinds: ['fact'] }, k: 20 });

    const policy = parsePrunePolicy({ namespace: 'a', slot: 'prefs', cap: 3, min_age: '1d', min_access: 2 });
    const dry = await engine.prune(policy, { dryRun: true, now: NOW });
    // Kept: k7 (3 accesses), k8 (1), then the newest never accessed, k10; k7 is also protected.
    expect(dry).toMatchObject({ dryRun: true, covered: 11, protected: 0 });
    // Least used first: never accessed, oldest first.
    expect(dry.pruned).toEqual(
      ['k9', 'k6', 'k5', 'k4', 'k3', 'k2', 'k1', 'k0'].map((k) => `fact:prefs:${k}`),
    );
    expect(engine.stats().namespaces.a!.stored).toBe(12);
    const rec = engine.get('a', ['fact:prefs:k7']).memories[0]!;
    expect(rec.accessCount).toBeGreaterThanOrEqual(3);
    expect(rec.lastAccessed).toBeTypeOf('number');

    const run = await engine.prune(policy, { now: NOW });
    expect(run.pruned).toHaveLength(8);
    expect(engine.stats().namespaces.a!.stored).toBe(4);
    expect(engine.stats().namespaces.b!.stored).toBe(1);
    const alive = (await engine.search({ namespace: 'a', query: '', filters: { kinds: ['fact'] }, k: 20 }))
      .hits;
    expect(alive.map((h) => h.id).sort()).toEqual([
      'fact:prefs:k10',
      'fact:prefs:k7',
      'fact:prefs:k8',
      'other',
    ]);
    // Pruning deletes (a tombstone), so the next run has nothing to do.
    expect((await engine.prune(policy, { now: NOW })).pruned).toEqual([]);
  });

  it('property: a pruning pass never deletes a memory its policy protects, and keeps at least min(cap, covered)', async () => {
    const engine = await engines.open({ consolidation: false, embedder: null });
    let round = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({ ageDays: fc.integer({ min: 0, max: 60 }), hits: fc.integer({ min: 0, max: 4 }) }),
          {
            minLength: 1,
            maxLength: 15,
          },
        ),
        fc.integer({ min: 0, max: 10 }),
        fc.integer({ min: 0, max: 30 }),
        fc.integer({ min: 1, max: 4 }),
        async (items, cap, minAgeDays, minAccess) => {
          const ns = `p${round++}`;
          engine.ingest(
            items.map((it, i) => ({
              namespace: ns,
              id: `m${i}`,
              kind: 'note',
              text: `note ${i}`,
              ts: NOW - it.ageDays * DAY - i,
            })),
          );
          engine.store.recordAccess(
            items.flatMap((it, i) => (it.hits > 0 ? [{ namespace: ns, id: `m${i}`, count: it.hits }] : [])),
            NOW,
          );
          const policy = parsePrunePolicy({
            namespace: ns,
            kind: 'note',
            cap,
            min_age: minAgeDays * DAY,
            min_access: minAccess,
          });
          const report = await engine.prune(policy, { now: NOW });
          const gone = new Set(report.pruned);
          for (const [i, it] of items.entries()) {
            const protectedByPolicy = it.ageDays * DAY + i < minAgeDays * DAY || it.hits >= minAccess;
            if (protectedByPolicy) expect(gone.has(`m${i}`)).toBe(false);
          }
          expect(items.length - gone.size).toBeGreaterThanOrEqual(Math.min(cap, items.length));
        },
      ),
      { numRuns: 40 },
    );
  });

  it('deletes in batches: a cap of 0 over more than a batch takes them all, and the rest of the namespace stays', async () => {
    const engine = await engines.open({ consolidation: false, embedder: null });
    engine.ingest(
      Array.from({ length: 1_200 }, (_, i) => ({
        namespace: 'a',
        id: `t${i}`,
        kind: 'tmp',
        text: `scratch ${i}`,
        ts: NOW - DAY,
      })),
    );
    engine.ingest([{ namespace: 'a', id: 'keep', kind: 'note', text: 'keep me', ts: NOW - DAY }]);
    const report = await engine.prune(parsePrunePolicy({ namespace: 'a', kind: 'tmp', cap: 0 }), {
      now: NOW,
    });
    expect(report.pruned).toHaveLength(1_200);
    expect(engine.stats().namespaces.a).toMatchObject({ stored: 1, deleted: 1_200 });
  });

  it('a pruned memory takes what it hid with it: the cap holds, and a dry run lists the same', async () => {
    const engine = await engines.open({ consolidation: { intervalMs: 0 } });
    engine.ingest([
      // b absorbs a (the same text); c is another observation; v2 supersedes v1.
      {
        namespace: 'p',
        id: 'a',
        kind: 'observation',
        text: 'the build cache was cleared',
        ts: NOW - 3 * DAY,
      },
      {
        namespace: 'p',
        id: 'b',
        kind: 'observation',
        text: 'the build cache was cleared',
        ts: NOW - 2 * DAY,
      },
      { namespace: 'p', id: 'v1', kind: 'observation', text: 'deploys go to heroku', ts: NOW - 5 * DAY },
      {
        namespace: 'p',
        id: 'v2',
        kind: 'observation',
        text: 'deploys go to fly.io',
        ts: NOW - 4 * DAY,
        supersedes: ['v1'],
      },
      { namespace: 'p', id: 'c', kind: 'observation', text: 'the walrus ate the fish', ts: NOW - DAY },
    ]);
    await engine.drain();
    expect((await engine.consolidate()).merges.map((m) => [m.id, m.into])).toEqual([['a', 'b']]);
    // c is the most recent: a cap of 1 keeps it and drops b and v2, which hide a and v1.
    const policy = parsePrunePolicy({ namespace: 'p', kind: 'observation', cap: 1 });
    const dry = await engine.prune(policy, { dryRun: true, now: NOW });
    expect(dry.pruned).toEqual(['v1', 'v2', 'a', 'b']);
    const run = await engine.prune(policy, { now: NOW });
    expect(run.pruned).toEqual(dry.pruned);
    // Given back instead, a and v1 were live: the cap of 1 held three.
    expect(engine.stats().namespaces.p).toMatchObject({ stored: 1, superseded: 0, deleted: 4 });
    const again = await engine.prune(policy, { dryRun: true, now: NOW });
    expect(again).toMatchObject({ covered: 1, pruned: [] });
  });

  it('never takes what the policy does not cover or protects: that is given back', async () => {
    const engine = await engines.open({ consolidation: false });
    engine.ingest([
      { namespace: 'q', id: 'd1', kind: 'decision', text: 'we ship on fridays', ts: NOW - 9 * DAY },
      { namespace: 'q', id: 'o0', kind: 'observation', text: 'the cache was warm', ts: NOW - 8 * DAY },
      {
        namespace: 'q',
        id: 'o1',
        kind: 'observation',
        text: 'we ship on thursdays',
        ts: NOW - 7 * DAY,
        supersedes: ['d1', 'o0'],
      },
      { namespace: 'q', id: 'o2', kind: 'observation', text: 'the walrus ate the fish', ts: NOW - DAY },
    ]);
    await engine.drain();
    // o0 was used often before o1 replaced it: min_access protects it.
    for (let i = 0; i < 3; i++) engine.get('q', ['o0']);
    const policy = parsePrunePolicy({ namespace: 'q', kind: 'observation', cap: 1, min_access: 3 });
    const dry = await engine.prune(policy, { dryRun: true, now: NOW });
    expect(dry.pruned).toEqual(['o1']);
    expect((await engine.prune(policy, { now: NOW })).pruned).toEqual(['o1']);
    // The decision (another kind) and the protected observation are back, not deleted.
    expect(
      engine.get('q', ['d1', 'o0'], { touch: false }).memories.map((m) => [m.id, m.supersededBy]),
    ).toEqual([
      ['d1', null],
      ['o0', null],
    ]);
  });

  it("a user's delete gives back what its memory superseded, as it gives back what it absorbed", async () => {
    const engine = await engines.open({ consolidation: false });
    engine.ingest([
      { namespace: 'd', id: 'g1', text: 'the office wifi password is on the fridge', ts: NOW - 3 * DAY },
      { namespace: 'd', id: 'g2', text: 'the office wifi password is in the vault', ts: NOW - 2 * DAY },
      {
        namespace: 'd',
        id: 'g3',
        text: 'the office wifi password rotates weekly',
        ts: NOW - DAY,
        supersedes: ['g1', 'g2'],
      },
    ]);
    await engine.drain();
    const found = async () =>
      (await engine.search({ namespace: 'd', query: 'office wifi password', k: 5 })).hits
        .map((h) => h.id)
        .sort();
    expect(await found()).toEqual(['g3']);
    expect(engine.delete('d', 'g3')).toBe(true);
    // Kept hidden, they named a memory that no longer exists, and no route could bring them back.
    expect(await found()).toEqual(['g1', 'g2']);
    expect(engine.get('d', ['g1', 'g2']).memories.map((m) => m.supersededBy)).toEqual([null, null]);
    expect(engine.stats().namespaces.d).toMatchObject({ stored: 2, superseded: 0, deleted: 1 });
  });

  it('refuses a policy that covers a whole namespace, by name', () => {
    const fieldOf = (input: unknown) => {
      try {
        parsePrunePolicy(input);
      } catch (err) {
        expect(err).toBeInstanceOf(CairnError);
        return (err as CairnError).data.field;
      }
      throw new Error('accepted');
    };
    expect(fieldOf({ namespace: 'a', cap: 1 })).toBe('slot');
    expect(fieldOf({ namespace: 'a', cap: -1, slot: 's' })).toBe('cap');
    expect(fieldOf({ namespace: 'a', cap: 1, slot: 's', min_age: 'soon' })).toBe('min_age');
    expect(fieldOf({ namespace: 'a', cap: 1, slot: 's', extra: 1 })).toBe('extra');
  });
});
