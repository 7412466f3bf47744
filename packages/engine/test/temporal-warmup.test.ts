import { temporalParserWarm } from '@cairn/router';
import { describe, expect, it } from 'vitest';
import { useEngines } from './helpers.js';

// Each test file runs in a fresh module graph, so chrono starts cold on this thread. The tests run in order.
describe("chrono's one-time costs", () => {
  const engines = useEngines();

  it('are not paid by a one-shot engine (a CLI command), which may never see a dated question', async () => {
    await engines.open({ refreshIntervalMs: 0 });
    expect(temporalParserWarm()).toBe(false);
  });

  it('are paid by a long-lived engine before its open resolves, so its first searches do not wait for them', async () => {
    const engine = await engines.open();
    // Checked before any other turn of the event loop: paid a turn later, they landed in the first search.
    expect(temporalParserWarm()).toBe(true);
    engine.ingest([
      { namespace: 'p', id: 'a', text: 'the deploy on 3 May 2023 failed', ts: Date.UTC(2023, 4, 3) },
    ]);
    await engine.drain();
    const res = await engine.search({ namespace: 'p', query: 'what failed on 3 May 2023?', k: 5 });
    expect(res.hits.map((h) => h.id)).toEqual(['a']);
  });
});
