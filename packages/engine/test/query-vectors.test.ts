import { type FakeOllama, startFakeOllama } from '@cairn/embed/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { useEngines } from './helpers.js';

// A remote embedder over Ollama's real wire format on loopback: how many embedder calls searches cost.

const engines = useEngines();
const fakes: FakeOllama[] = [];
afterEach(async () => {
  for (const f of fakes.splice(0)) await f.close();
});

/** The texts each request to the fake asked to embed, in order. */
const inputs = (fake: FakeOllama) =>
  fake.requests.map((r) => {
    const input = (r.body as { input: string | string[] }).input;
    return typeof input === 'string' ? [input] : input;
  });

describe('query vectors of a remote embedder', () => {
  it('are embedded once for a repeated query, shared by concurrent searches, and not remembered when the call fails', async () => {
    const fake = await startFakeOllama();
    fakes.push(fake);
    const engine = await engines.open({
      embedderSpec: 'ollama:nomic-embed-text',
      env: { CAIRN_OLLAMA_URL: fake.url },
    });
    engine.ingest([
      { namespace: 'q', id: 'a', text: 'the billing service timed out on Friday' },
      { namespace: 'q', id: 'b', text: 'deploys run from the main branch' },
    ]);
    await engine.drain();
    const before = fake.requests.length;
    const ask = (query: string) => engine.search({ namespace: 'q', query });
    for (let i = 0; i < 5; i++) expect((await ask('billing outage')).degraded).toEqual([]);
    await Promise.all([ask('deploy branch'), ask('deploy branch'), ask('deploy branch')]);
    expect(inputs(fake).slice(before)).toEqual([['billing outage'], ['deploy branch']]);
    // The embedder down: the vector leg is degraded, and the failure is not cached.
    await fake.setMode('error500');
    expect((await ask('billing timeout')).degraded).toEqual(['vector']);
    await fake.setMode('up');
    const again = await ask('billing timeout');
    expect(again.degraded).toEqual([]);
    expect(again.hits[0]?.id).toBe('a');
    expect(inputs(fake).filter((t) => t[0] === 'billing timeout').length).toBeGreaterThanOrEqual(2);
  });
});
