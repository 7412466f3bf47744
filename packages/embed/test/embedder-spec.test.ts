import {
  createEmbedder,
  HashingEmbedder,
  OllamaEmbedder,
  OpenAICompatibleEmbedder,
  parseEmbedderSpec,
  resolveEmbedder,
} from '@cairn/embed';
import { startFakeOllama, startFakeOpenAI } from '@cairn/embed/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { expectVectorsClose, OpenFakes, rejectionOf, thrownBy } from './helpers.js';

const fakes = new OpenFakes();
afterEach(() => fakes.closeAll());

describe('parseEmbedderSpec', () => {
  it('parses the accepted forms, splitting at the first colon only', () => {
    expect(parseEmbedderSpec('hash')).toEqual({ kind: 'hash' });
    expect(parseEmbedderSpec(' HASH:256 ')).toEqual({ kind: 'hash', dimensions: 256 });
    expect(parseEmbedderSpec('ollama:nomic-embed-text:v1.5')).toEqual({
      kind: 'ollama',
      model: 'nomic-embed-text:v1.5',
    });
    expect(parseEmbedderSpec('openai:text-embedding-3-small')).toEqual({
      kind: 'openai',
      model: 'text-embedding-3-small',
    });
  });

  it.each([
    ['', 'is empty'],
    ['bert', 'has unknown kind "bert"'],
    ['cohere:embed-v3', 'has unknown kind "cohere"'],
    ['ollama:', 'names no model'],
    ['openai:text embedding', 'has whitespace in the model name'],
    ['hash:abc', 'not an integer in [8, 4096]'],
    ['hash:4', 'not an integer in [8, 4096]'],
    ['hash:100000', 'not an integer in [8, 4096]'],
  ])('refuses %j with INVALID_INPUT listing the accepted forms', (spec, why) => {
    const err = thrownBy(() => parseEmbedderSpec(spec));
    expect(err.code).toBe('INVALID_INPUT');
    expect(err.message).toContain(why);
    expect(err.message).toContain('hash, hash:<dimensions>, ollama:<model>, openai:<model>');
  });
});

describe('createEmbedder (no network)', () => {
  it('builds the hashing embedder with the spec or option dimensions, and refuses a disagreement', () => {
    expect(createEmbedder('hash').dimensions).toBe(384);
    expect(createEmbedder('hash:256')).toBeInstanceOf(HashingEmbedder);
    expect(createEmbedder('hash', { dimensions: 512 }).dimensions).toBe(512);
    expect(thrownBy(() => createEmbedder('hash:256', { dimensions: 768 })).code).toBe('DIMENSION_MISMATCH');
  });

  it('builds an Ollama embedder from CAIRN_OLLAMA_URL and known dimensions without a request', async () => {
    const fake = fakes.track(await startFakeOllama());
    const embedder = createEmbedder('ollama:nomic-embed-text', {
      dimensions: 64,
      env: { CAIRN_OLLAMA_URL: fake.url },
    });
    expect(embedder).toBeInstanceOf(OllamaEmbedder);
    expect(embedder.modelId).toBe('ollama/nomic-embed-text');
    expect(fake.requests).toHaveLength(0);
    expectVectorsClose(await embedder.embed(['x']), [fake.vectorOf('x')]);
  });

  it('defaults the Ollama URL to 127.0.0.1:11434', () => {
    const embedder = createEmbedder('ollama:nomic-embed-text', {
      dimensions: 768,
      env: {},
    }) as OllamaEmbedder;
    expect(embedder.baseUrl).toBe('http://127.0.0.1:11434');
  });

  it('refuses a remote spec whose dimensions are unknown', () => {
    const err = thrownBy(() => createEmbedder('ollama:nomic-embed-text', { env: {} }));
    expect(err.code).toBe('INVALID_INPUT');
    expect(err.message).toContain('resolveEmbedder');
  });

  it('takes CAIRN_OPENAI_DIMENSIONS as the requested and expected length', () => {
    const embedder = createEmbedder('openai:text-embedding-3-small', {
      env: { CAIRN_OPENAI_API_KEY: 'sk-x', CAIRN_OPENAI_DIMENSIONS: '256' },
    }) as OpenAICompatibleEmbedder;
    expect(embedder).toMatchObject({
      dimensions: 256,
      requestDimensions: 256,
      modelId: 'openai/text-embedding-3-small',
    });
    expect(embedder.baseUrl).toBe('https://api.openai.com/v1');
    const err = thrownBy(() =>
      createEmbedder('openai:text-embedding-3-small', {
        dimensions: 1536,
        env: { CAIRN_OPENAI_API_KEY: 'sk-x', CAIRN_OPENAI_DIMENSIONS: '256' },
      }),
    );
    expect(err.code).toBe('DIMENSION_MISMATCH');
  });

  it('refuses api.openai.com without a key, and a malformed CAIRN_OPENAI_DIMENSIONS', () => {
    const noKey = thrownBy(() =>
      createEmbedder('openai:text-embedding-3-small', { dimensions: 1536, env: {} }),
    );
    expect(noKey.code).toBe('INVALID_INPUT');
    expect(noKey.message).toContain('CAIRN_OPENAI_API_KEY');
    const badDims = thrownBy(() =>
      createEmbedder('openai:text-embedding-3-small', {
        env: { CAIRN_OPENAI_API_KEY: 'sk-x', CAIRN_OPENAI_DIMENSIONS: 'lots' },
      }),
    );
    expect(badDims.data.field).toBe('CAIRN_OPENAI_DIMENSIONS');
  });
});

describe('resolveEmbedder', () => {
  it('probes an Ollama model for its dimensions', async () => {
    const fake = fakes.track(await startFakeOllama({ dimensions: 24 }));
    const embedder = await resolveEmbedder('ollama:nomic-embed-text', {
      env: { CAIRN_OLLAMA_URL: fake.url },
    });
    expect(embedder.dimensions).toBe(24);
    expect(fake.requests).toHaveLength(1);
  });

  it('probes a self-hosted OpenAI-compatible server without a key', async () => {
    const fake = fakes.track(await startFakeOpenAI({ dimensions: 40 }));
    const embedder = await resolveEmbedder('openai:text-embedding-3-small', {
      env: { CAIRN_OPENAI_BASE_URL: fake.url },
    });
    expect(embedder).toBeInstanceOf(OpenAICompatibleEmbedder);
    expect(embedder.dimensions).toBe(40);
  });

  it('makes no request when the dimensions are known', async () => {
    const fake = fakes.track(await startFakeOpenAI({ apiKey: 'sk-k' }));
    const embedder = await resolveEmbedder('openai:text-embedding-3-small', {
      env: { CAIRN_OPENAI_BASE_URL: fake.url, CAIRN_OPENAI_API_KEY: 'sk-k', CAIRN_OPENAI_DIMENSIONS: '16' },
    });
    expect(fake.requests).toHaveLength(0);
    expectVectorsClose(await embedder.embed(['x']), [fake.vectorOf('x', 16)]);
    expect(fake.requests[0]?.body?.dimensions).toBe(16);
  });

  it('fails with retryable BACKEND_UNAVAILABLE when the server to probe is down', async () => {
    const fake = fakes.track(await startFakeOllama());
    await fake.setMode('down');
    const err = await rejectionOf(
      resolveEmbedder('ollama:nomic-embed-text', { env: { CAIRN_OLLAMA_URL: fake.url } }),
    );
    expect(err.code).toBe('BACKEND_UNAVAILABLE');
    expect(err.data.retryable).toBe(true);
    expect(err.message).toContain(fake.url);
  });
});
