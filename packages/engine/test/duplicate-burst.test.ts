import { describe, expect, it } from 'vitest';
import { useEngines } from './helpers.js';

const engines = useEngines();

const COPY = 'the gopher build cache must be cleared after upgrading go';
const ts = Date.UTC(2026, 0, 1);

/** `n` copies of one observation (distinct ids, as a hook retrying would write them), and two distinct matches. */
function burst(n: number) {
  return [
    ...Array.from({ length: n }, (_, i) => ({ namespace: 'st', id: `copy${i}`, text: COPY, ts })),
    { namespace: 'st', id: 'flags', text: 'gopher build flags for release', ts },
    { namespace: 'st', id: 'cache', text: 'the gopher module cache lives in GOMODCACHE', ts },
  ];
}

describe('a burst of copies written before the consolidation job runs', () => {
  it('fills the page with the distinct matches ranked below the copies, and traces them as hits', async () => {
    const engine = await engines.open({ consolidation: false });
    engine.ingest(burst(8));
    await engine.drain();
    const res = await engine.search({ namespace: 'st', query: 'gopher build cache', k: 2, explain: 'full' });
    const ids = res.hits.map((h) => h.id);
    expect(ids).toHaveLength(2);
    expect(ids.filter((id) => id.startsWith('copy'))).toHaveLength(1);
    const trace = new Map(res.explain.candidates!.map((c) => [c.id, c]));
    for (const id of ids) expect(trace.get(id)!.fate).toBe('hit');
    // Every copy not returned is named a duplicate of the one that was, never "below k" on a short page.
    for (const c of res.explain.candidates!)
      if (c.id.startsWith('copy') && c.fate !== 'hit')
        expect(c).toMatchObject({ fate: 'duplicate', duplicateOf: ids[0] });
  });

  it('looks past a head full of copies (a burst longer than k × 4), with MMR off and on', async () => {
    const engine = await engines.open({ consolidation: false });
    engine.ingest(burst(60));
    await engine.drain();
    for (const mmrLambda of [1, 0.5]) {
      const res = await engine.search({
        namespace: 'st',
        query: 'gopher build cache',
        k: 3,
        candidatePool: 100,
        mmrLambda,
        explain: 'full',
      });
      const ids = res.hits.map((h) => h.id);
      expect(ids.filter((id) => id.startsWith('copy'))).toHaveLength(1);
      expect(ids.filter((id) => !id.startsWith('copy')).sort()).toEqual(['cache', 'flags']);
      expect(res.explain.candidates!.filter((c) => c.fate === 'below_k')).toEqual([]);
    }
  });

  it('returns a short page only when nothing distinct is left among the candidates', async () => {
    const engine = await engines.open({ consolidation: false });
    engine.ingest(burst(30).filter((m) => m.id.startsWith('copy')));
    await engine.drain();
    const res = await engine.search({ namespace: 'st', query: 'gopher build cache', k: 5, explain: 'full' });
    expect(res.hits).toHaveLength(1);
    const fates = res.explain.candidates!.map((c) => c.fate);
    expect(fates.filter((f) => f === 'duplicate')).toHaveLength(29);
  });
});
