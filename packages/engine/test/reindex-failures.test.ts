import { type FakeOllama, startFakeOllama } from '@cairn/embed/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { useEngines } from './helpers.js';

// A reindex into a remote embedder that misbehaves, served over Ollama's real wire format (POST /api/embed)
// on loopback: the build survives an outage mid-way, and a space that failed for too many memories is not
// activated.

const engines = useEngines();
const fakes: FakeOllama[] = [];
afterEach(async () => {
  for (const f of fakes.splice(0)) await f.close();
});

const OLLAMA_SPACE = 'ollama/nomic-embed-text/64';

function corpus(n: number) {
  return Array.from({ length: n }, (_, i) => ({
    namespace: i % 2 ? 'acme' : 'globex',
    id: `m${i}`,
    text: `note ${i} about the ${['billing', 'search', 'deploy', 'auth'][i % 4]} service ticket T${i}${i % 40 === 7 ? ' poison' : ''}`,
  }));
}

async function until(what: string, done: () => boolean, ms = 60_000): Promise<void> {
  const end = Date.now() + ms;
  while (!done()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('a reindex into a failing embedder', () => {
  it('rides out an outage mid-way (HTTP 500), resumes from its cursor and activates complete', async () => {
    // Down after the probe and two batches: the switch happens inside the server, before a third answer.
    let served = 0;
    const holder: { fake?: FakeOllama } = {};
    const fake = await startFakeOllama({
      rewrite: (response) => {
        served += 1;
        if (served === 3) void holder.fake!.setMode('error500');
        return response;
      },
    });
    holder.fake = fake;
    fakes.push(fake);
    const engine = await engines.open({
      refreshIntervalMs: 50,
      env: { CAIRN_OLLAMA_URL: fake.url },
      embedBatchSize: 100,
    });
    engine.ingest(corpus(1_200));
    await engine.drain();
    await engine.requestReindex('ollama:nomic-embed-text', { activate: true });
    // The build keeps what it stored and says why it waits.
    await until('the outage to be seen', () => /500|terminated/.test(engine.build?.lastError ?? ''));
    const during = engine.store.spaces.progress(OLLAMA_SPACE);
    expect(during.embedded).toBeGreaterThan(0);
    expect(during.embedded).toBeLessThan(1_200);
    expect(engine.space?.id).toBe('cairn-hash-v1/384');
    // Searches keep their vector leg from the active space meanwhile.
    expect((await engine.search({ namespace: 'acme', query: 'billing ticket T1' })).degraded).toEqual([]);
    await fake.setMode('up');
    await until('the switch', () => engine.space?.id === OLLAMA_SPACE);
    expect(engine.store.spaces.progress(OLLAMA_SPACE)).toMatchObject({
      total: 1_200,
      embedded: 1_200,
      failed: 0,
    });
    // Nothing embedded twice: the requests after the outage carried only what was left.
    const texts = fake.requests
      .filter((r) => r.status === 200)
      .flatMap((r) => (r.body as { input: string[] }).input);
    expect(new Set(texts).size).toBe(texts.length);
    const r = await engine.search({ namespace: 'acme', query: 'note 1001 about the search', k: 3 });
    expect(r.explain.space).toBe(OLLAMA_SPACE);
    expect(r.hits.map((h) => h.id)).toContain('m1001');
  }, 120_000);

  it('does not activate a space that failed for more than 1% of memories, says why, and keeps serving the old one', async () => {
    // Wrong-length vectors for the texts marked "poison" (1 in 40, 2.5%). The embedder refuses a whole
    // batch for one of them; the stage halves the batch to find them and records each as a failure.
    const fake = await startFakeOllama({
      rewrite: (response, request) => ({
        ...response,
        embeddings: response.embeddings.map((v, i) => {
          const input = typeof request.input === 'string' ? [request.input] : request.input;
          return input[i]!.includes('poison') ? v.slice(0, 10) : v;
        }),
      }),
    });
    fakes.push(fake);
    const engine = await engines.open({ refreshIntervalMs: 50, env: { CAIRN_OLLAMA_URL: fake.url } });
    engine.ingest(corpus(1_200));
    await engine.drain();
    await engine.requestReindex('ollama:nomic-embed-text', { activate: true });
    await until('the refusal', () => /failed for 30 of 1200/.test(engine.build?.lastError ?? ''));
    expect(engine.space?.id).toBe('cairn-hash-v1/384');
    const view = engine.listSpaces().find((s) => s.id === OLLAMA_SPACE)!;
    expect(view.progress).toMatchObject({ total: 1_200, embedded: 1_170, failed: 30 });
    expect(view.active).toBe(false);
    const reasons = engine.store.db
      .prepare('SELECT DISTINCT error FROM embed_failures WHERE space = ?')
      .pluck()
      .all(OLLAMA_SPACE) as string[];
    expect(reasons).toEqual([expect.stringMatching(/^DIMENSION_MISMATCH/)]);
    // Asking by hand is refused the same way, by name; forcing it is the operator's call.
    expect(() => engine.activateSpace(OLLAMA_SPACE)).toThrow(/failed for 30 of 1200/);
    expect((await engine.search({ namespace: 'acme', query: 'billing ticket' })).explain.space).toBe(
      'cairn-hash-v1/384',
    );
    engine.activateSpace(OLLAMA_SPACE, { force: true });
    await until('the forced switch', () => engine.space?.id === OLLAMA_SPACE);
  }, 120_000);
});
