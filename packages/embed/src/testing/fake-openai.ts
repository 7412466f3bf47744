import { withDefaults } from '@cairn/core';
import { HashingEmbedder } from '../hashing-embedder.js';
import { type FakeReply, type FakeServer, startLoopbackServer } from './loopback-server.js';

/** The body of `POST /v1/embeddings`. */
export interface OpenAIEmbeddingRequest {
  model: string;
  input: string | string[];
  encoding_format?: 'float' | 'base64';
  dimensions?: number;
  user?: string;
}

/** One entry of `data`; `embedding` is a base64 string when `encoding_format` is `base64`. */
export interface OpenAIEmbeddingItem {
  object: 'embedding';
  index: number;
  embedding: number[] | string;
}

/** The 200 answer of `POST /v1/embeddings`. */
export interface OpenAIEmbeddingResponse {
  object: 'list';
  data: OpenAIEmbeddingItem[];
  model: string;
  usage: { prompt_tokens: number; total_tokens: number };
}

/** Options of startFakeOpenAI. */
export interface FakeOpenAIOptions {
  /** Models that exist; any other answers 404 `model_not_found`. @defaultValue ['text-embedding-3-small'] */
  models: readonly string[];
  /** Full length of the default vectors; a request's `dimensions` may shorten them. @defaultValue 64 */
  dimensions: number;
  /**
   * The deterministic full-length vector of a text.
   * @defaultValue a HashingEmbedder of `dimensions`
   */
  vectorOf?: (text: string) => number[];
  /** When set, requests must carry `Authorization: Bearer <apiKey>`, else 401. @defaultValue undefined: no check */
  apiKey?: string;
  /** Inputs one request may carry; more answers 400 (OpenAI: 2,048). @defaultValue 2048 */
  maxInputs: number;
  /**
   * Headers of the 429 in `busy` mode (setMode may replace them). The defaults are OpenAI's: the request
   * budget is exhausted and refills in 20 ms, and no `retry-after` is sent.
   * @defaultValue DEFAULT_FAKE_OPENAI_BUSY_HEADERS
   */
  busyHeaders: Readonly<Record<string, string>>;
  /**
   * Rewrites a 200 answer before it is sent: return an object to send as JSON, or a string to send as
   * it is.
   * @defaultValue undefined: the answer is sent unchanged
   */
  rewrite?: (response: OpenAIEmbeddingResponse, request: OpenAIEmbeddingRequest) => unknown;
}

export const DEFAULT_FAKE_OPENAI_BUSY_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  'x-ratelimit-limit-requests': '3000',
  'x-ratelimit-remaining-requests': '0',
  'x-ratelimit-reset-requests': '20ms',
  'x-ratelimit-limit-tokens': '1000000',
  'x-ratelimit-remaining-tokens': '999990',
  'x-ratelimit-reset-tokens': '0s',
});

export const DEFAULT_FAKE_OPENAI_OPTIONS: Readonly<FakeOpenAIOptions> = Object.freeze({
  models: Object.freeze(['text-embedding-3-small']),
  dimensions: 64,
  maxInputs: 2048,
  busyHeaders: DEFAULT_FAKE_OPENAI_BUSY_HEADERS,
});

/** A fake OpenAI, plus `vectorOf` so tests can compute the expected answer. */
export interface FakeOpenAI extends FakeServer<OpenAIEmbeddingRequest> {
  /** The vector the fake returns for `text`, shortened and renormalised to `dimensions` when given. */
  vectorOf(text: string, dimensions?: number): number[];
}

function apiError(
  status: number,
  message: string,
  type: string,
  code: string | null,
  param: string | null = null,
) {
  return { status, body: { error: { message, type, param, code } } };
}

/** Matryoshka shortening as the API does it: keep the first `d` components, then renormalise. */
function shorten(v: number[], d: number): number[] {
  const head = v.slice(0, d);
  const norm = Math.hypot(...head);
  return norm === 0 ? head : head.map((x) => Math.fround(x / norm));
}

function toBase64(v: readonly number[]): string {
  const bytes = Buffer.alloc(v.length * 4);
  v.forEach((x, i) => {
    bytes.writeFloatLE(x, i * 4);
  });
  return bytes.toString('base64');
}

/**
 * Starts a fake OpenAI embeddings API on 127.0.0.1 (base URL ends in `/v1`): 401 for a wrong key, 404 for
 * unknown models, 400 for too many inputs or bad `dimensions`, 429 with rate-limit headers in `busy`
 * mode, 500 in `error500` mode; honours `dimensions` and `encoding_format: base64`. Close it in afterEach.
 */
