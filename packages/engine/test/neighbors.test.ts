import { describe, expect, it } from 'vitest';
import { useEngines } from './helpers.js';

const engines = useEngines();

const at = (minute: number) => new Date(Date.UTC(2024, 0, 1, 10, minute)).toISOString();

describe('neighbour expansion', () => {
  it("attaches the hit's session neighbours, never another session's or another namespace's", async () => {
    const engine = await engines.open();
    const turn = (namespace: string, id: string, session: string, minute: number, text: string) => ({
      namespace,
      id,
      session,
      kind: 'turn',
      ts: at(minute),
      text,
    });
    engine.ingest([
      turn('a', 'a1', 's1', 0, 'Did you see the eclipse?'),
      turn('a', 'a2', 's1', 1, 'Yes, from the lighthouse on the cape'),
      turn('a', 'a3', 's1', 2, 'It was cold up there'),
      turn('a', 'a4', 's2', 1, 'Other session, same minute'),
      turn('b', 'b1', 's1', 1, 'Another tenant, same session name'),
      turn('b', 'b2', 's1', 3, 'Another tenant again'),
    ]);
    await engine.drain();

    const res = await engine.search({ namespace: 'a', query: 'lighthouse cape', neighbors: 1, k: 1 });
    expect(res.hits.map((h) => h.id)).toEqual(['a2']);
    expect(res.hits[0]!.neighbors).toEqual({
      before: [expect.objectContaining({ id: 'a1', text: 'Did you see the eclipse?' })],
      after: [expect.objectContaining({ id: 'a3', kind: 'turn' })],
    });

    const wide = await engine.search({ namespace: 'a', query: 'lighthouse', neighbors: 10 });
    const around = wide.hits[0]!.neighbors!;
    expect([...around.before, ...around.after].map((n) => n.id)).toEqual(['a1', 'a3']);

    const none = await engine.search({ namespace: 'a', query: 'lighthouse' });
    expect(none.hits[0]!.neighbors).toBeUndefined();
    await expect(engine.search({ namespace: 'a', query: 'x', neighbors: 11 })).rejects.toMatchObject({
      code: 'INVALID_INPUT',
    });
  });

  it('shows only live neighbours: never a superseded or consolidation-merged memory (a timeline still does)', async () => {
    const engine = await engines.open({ consolidation: false });
    const turn = (id: string, minute: number, text: string, extra: Record<string, unknown> = {}) => ({
      namespace: 'n',
      id,
      session: 's',
      kind: 'turn',
      ts: at(minute),
      text,
      ...extra,
    });
    engine.ingest([
      turn('old', 0, 'deploy target is heroku'),
      turn('copy', 1, 'we paged the on-call twice'),
      turn('hit', 2, 'the quokka incident postmortem'),
      turn('kept', 3, 'we paged the on-call twice'),
      turn('new', 4, 'deploy target is fly.io', { supersedes: ['old'] }),
    ]);
    await engine.drain();
    // The older copy is merged into the newer one.
    expect((await engine.consolidate()).merges.map((m) => [m.id, m.into])).toEqual([['copy', 'kept']]);

    const res = await engine.search({ namespace: 'n', query: 'quokka', k: 1, neighbors: 2 });
    expect(res.hits.map((h) => h.id)).toEqual(['hit']);
    const around = res.hits[0]!.neighbors!;
    expect(around.before.map((n) => n.id)).toEqual([]);
    expect(around.after.map((n) => n.id)).toEqual(['kept', 'new']);

    // The timeline is history: it shows what was replaced.
    const t = engine.timeline('n', 'hit', 2, 2);
    expect(t.before.map((m) => [m.id, m.supersededBy])).toEqual([
      ['old', 'new'],
      ['copy', 'kept'],
    ]);
  });
});
