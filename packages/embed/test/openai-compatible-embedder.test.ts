import { OpenAICompatibleEmbedder, type OpenAICompatibleEmbedderInit } from '@cairn/embed';
import { type FakeOpenAI, type FakeOpenAIOptions, startFakeOpenAI } from '@cairn/embed/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { countingFetch, expectVectorsClose, OpenFakes, rejectionOf, thrownBy } from './helpers.js';

const fakes = new OpenFakes();
afterEach(() => fakes.closeAll());

const MODEL = 'text-embedding-3-small';
const KEY = 'sk-test-0123456789abcdef';
const texts = Array.from({ length: 7 }, (_, i) => `note ${i}: the deploy of service ${i % 2} failed`);

async function fakeOpenAI(opts: Partial<FakeOpenAIOptions> = {}): Promise<FakeOpenAI> {
  return fakes.track(await startFakeOpenAI({ apiKey: KEY, ...opts }));
}

function embedderFor(fake: FakeOpenAI, opts: Partial<OpenAICompatibleEmbedderInit> = {}) {
  return new OpenAICompatibleEmbedder({
    model: MODEL,
    dimensions: 64,
    baseUrl: fake.url,
    apiKey: KEY,
    ...opts,
  });
}

describe('OpenAICompatibleEmbedder: requests and results', () => {
  it('splits texts into batches of maxBatch, keeps input order, and sends the documented body and key', async () => {
    const fake = await fakeOpenAI();
    const counter = countingFetch();
    const vectors = await embedderFor(fake, { maxBatch: 2, maxConcurrency: 3, fetch: counter.fetch }).embed(
      texts,
    );

    expect(fake.requests).toHaveLength(4);
    expect(fake.requests.every((r) => r.status === 200)).toBe(true);
    expect(counter.maxInFlight()).toBe(3);
    const body = fake.requests[0]?.body;
    expect(body).toMatchObject({ model: MODEL, encoding_format: 'float' });
    expect(body).not.toHaveProperty('dimensions');
    expect(fake.requests[0]?.headers.authorization).toBe(`Bearer ${KEY}`);
    expectVectorsClose(
      vectors,
      texts.map((t) => fake.vectorOf(t)),
    );
  });

  it('places vectors by index, not by array order', async () => {
    const fake = await fakeOpenAI({ rewrite: (r) => ({ ...r, data: [...r.data].reverse() }) });
    const vectors = await embedderFor(fake).embed(texts);
    expect(fake.requests).toHaveLength(1);
    expectVectorsClose(
      vectors,
      texts.map((t) => fake.vectorOf(t)),
    );
  });

  it('decodes base64 little-endian float32 embeddings', async () => {
    const fake = await fakeOpenAI({
      rewrite: (r) => ({
        ...r,
        data: r.data.map((d) => ({
          ...d,
          embedding: Buffer.from(new Float32Array(d.embedding as number[]).buffer).toString('base64'),
        })),
      }),
    });
    const vectors = await embedderFor(fake).embed(texts.slice(0, 3));
    expectVectorsClose(
      vectors,
      texts.slice(0, 3).map((t) => fake.vectorOf(t)),
    );
  });

  it('sends dimensions only when requestDimensions is set, and takes it as its own length', async () => {
    const fake = await fakeOpenAI();
    const embedder = new OpenAICompatibleEmbedder({
      model: MODEL,
      requestDimensions: 16,
      baseUrl: fake.url,
      apiKey: KEY,
    });
    expect(embedder.dimensions).toBe(16);
    const vectors = await embedder.embed(['short vectors']);
    expect(fake.requests[0]?.body?.dimensions).toBe(16);
    expectVectorsClose(vectors, [fake.vectorOf('short vectors', 16)]);
  });

  it('sends no Authorization header without a key', async () => {
    const fake = await fakeOpenAI({ apiKey: undefined });
    await embedderFor(fake, { apiKey: undefined }).embed(['a']);
    expect(fake.requests[0]?.headers.authorization).toBeUndefined();
  });

  it('names its space openai/<model> unless given an id', () => {
    expect(new OpenAICompatibleEmbedder({ model: MODEL, dimensions: 1536 }).modelId).toBe(
      'openai/text-embedding-3-small',
    );
    expect(new OpenAICompatibleEmbedder({ model: MODEL, dimensions: 1536, id: 'te3s' }).modelId).toBe('te3s');
  });

  it('refuses dimensions that contradict requestDimensions', () => {
    const err = thrownBy(
      () => new OpenAICompatibleEmbedder({ model: MODEL, dimensions: 64, requestDimensions: 32 }),
    );
    expect(err.code).toBe('DIMENSION_MISMATCH');
  });
});

