import { DEFAULT_OLLAMA_OPTIONS, OllamaEmbedder } from '@cairn/embed';
import { type FakeOllama, type FakeOllamaOptions, startFakeOllama } from '@cairn/embed/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { countingFetch, expectVectorsClose, norm, OpenFakes, rejectionOf, thrownBy } from './helpers.js';

const fakes = new OpenFakes();
afterEach(() => fakes.closeAll());

const MODEL = 'nomic-embed-text';
const texts = Array.from({ length: 10 }, (_, i) => `memory number ${i} about topic ${i % 3}`);

async function fakeOllama(opts: Partial<FakeOllamaOptions> = {}): Promise<FakeOllama> {
  return fakes.track(await startFakeOllama(opts));
}

describe('OllamaEmbedder: requests and results', () => {
  it('splits texts into batches of maxBatch, at most maxConcurrency at once, and keeps input order', async () => {
    const fake = await fakeOllama();
    const counter = countingFetch();
    const embedder = new OllamaEmbedder({
      model: MODEL,
      dimensions: 64,
      baseUrl: fake.url,
      maxBatch: 3,
      maxConcurrency: 2,
      fetch: counter.fetch,
    });
    const vectors = await embedder.embed(texts);

    expect(fake.requests).toHaveLength(4);
    expect(fake.requests.map((r) => r.body?.input.length).sort()).toEqual([1, 3, 3, 3]);
    expect(fake.requests.flatMap((r) => r.body?.input ?? []).sort()).toEqual([...texts].sort());
    expect(fake.requests[0]?.body).toMatchObject({ model: MODEL, truncate: true });
    expect(counter.maxInFlight()).toBe(2);
    expectVectorsClose(
      vectors,
      texts.map((t) => fake.vectorOf(t)),
    );
  });

  it('L2-normalises vectors the server did not normalise', async () => {
    const fake = await fakeOllama({
      rewrite: (r) => ({ ...r, embeddings: r.embeddings.map((v) => v.map((x) => 3 * x)) }),
    });
    const embedder = new OllamaEmbedder({ model: MODEL, dimensions: 64, baseUrl: fake.url });
    const vectors = await embedder.embed(texts.slice(0, 2));
    for (const v of vectors) expect(norm(v)).toBeCloseTo(1, 5);
    expectVectorsClose(vectors, [fake.vectorOf(texts[0]!), fake.vectorOf(texts[1]!)]);
  });

  it('makes no request for an empty batch', async () => {
    const fake = await fakeOllama();
    const embedder = new OllamaEmbedder({ model: MODEL, dimensions: 64, baseUrl: fake.url });
    expect(await embedder.embed([])).toEqual([]);
    expect(fake.requests).toHaveLength(0);
  });

  it('names its space ollama/<model> unless given an id, with a 0.2 similarity floor', () => {
    const a = new OllamaEmbedder({ model: MODEL, dimensions: 768 });
    expect(a).toMatchObject({ modelId: 'ollama/nomic-embed-text', dimensions: 768, similarityFloor: 0.2 });
    expect(a.baseUrl).toBe(DEFAULT_OLLAMA_OPTIONS.baseUrl);
    const b = new OllamaEmbedder({ model: MODEL, dimensions: 768, id: 'nomic-v1.5', similarityFloor: 0.3 });
    expect(b).toMatchObject({ modelId: 'nomic-v1.5', similarityFloor: 0.3 });
  });

  it('refuses options that would make every request fail', () => {
    expect(thrownBy(() => new OllamaEmbedder({ model: '', dimensions: 64 })).data.field).toBe('model');
    expect(thrownBy(() => new OllamaEmbedder({ model: MODEL, dimensions: 0 })).data.field).toBe('dimensions');
    expect(thrownBy(() => new OllamaEmbedder({ model: MODEL, dimensions: 64, maxBatch: 0 })).code).toBe(
      'INVALID_INPUT',
    );
    expect(
      thrownBy(() => new OllamaEmbedder({ model: MODEL, dimensions: 64, baseUrl: 'localhost:11434' })).code,
    ).toBe('INVALID_INPUT');
  });
});

