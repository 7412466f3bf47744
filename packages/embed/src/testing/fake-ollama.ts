import { withDefaults } from '@cairn/core';
import { HashingEmbedder } from '../hashing-embedder.js';
import { type FakeReply, type FakeServer, startLoopbackServer } from './loopback-server.js';

/** The body of Ollama's `POST /api/embed`. */
export interface OllamaEmbedRequest {
  model: string;
  input: string | string[];
  truncate?: boolean;
  keep_alive?: string | number;
  options?: Record<string, unknown>;
}

/** The 200 answer of Ollama's `POST /api/embed` (durations in ns). */
export interface OllamaEmbedResponse {
  model: string;
  embeddings: number[][];
  total_duration: number;
  load_duration: number;
  prompt_eval_count: number;
}

/** Options of startFakeOllama. */
export interface FakeOllamaOptions {
  /**
   * Models the fake has "pulled"; any other answers 404 like Ollama. A name without a tag matches
   * `:latest`, as in Ollama.
   * @defaultValue ['nomic-embed-text']
   */
  models: readonly string[];
  /** Length of the default vectors. @defaultValue 64 */
  dimensions: number;
  /**
   * The deterministic vector of a text. Ollama's /api/embed returns unit vectors; so does the default.
   * @defaultValue a HashingEmbedder of `dimensions`
   */
  vectorOf?: (text: string) => number[];
  /**
   * Rewrites a 200 answer before it is sent, to simulate a misbehaving server: return an object to send
   * as JSON, or a string to send as it is (e.g. truncated JSON).
   * @defaultValue undefined: the answer is sent unchanged
   */
  rewrite?: (response: OllamaEmbedResponse, request: OllamaEmbedRequest) => unknown;
}

export const DEFAULT_FAKE_OLLAMA_OPTIONS: Readonly<FakeOllamaOptions> = Object.freeze({
  models: Object.freeze(['nomic-embed-text']),
  dimensions: 64,
});

/** A fake Ollama: the options' vectors, plus `vectorOf` so tests can compute the expected answer. */
export interface FakeOllama extends FakeServer<OllamaEmbedRequest> {
  /** The vector the fake returns for `text`. */
  vectorOf(text: string): number[];
}

/** Ollama's own wording (llm/server.go, server/routes.go) so clients see what they would in production. */
const OLLAMA_BUSY = 'server busy, please try again.  maximum pending requests exceeded';
const OLLAMA_500 = 'llama runner process has terminated: exit status 2';

const withTag = (name: string) => (name.includes(':') ? name : `${name}:latest`);

/**
 * Starts a fake Ollama on 127.0.0.1 speaking `POST /api/embed`: 404 for unknown models, 400 for a bad
 * body, 503 `server busy` in `busy` mode, 500 in `error500` mode. Close it in afterEach.
 */
export async function startFakeOllama(opts: Partial<FakeOllamaOptions> = {}): Promise<FakeOllama> {
  const o = withDefaults(DEFAULT_FAKE_OLLAMA_OPTIONS, opts);
  const hashing = new HashingEmbedder({ dimensions: o.dimensions });
  const vectorOf = o.vectorOf ?? ((text: string) => Array.from(hashing.embedOne(text)));
  const models = new Set(o.models.map(withTag));

  const server = await startLoopbackServer<OllamaEmbedRequest>((req, mode): FakeReply => {
    if (req.method !== 'POST' || req.path !== '/api/embed')
      return { status: 404, body: '404 page not found' };
    if (mode === 'busy') return { status: 503, body: { error: OLLAMA_BUSY } };
    if (mode === 'error500') return { status: 500, body: { error: OLLAMA_500 } };
    if (req.invalidJson || typeof req.body !== 'object' || req.body === null) {
      return { status: 400, body: { error: 'invalid character in request body' } };
    }
    const body = req.body as Partial<OllamaEmbedRequest>;
    if (typeof body.model !== 'string' || body.model === '') {
      return { status: 400, body: { error: 'model is required' } };
    }
    if (!models.has(withTag(body.model))) {
      return { status: 404, body: { error: `model "${body.model}" not found, try pulling it first` } };
    }
    const input = typeof body.input === 'string' ? [body.input] : body.input;
    if (!Array.isArray(input) || !input.every((t) => typeof t === 'string')) {
      return { status: 400, body: { error: 'invalid input type' } };
    }
    const response: OllamaEmbedResponse = {
      model: body.model,
      embeddings: input.map(vectorOf),
      total_duration: 14_143_917,
      load_duration: 1_019_500,
      prompt_eval_count: input.reduce((n, t) => n + t.split(/\s+/).filter(Boolean).length, 0),
    };
    return { status: 200, body: o.rewrite ? o.rewrite(response, body as OllamaEmbedRequest) : response };
  });
  return Object.assign(server, { vectorOf });
}
