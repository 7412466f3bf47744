import { describe, expect, it } from 'vitest';
import { useEngines } from './helpers.js';

const engines = useEngines();

const turns = [
  ['1', 'Melanie: I ran a charity race for mental health last Saturday', 0],
  ['2', 'Caroline: That is amazing! How did it go?', 1],
  ['3', 'Melanie: It made me realize self-care really matters', 2],
  ['4', 'Caroline: I went to an LGBTQ support group yesterday', 3],
] as const;

describe('the relevance signal on real searches', () => {
  it('tells relevant from weak from nothing relevant, and names what is missing', async () => {
    const engine = await engines.open();
    engine.ingest(
      turns.map(([id, text, minute]) => ({
        namespace: 'conv',
        id,
        text,
        kind: 'turn',
        session: 's1',
        ts: new Date(Date.UTC(2024, 0, 1, 10, minute)).toISOString(),
      })),
    );
    // Another tenant says exactly what the off-topic query asks: it must not count.
    engine.ingest([{ namespace: 'other', text: 'The submarine reached the Mariana trench', kind: 'turn' }]);
    await engine.drain();

    const asked = await engine.search({
      namespace: 'conv',
      query: 'What did Melanie realize after her charity race?',
    });
    expect(asked.relevance).toMatchObject({ level: 'relevant' });

    const swapped = await engine.search({
      namespace: 'conv',
      query: 'What did Caroline realize after her charity race?',
    });
    expect(swapped.hits.length).toBeGreaterThan(0);
    expect(swapped.relevance!.score).toBeLessThan(asked.relevance!.score);

    const never = await engine.search({
      namespace: 'conv',
      query: 'When did the submarine reach the trench?',
    });
    expect(never.relevance).toMatchObject({ level: 'none', missing: ['submarine', 'reach', 'trench'] });
  });

  it('scores a turn by its own words, not by the turn before it it is also indexed with', async () => {
    const engine = await engines.open();
    engine.ingest([
      {
        namespace: 'c',
        id: 'q',
        text: 'Where did you hike with the dog?',
        kind: 'turn',
        session: 's',
        ts: '2024-01-01T00:00:00Z',
      },
      {
        namespace: 'c',
        id: 'a',
        text: 'Up on the ridge, last Friday!',
        kind: 'turn',
        session: 's',
        ts: '2024-01-01T00:01:00Z',
      },
    ]);
    await engine.drain();
    // Only the answer passes the filter: it is found through its context, but says neither word itself.
    const answer = await engine.search({
      namespace: 'c',
      query: 'hike dog',
      filters: { since: Date.parse('2024-01-01T00:00:30Z') },
    });
    expect(answer.hits.map((h) => h.id)).toEqual(['a']);
    expect(answer.relevance).toMatchObject({ level: 'none', missing: ['hike', 'dog'] });
    engine.delete('c', 'q');
    // The answer is found through its context no longer (q is deleted), and what is left says neither word.
    const res = await engine.search({ namespace: 'c', query: 'hike dog' });
    expect(res.hits.map((h) => h.id)).not.toContain('q');
    expect(res.relevance?.level ?? 'none').toBe('none');
  });
});