describe('OllamaEmbedder: failures', () => {
  it('reports a refused connection as retryable BACKEND_UNAVAILABLE naming the URL, and recovers when the server is back', async () => {
    const fake = await fakeOllama();
    const embedder = new OllamaEmbedder({ model: MODEL, dimensions: 64, baseUrl: fake.url });
    expect(await embedder.embed(['warm up'])).toHaveLength(1);

    await fake.setMode('down');
    const err = await rejectionOf(embedder.embed(['hello']));
    expect(err.code).toBe('BACKEND_UNAVAILABLE');
    expect(err.message).toContain(`ollama embedder ollama/nomic-embed-text at ${fake.url} is unreachable`);
    expect(err.message).toContain('ECONNREFUSED');
    expect(err.data).toMatchObject({ embedder: 'ollama/nomic-embed-text', retryable: true });
    expect(err.data.status).toBeUndefined();

    await fake.setMode('up');
    expectVectorsClose(await embedder.embed(['hello']), [fake.vectorOf('hello')]);
  });

  it('reports 503 server busy as retryable, quoting Ollama', async () => {
    const fake = await fakeOllama();
    await fake.setMode('busy');
    const embedder = new OllamaEmbedder({ model: MODEL, dimensions: 64, baseUrl: fake.url });
    const err = await rejectionOf(embedder.embed(['hello']));
    expect(err.code).toBe('BACKEND_UNAVAILABLE');
    expect(err.data).toMatchObject({ status: 503, retryable: true });
    expect(err.data.retryAfterMs).toBeUndefined();
    expect(err.message).toContain('is overloaded (HTTP 503)');
    expect(err.message).toContain('server busy, please try again.  maximum pending requests exceeded');
  });

  it('reports a 500 as retryable', async () => {
    const fake = await fakeOllama();
    await fake.setMode('error500');
    const embedder = new OllamaEmbedder({ model: MODEL, dimensions: 64, baseUrl: fake.url });
    const err = await rejectionOf(embedder.embed(['hello']));
    expect(err.data).toMatchObject({ status: 500, retryable: true });
    expect(err.message).toContain('llama runner process has terminated');
  });

  it('reports a missing model as non-retryable, quoting the server message', async () => {
    const fake = await fakeOllama();
    const embedder = new OllamaEmbedder({ model: 'mxbai-embed-large', dimensions: 64, baseUrl: fake.url });
    const err = await rejectionOf(embedder.embed(['hello']));
    expect(err.code).toBe('BACKEND_UNAVAILABLE');
    expect(err.data).toMatchObject({ embedder: 'ollama/mxbai-embed-large', status: 404, retryable: false });
    expect(err.message).toContain('"model \\"mxbai-embed-large\\" not found, try pulling it first"');
  });

  it('reports a server that holds the request past timeoutMs as retryable', async () => {
    const fake = await fakeOllama();
    await fake.setMode('hang');
    const embedder = new OllamaEmbedder({ model: MODEL, dimensions: 64, baseUrl: fake.url, timeoutMs: 100 });
    const err = await rejectionOf(embedder.embed(['hello']));
    expect(err.code).toBe('BACKEND_UNAVAILABLE');
    expect(err.message).toContain('did not answer within 100 ms');
    expect(err.data).toMatchObject({ retryable: true });
  });

  it('names a body that is not JSON, as non-retryable', async () => {
    const fake = await fakeOllama({ rewrite: () => '{"model":"nomic-embed-text","embeddings":[[0.1,' });
    const embedder = new OllamaEmbedder({ model: MODEL, dimensions: 64, baseUrl: fake.url });
    const err = await rejectionOf(embedder.embed(['hello']));
    expect(err.code).toBe('BACKEND_UNAVAILABLE');
    expect(err.message).toContain('the body is not JSON');
    expect(err.message).toContain(`${fake.url}/api/embed`);
    expect(err.data).toMatchObject({ status: 200, retryable: false });
  });

  it('names a body without embeddings, and a wrong number of vectors', async () => {
    const noField = await fakeOllama({ rewrite: (r) => ({ model: r.model }) });
    const e1 = await rejectionOf(
      new OllamaEmbedder({ model: MODEL, dimensions: 64, baseUrl: noField.url }).embed(['a']),
    );
    expect(e1.message).toContain('the body has no "embeddings" array');
    expect(e1.data.retryable).toBe(false);

    const short = await fakeOllama({ rewrite: (r) => ({ ...r, embeddings: r.embeddings.slice(1) }) });
    const e2 = await rejectionOf(
      new OllamaEmbedder({ model: MODEL, dimensions: 64, baseUrl: short.url }).embed(['a', 'b', 'c']),
    );
    expect(e2.message).toContain('expected 3 vectors in "embeddings", got 2');
    expect(e2.data.retryable).toBe(false);
  });

  it('refuses vectors of another length with DIMENSION_MISMATCH', async () => {
    const fake = await fakeOllama({ dimensions: 32 });
    const embedder = new OllamaEmbedder({ model: MODEL, dimensions: 64, baseUrl: fake.url });
    const err = await rejectionOf(embedder.embed(['hello']));
    expect(err.code).toBe('DIMENSION_MISMATCH');
    expect(err.data).toMatchObject({ expected: 64, actual: 32, space: 'ollama/nomic-embed-text/64' });
  });
});

describe('OllamaEmbedder.probe', () => {
  it('learns the dimensions from one request', async () => {
    const fake = await fakeOllama({ dimensions: 48 });
    const embedder = await OllamaEmbedder.probe({ model: MODEL, baseUrl: fake.url });
    expect(embedder.dimensions).toBe(48);
    expect(fake.requests).toHaveLength(1);
    expectVectorsClose(await embedder.embed(['x y']), [fake.vectorOf('x y')]);
  });

  it('refuses a model whose dimensions differ from the expected ones', async () => {
    const fake = await fakeOllama({ dimensions: 48 });
    const err = await rejectionOf(OllamaEmbedder.probe({ model: MODEL, baseUrl: fake.url, dimensions: 768 }));
    expect(err.code).toBe('DIMENSION_MISMATCH');
  });

  it('fails with retryable BACKEND_UNAVAILABLE when the server is down', async () => {
    const fake = await fakeOllama();
    await fake.setMode('down');
    const err = await rejectionOf(OllamaEmbedder.probe({ model: MODEL, baseUrl: fake.url }));
    expect(err.code).toBe('BACKEND_UNAVAILABLE');
    expect(err.data.retryable).toBe(true);
  });
});