describe('OpenAICompatibleEmbedder: failures', () => {
  it('reports a wrong key as non-retryable, quoting the server message', async () => {
    const fake = await fakeOpenAI();
    const err = await rejectionOf(embedderFor(fake, { apiKey: 'sk-wrong-key-9999' }).embed(['a']));
    expect(err.code).toBe('BACKEND_UNAVAILABLE');
    expect(err.data).toMatchObject({ status: 401, retryable: false });
    expect(err.message).toContain('rejected the API key (HTTP 401)');
    expect(err.message).toContain('Incorrect API key provided: sk-w****9999');
  });

  it('reports an unknown model as non-retryable', async () => {
    const fake = await fakeOpenAI();
    const err = await rejectionOf(embedderFor(fake, { model: 'text-embedding-4' }).embed(['a']));
    expect(err.data).toMatchObject({ embedder: 'openai/text-embedding-4', status: 404, retryable: false });
    expect(err.message).toContain('The model `text-embedding-4` does not exist');
  });

  it('reports a batch over the server limit as a non-retryable 400', async () => {
    const fake = await fakeOpenAI({ maxInputs: 4 });
    const err = await rejectionOf(embedderFor(fake, { maxBatch: 5 }).embed(texts));
    expect(err.data).toMatchObject({ status: 400, retryable: false });
    expect(err.message).toContain('Too many inputs. The max number of inputs is 4.');
  });

  it('takes retryAfterMs from the exhausted budget of x-ratelimit-reset-* on a 429', async () => {
    const fake = await fakeOpenAI();
    const embedder = embedderFor(fake);
    await fake.setMode('busy');
    const err = await rejectionOf(embedder.embed(['a']));
    expect(err.code).toBe('BACKEND_UNAVAILABLE');
    expect(err.data).toMatchObject({ status: 429, retryable: true, retryAfterMs: 20 });
    expect(err.message).toContain('is rate-limiting requests (HTTP 429)');
    expect(err.message).toContain('retry after 20 ms');

    await fake.setMode('busy', {
      headers: {
        'x-ratelimit-remaining-requests': '2999',
        'x-ratelimit-reset-requests': '20ms',
        'x-ratelimit-remaining-tokens': '0',
        'x-ratelimit-reset-tokens': '6m0s',
      },
    });
    expect((await rejectionOf(embedder.embed(['a']))).data.retryAfterMs).toBe(360_000);
  });

  it('prefers retry-after (seconds) on a 429', async () => {
    const fake = await fakeOpenAI();
    await fake.setMode('busy', { headers: { 'retry-after': '2', 'x-ratelimit-reset-requests': '1s' } });
    const err = await rejectionOf(embedderFor(fake).embed(['a']));
    expect(err.data).toMatchObject({ status: 429, retryable: true, retryAfterMs: 2000 });
  });

  it('reports a 500 as retryable, and recovers when the server does', async () => {
    const fake = await fakeOpenAI();
    const embedder = embedderFor(fake);
    await fake.setMode('error500');
    const err = await rejectionOf(embedder.embed(['a']));
    expect(err.data).toMatchObject({ status: 500, retryable: true });
    expect(err.message).toContain('The server had an error while processing your request');
    await fake.setMode('up');
    expect(await embedder.embed(['a'])).toHaveLength(1);
  });

  it('reports a refused connection as retryable, naming the URL, and works again on the same port', async () => {
    const fake = await fakeOpenAI();
    const embedder = embedderFor(fake);
    await fake.setMode('down');
    const err = await rejectionOf(embedder.embed(['a']));
    expect(err.code).toBe('BACKEND_UNAVAILABLE');
    expect(err.message).toContain(
      `openai embedder openai/text-embedding-3-small at ${fake.url} is unreachable`,
    );
    expect(err.data.retryable).toBe(true);
    await fake.setMode('up');
    expectVectorsClose(await embedder.embed(['a']), [fake.vectorOf('a')]);
  });

  it('names a wrong number of embeddings, a bad index and a bad embedding', async () => {
    const cases: [FakeOpenAIOptions['rewrite'], string][] = [
      [(r) => ({ ...r, data: r.data.slice(1) }), 'expected 2 embeddings in "data", got 1'],
      [(r) => ({ ...r, data: r.data.map((d) => ({ ...d, index: 0 })) }), 'data holds index 0 twice'],
      [(r) => ({ ...r, data: r.data.map((d) => ({ ...d, index: d.index + 5 })) }), 'data[0].index is 5'],
      [
        (r) => ({ ...r, data: r.data.map((d) => ({ ...d, embedding: 'not base64!' })) }),
        'data[0].embedding is neither an array of numbers nor base64 float32',
      ],
      [() => ({ object: 'list' }), 'the body has no "data" array'],
      [() => '<html>bad gateway</html>', 'the body is not JSON: "<html>bad gateway</html>"'],
    ];
    for (const [rewrite, message] of cases) {
      const fake = await fakeOpenAI({ rewrite });
      const err = await rejectionOf(embedderFor(fake).embed(['a', 'b']));
      expect(err.code).toBe('BACKEND_UNAVAILABLE');
      expect(err.message).toContain(message);
      expect(err.data.retryable).toBe(false);
    }
  });

  it('refuses vectors of another length with DIMENSION_MISMATCH', async () => {
    const fake = await fakeOpenAI({ dimensions: 32 });
    const err = await rejectionOf(embedderFor(fake).embed(['a']));
    expect(err.code).toBe('DIMENSION_MISMATCH');
    expect(err.data).toMatchObject({ expected: 64, actual: 32 });
  });
});

describe('OpenAICompatibleEmbedder.probe', () => {
  it('learns the dimensions from one request', async () => {
    const fake = await fakeOpenAI({ dimensions: 40 });
    const embedder = await OpenAICompatibleEmbedder.probe({ model: MODEL, baseUrl: fake.url, apiKey: KEY });
    expect(embedder.dimensions).toBe(40);
    expect(fake.requests).toHaveLength(1);
  });

  it('surfaces a bad key at probe time', async () => {
    const fake = await fakeOpenAI();
    const err = await rejectionOf(
      OpenAICompatibleEmbedder.probe({ model: MODEL, baseUrl: fake.url, apiKey: 'nope' }),
    );
    expect(err.data).toMatchObject({ status: 401, retryable: false });
  });
});
