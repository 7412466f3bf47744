import { parsePrunePolicy } from '@cairn/core';
import { describe, expect, it } from 'vitest';
import { eventually, useDeployment } from './distributed-helpers.js';

const deployments = useDeployment();
const STORM = 'Worker pool exhausted: 64 of 64 connections busy on the ledger database';

describe('hygiene jobs in distributed mode, on BullMQ job schedulers', () => {
  it('consolidates a dup storm and applies a pruning policy on schedule, and a reader serves the result', async () => {
    const d = await deployments.create();
    const host = await d.workers({
      consolidation: { intervalMs: 300 },
      prune: {
        policies: [parsePrunePolicy({ namespace: 'team/alpha', kind: 'note', cap: 4 })],
        intervalMs: 300,
      },
    });
    const { producer } = await d.producer('stored');
    const storm = (ns: string, n: number) =>
      Array.from({ length: n }, (_, i) => ({
        namespace: ns,
        id: `s${i}`,
        kind: 'observation',
        text: STORM,
        ts: Date.UTC(2026, 0, 1) + i * 1000,
      }));
    const notes = Array.from({ length: 10 }, (_, i) => ({
      namespace: 'team/alpha',
      id: `n${i}`,
      kind: 'note',
      text: `note ${i} on the release checklist, step ${i}`,
      ts: Date.UTC(2026, 0, 2) + i * 1000,
    }));
    const r = await producer.enqueue([...storm('team/alpha', 30), ...storm('team/beta', 10), ...notes]);
    expect(r.counts.stored).toBe(50);

    const reader = await d.reader();
    await eventually(() => {
      const s = reader.stats().namespaces;
      return (
        s['team/alpha']?.superseded === 29 &&
        s['team/beta']?.superseded === 9 &&
        s['team/alpha']?.deleted === 6
      );
    });
    reader.refresh();
    const res = await reader.search({ namespace: 'team/alpha', query: 'worker pool exhausted ledger', k: 3 });
    expect(res.hits[0]).toMatchObject({ id: 's29', dupCount: 29 });
    expect(res.hits.filter((h) => h.id.startsWith('s'))).toHaveLength(1);
    const beta = await reader.search({ namespace: 'team/beta', query: 'worker pool exhausted ledger', k: 3 });
    expect(beta.hits[0]).toMatchObject({ id: 's9', dupCount: 9 });
    // The kept notes are the newest four (none was searched); the job has nothing left to merge.
    const kept = await reader.search({
      namespace: 'team/alpha',
      query: '',
      filters: { kinds: ['note'] },
      k: 10,
    });
    expect(kept.hits.map((h) => h.id)).toEqual(['n9', 'n8', 'n7', 'n6']);
    expect((await host.consolidate({ dryRun: true })).merged).toBe(0);
  });
});