export async function startFakeOpenAI(opts: Partial<FakeOpenAIOptions> = {}): Promise<FakeOpenAI> {
  const o = withDefaults(DEFAULT_FAKE_OPENAI_OPTIONS, opts);
  const hashing = new HashingEmbedder({ dimensions: o.dimensions });
  const fullVectorOf = o.vectorOf ?? ((text: string) => Array.from(hashing.embedOne(text)));
  const vectorOf = (text: string, dimensions?: number) =>
    dimensions === undefined ? fullVectorOf(text) : shorten(fullVectorOf(text), dimensions);
  const models = new Set(o.models);

  const server = await startLoopbackServer<OpenAIEmbeddingRequest>((req, mode, busyHeaders): FakeReply => {
    if (req.method !== 'POST' || req.path !== '/v1/embeddings') {
      return apiError(404, `Invalid URL (${req.method} ${req.path})`, 'invalid_request_error', null);
    }
    if (o.apiKey !== undefined && req.headers.authorization !== `Bearer ${o.apiKey}`) {
      const given = req.headers.authorization?.replace(/^Bearer\s+/i, '') ?? '';
      // OpenAI shows the key's first and last four characters, never the whole key.
      const shown = given.length > 8 ? `${given.slice(0, 4)}****${given.slice(-4)}` : given;
      return given
        ? apiError(
            401,
            `Incorrect API key provided: ${shown}. You can find your API key at https://platform.openai.com/account/api-keys.`,
            'invalid_request_error',
            'invalid_api_key',
          )
        : apiError(
            401,
            "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).",
            'invalid_request_error',
            null,
          );
    }
    if (mode === 'busy') {
      const reply = apiError(
        429,
        'Rate limit reached for text-embedding-3-small in organization org-fake on requests per min (RPM): Limit 3000, Used 3000, Requested 1. Please try again in 20ms. Visit https://platform.openai.com/account/rate-limits to learn more.',
        'requests',
        'rate_limit_exceeded',
      );
      return { ...reply, headers: { ...(busyHeaders ?? o.busyHeaders) } };
    }
    if (mode === 'error500') {
      return apiError(
        500,
        'The server had an error while processing your request. Sorry about that!',
        'server_error',
        null,
      );
    }
    if (req.invalidJson || typeof req.body !== 'object' || req.body === null) {
      return apiError(
        400,
        "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly.)",
        'invalid_request_error',
        null,
      );
    }
    const body = req.body as Partial<OpenAIEmbeddingRequest>;
    if (typeof body.model !== 'string' || !models.has(body.model)) {
      return apiError(
        404,
        `The model \`${String(body.model)}\` does not exist or you do not have access to it.`,
        'invalid_request_error',
        'model_not_found',
      );
    }
    const input = typeof body.input === 'string' ? [body.input] : body.input;
    if (
      !Array.isArray(input) ||
      input.length === 0 ||
      !input.every((t) => typeof t === 'string' && t !== '')
    ) {
      return apiError(400, "'$.input' is invalid.", 'invalid_request_error', 'input');
    }
    if (input.length > o.maxInputs) {
      return apiError(
        400,
        `Too many inputs. The max number of inputs is ${o.maxInputs}. We recommend you batch your inputs.`,
        'invalid_request_error',
        null,
        'input',
      );
    }
    const d = body.dimensions;
    if (d !== undefined && (!Number.isInteger(d) || d < 1 || d > o.dimensions)) {
      return apiError(
        400,
        `Invalid value for 'dimensions' = ${d}. Must be between 1 and ${o.dimensions}.`,
        'invalid_request_error',
        null,
        'dimensions',
      );
    }
    const base64 = body.encoding_format === 'base64';
    const tokens = input.reduce((n, t) => n + t.split(/\s+/).filter(Boolean).length, 0);
    const response: OpenAIEmbeddingResponse = {
      object: 'list',
      data: input.map((text, index) => {
        const v = vectorOf(text, d);
        return { object: 'embedding', index, embedding: base64 ? toBase64(v) : v };
      }),
      model: body.model,
      usage: { prompt_tokens: tokens, total_tokens: tokens },
    };
    return { status: 200, body: o.rewrite ? o.rewrite(response, body as OpenAIEmbeddingRequest) : response };
  }, '/v1');
  return Object.assign(server, { vectorOf });
}
