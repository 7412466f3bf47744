import { describe, expect, it } from 'vitest';
import { useEngines } from './helpers.js';

const engines = useEngines();

describe('MMR with tag overlap (Memsense)', () => {
  it('makes room for a memory under other tags, only with MMR on, and only as much as mmrTagWeight says', async () => {
    // No vector leg: redundancy comes from the tags alone, so the test does not hang on hash collisions.
    const engine = await engines.open({ embedder: null });
    const ts = Date.UTC(2026, 0, 1);
    engine.ingest([
      { namespace: 'm', id: 'a', text: 'alpha beta alpha beta', tags: ['deploy'], ts },
      { namespace: 'm', id: 'b', text: 'alpha beta and a few other words here', tags: ['deploy'], ts },
      { namespace: 'm', id: 'c', text: 'alpha with several unrelated words in it', tags: ['db'], ts },
    ]);
    const ids = async (extra: Record<string, number>) =>
      (await engine.search({ namespace: 'm', query: 'alpha beta', k: 2, decay: 'off', ...extra })).hits.map(
        (h) => h.id,
      );
    // Relevance order: a, b, c.
    expect(await ids({})).toEqual(['a', 'b']);
    // MMR on: b shares a's tag (redundancy 0.35), c does not, so c takes the second place.
    expect(await ids({ mmrLambda: 0.3 })).toEqual(['a', 'c']);
    // Tags off: with no vectors nothing is redundant, and relevance order stands.
    expect(await ids({ mmrLambda: 0.3, mmrTagWeight: 0 })).toEqual(['a', 'b']);
    const res = await engine.search({ namespace: 'm', query: 'alpha beta', mmrLambda: 0.3 });
    expect(res.explain.settings.mmrTagWeight).toBe(0.35);
  });
});
