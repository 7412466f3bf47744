import {
  assertDimensions,
  CairnError,
  type Embedder,
  type EmbeddingSpace,
  embeddingSpaceOf,
  l2Normalize,
} from '@cairn/core';

/** Options every remote (HTTP) embedder shares. */
export interface RemoteEmbedderOptions {
  /**
   * Deadline of one HTTP request in ms, from connect to the last byte of the body. One batch is one
   * request, so a call of embed() may take several of these.
   * @defaultValue 30_000
   */
  timeoutMs: number;
  /**
   * Requests one embed() call keeps in flight at once. A local model server is one GPU or a few cores,
   * and hosted APIs rate-limit per minute, so more parallelism mostly buys 503s and 429s.
   * @defaultValue 2
   */
  maxConcurrency: number;
  /**
   * Cosine under which a vector candidate is noise. Learned models are anisotropic: all their vectors
   * share a common direction, so unrelated texts typically land at 0.1–0.3 rather than near 0 (where
   * the hashing embedder puts them). 0.2 drops the clear noise on most models; raise it for models whose
   * cosines are compressed (text-embedding-ada-002 puts unrelated texts near 0.7).
   * @defaultValue 0.2
   */
  similarityFloor: number;
  /**
   * The fetch to call; a proxy-aware fetch or a test double goes here.
   * @defaultValue globalThis.fetch, looked up at each request so a stubbed global is honoured
   */
  fetch?: typeof fetch;
}

export const DEFAULT_REMOTE_EMBEDDER_OPTIONS: Readonly<RemoteEmbedderOptions> = Object.freeze({
  timeoutMs: 30_000,
  maxConcurrency: 2,
  similarityFloor: 0.2,
});

/** The text embedded to learn a model's dimensions. Any short text works; this one is easy to spot in logs. */
export const PROBE_TEXT = 'cairn dimension probe';

/** What the retryable and non-retryable failures of a remote embedder carry in `CairnError.data`. */
// A type alias, not an interface, so it is assignable to CairnErrorData's index signature.
export type RemoteEmbedderErrorData = {
  /** The embedder's modelId. */
  embedder: string;
  /** The endpoint that failed. */
  url: string;
  /** HTTP status, when the server answered. */
  status?: number;
  /** How long the server asked us to wait (Retry-After or the rate-limit reset headers), in ms. */
  retryAfterMs?: number;
  /** False when repeating the same request cannot succeed (bad key, missing model, malformed answer). */
  retryable: boolean;
};

/** How one API encodes a batch and decodes the answer; the transport around it is shared. */
export interface EmbeddingWireFormat {
  /** Appended to the base URL, e.g. `/api/embed`. */
  readonly path: string;
  /** Extra request headers (authorization). */
  headers(): Record<string, string>;
  /** The JSON request body for one batch. */
  body(texts: readonly string[]): unknown;
  /**
   * The vectors of a 2xx body, in input order, or a sentence naming what is wrong with the body. Vectors
   * are fresh arrays the caller may normalise in place.
   */
  parse(json: unknown, count: number): Float32Array[] | string;
}

/** Where and how a transport sends its batches. */
export interface HttpEmbedderTarget {
  /** `ollama`, `openai`: the first word of every error message. */
  kind: string;
  modelId: string;
  /** Without a trailing slash. */
  baseUrl: string;
  maxBatch: number;
  maxConcurrency: number;
  timeoutMs: number;
  fetch?: typeof fetch;
}

/** Refuses a config value that would make every request fail, naming the field. */
export function checkPositiveInteger(value: number, field: string, kind: string): void {
  if (!Number.isInteger(value) || value < 1) {
    throw new CairnError(
      'INVALID_INPUT',
      `${kind} embedder: ${field} must be an integer >= 1, got ${value}`,
      {
        field,
      },
    );
  }
}

/** Validates a base URL and drops trailing slashes, so `${baseUrl}${path}` never has `//`. */
export function normalizeBaseUrl(baseUrl: string, kind: string): string {
  let url: URL;
  try {
    url = new URL(baseUrl);
  } catch {
    throw new CairnError(
      'INVALID_INPUT',
      `${kind} embedder: baseUrl is not a URL: ${JSON.stringify(baseUrl)}`,
      {
        field: 'baseUrl',
      },
    );
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new CairnError('INVALID_INPUT', `${kind} embedder: baseUrl must be http(s), got ${baseUrl}`, {
      field: 'baseUrl',
    });
  }
  return baseUrl.replace(/\/+$/, '');
}

/**
 * Posts batches to one embedding endpoint and turns every failure into a CairnError with code
 * BACKEND_UNAVAILABLE (or DIMENSION_MISMATCH). It never retries: the queue above owns retries and
 * backoff, and it needs `retryable` and `retryAfterMs` to do them well.
 */
export class HttpEmbedderTransport {
  readonly endpoint: string;
  private readonly label: string;

  constructor(
    private readonly target: HttpEmbedderTarget,
    private readonly wire: EmbeddingWireFormat,
  ) {
    checkPositiveInteger(target.maxBatch, 'maxBatch', target.kind);
    checkPositiveInteger(target.maxConcurrency, 'maxConcurrency', target.kind);
    if (!(target.timeoutMs > 0)) {
      throw new CairnError('INVALID_INPUT', `${target.kind} embedder: timeoutMs must be > 0`, {
        field: 'timeoutMs',
      });
    }
    this.endpoint = `${target.baseUrl}${wire.path}`;
    this.label = `${target.kind} embedder ${target.modelId} at ${target.baseUrl}`;
  }

  /**
   * Embeds `texts` in batches of at most `maxBatch`, `maxConcurrency` requests at a time, in input order.
   * With `space`, every vector's length is checked and each vector is L2-normalised; without it (probing)
   * vectors come back as the server sent them.
   */
  async embed(texts: readonly string[], space?: EmbeddingSpace): Promise<Float32Array[]> {
    const { maxBatch, maxConcurrency } = this.target;
    const batches: (readonly string[])[] = [];
    for (let i = 0; i < texts.length; i += maxBatch) batches.push(texts.slice(i, i + maxBatch));
    const results: Float32Array[][] = new Array(batches.length);
    // The first failure stops the others: their answers would be thrown away with the call.
    const stop = new AbortController();
    let next = 0;
    const worker = async () => {
      while (next < batches.length && !stop.signal.aborted) {
        const b = next++;
        const start = b * maxBatch;
        try {
          const vectors = await this.post(batches[b]!, stop.signal);
          if (space) {
            vectors.forEach((v, j) => {
              assertDimensions(v, space, `${this.label}: vector ${start + j}`);
              l2Normalize(v);
            });
          }
          results[b] = vectors;
        } catch (err) {
          stop.abort();
          throw err;
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(maxConcurrency, batches.length) }, worker));
    return results.flat();
  }

  /**
   * Learns the model's vector length by embedding PROBE_TEXT. With `expected`, refuses another length
   * (DIMENSION_MISMATCH), so a misconfigured model fails at start-up instead of at the first batch.
   */
  async probeDimensions(expected?: number): Promise<number> {
    const [v] = await this.embed([PROBE_TEXT]);
    if (!v || v.length === 0) throw this.malformed('the probe returned an empty vector');
    if (expected !== undefined) {
      const space = embeddingSpaceOf({ modelId: this.target.modelId, dimensions: expected });
      assertDimensions(v, space, `${this.label}: probe vector`);
    }
    return v.length;
  }

  private async post(texts: readonly string[], stop: AbortSignal): Promise<Float32Array[]> {
    const signal = AbortSignal.any([AbortSignal.timeout(this.target.timeoutMs), stop]);
    const doFetch = this.target.fetch ?? globalThis.fetch;
    let status: number;
    let headers: Headers;
    let text: string;
    try {
      const res = await doFetch(this.endpoint, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json', ...this.wire.headers() },
        body: JSON.stringify(this.wire.body(texts)),
        signal,
      });
      status = res.status;
      headers = res.headers;
      // The timeout signal also covers the body: a server that stalls mid-body is cut off too.
      text = await res.text();
    } catch (err) {
      throw this.unreachable(err);
    }
    if (status < 200 || status > 299) throw this.httpError(status, headers, text);
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      throw this.malformed(`the body is not JSON: ${snippet(text)}`, status);
    }
    const parsed = this.wire.parse(json, texts.length);
    if (typeof parsed === 'string') throw this.malformed(parsed, status);
    return parsed;
  }

  private error(message: string, data: Omit<RemoteEmbedderErrorData, 'embedder' | 'url'>, cause?: unknown) {
    const full: RemoteEmbedderErrorData = { embedder: this.target.modelId, url: this.endpoint, ...data };
    return new CairnError('BACKEND_UNAVAILABLE', message, full, cause === undefined ? undefined : { cause });
  }

  private unreachable(err: unknown): CairnError {
    const e = err as { name?: string };
    if (e?.name === 'TimeoutError') {
      return this.error(
        `${this.label} did not answer within ${this.target.timeoutMs} ms`,
        { retryable: true },
        err,
      );
    }
    return this.error(`${this.label} is unreachable: ${rootCause(err)}`, { retryable: true }, err);
  }

  private httpError(status: number, headers: Headers, body: string): CairnError {
    // 408 and 429 are the server asking for patience; 5xx may pass (overload, a model still loading).
    // Other 4xx (bad key, missing model, bad request) fail the same way every time.
    const retryable = status === 408 || status === 429 || status >= 500;
    const retryAfterMs = retryable ? retryAfterFromHeaders(headers) : undefined;
    const wait = retryAfterMs === undefined ? '' : `; retry after ${retryAfterMs} ms`;
    const data: Omit<RemoteEmbedderErrorData, 'embedder' | 'url'> = { status, retryable };
    if (retryAfterMs !== undefined) data.retryAfterMs = retryAfterMs;
    return this.error(
      `${this.label} ${statusPhrase(status)} (HTTP ${status}): ${JSON.stringify(serverErrorMessage(body))}${wait}`,
      data,
    );
  }

  private malformed(what: string, status?: number): CairnError {
    const data: Omit<RemoteEmbedderErrorData, 'embedder' | 'url'> = { retryable: false };
    if (status !== undefined) data.status = status;
    return this.error(`${this.label} sent an unexpected response from POST ${this.endpoint}: ${what}`, data);
  }
}

function statusPhrase(status: number): string {
  switch (status) {
    case 400:
      return 'rejected the request';
    case 401:
      return 'rejected the API key';
    case 403:
      return 'refused access';
    case 404:
      return 'does not know the model or the endpoint';
    case 429:
      return 'is rate-limiting requests';
    case 503:
      return 'is overloaded';
    default:
      return status >= 500 ? 'failed' : 'rejected the request';
  }
}

/** undici reports "fetch failed"; the useful part ("connect ECONNREFUSED 127.0.0.1:11434") is a cause. */
function rootCause(err: unknown): string {
  let e: unknown = err;
  for (let depth = 0; depth < 5; depth++) {
    const cause = (e as { cause?: unknown } | null)?.cause;
    if (cause === undefined || cause === null) break;
    e = cause;
  }
  if (e instanceof Error) return e.message || e.name;
  return String(e);
}

/** At most 200 characters of a body, for error messages that must stay one line. */
function snippet(text: string): string {
  const t = text.replace(/\s+/g, ' ').trim();
  if (t === '') return '(empty body)';
  return JSON.stringify(t.length > 200 ? `${t.slice(0, 200)}…` : t);
}

/**
 * The server's own words from an error body: Ollama `{"error": "..."}`, OpenAI `{"error": {"message"}}`,
 * and the `{"message"}` / `{"detail"}` forms of other OpenAI-compatible servers; else the raw text.
 */
export function serverErrorMessage(body: string): string {
  try {
    const json = JSON.parse(body) as Record<string, unknown> | null;
    const error = json?.error;
    if (typeof error === 'string') return error;
    if (error && typeof error === 'object') {
      const message = (error as Record<string, unknown>).message;
      if (typeof message === 'string') return message;
    }
    if (typeof json?.message === 'string') return json.message;
    if (typeof json?.detail === 'string') return json.detail;
  } catch {
    // not JSON: a proxy's HTML page or a plain-text 404; fall through to the text itself.
  }
  const t = body.replace(/\s+/g, ' ').trim();
  if (t === '') return '(empty body)';
  return t.length > 200 ? `${t.slice(0, 200)}…` : t;
}

/**
 * How long to wait before retrying, in ms, from the headers of a 429 or 503:
 * `retry-after-ms`, then `retry-after` (seconds or an HTTP date), which name the wait exactly; else
 * OpenAI's `x-ratelimit-reset-requests` / `-tokens` (Go durations such as `6m0s`), which say when each
 * budget is full again. Of those, only the budgets whose `x-ratelimit-remaining-*` is 0 are what we wait
 * for; when none is marked exhausted, the longest reset is the safe bet.
 */
export function retryAfterFromHeaders(headers: Headers, now = Date.now()): number | undefined {
  const ms = headers.get('retry-after-ms');
  if (ms !== null && /^\d+(\.\d+)?$/.test(ms.trim())) return Math.ceil(Number(ms));
  const ra = headers.get('retry-after');
  if (ra !== null) {
    const t = ra.trim();
    if (/^\d+(\.\d+)?$/.test(t)) return Math.ceil(Number(t) * 1000);
    const date = Date.parse(t);
    if (Number.isFinite(date)) return Math.max(0, date - now);
  }
  const resets: { ms: number; exhausted: boolean }[] = [];
  for (const budget of ['requests', 'tokens']) {
    const reset = headers.get(`x-ratelimit-reset-${budget}`);
    const parsed = reset === null ? undefined : parseRateLimitDuration(reset);
    if (parsed === undefined) continue;
    resets.push({ ms: parsed, exhausted: headers.get(`x-ratelimit-remaining-${budget}`)?.trim() === '0' });
  }
  if (resets.length === 0) return undefined;
  const relevant = resets.some((r) => r.exhausted) ? resets.filter((r) => r.exhausted) : resets;
  return Math.max(...relevant.map((r) => r.ms));
}

const GO_DURATION_UNIT_MS: Readonly<Record<string, number>> = Object.freeze({
  h: 3_600_000,
  m: 60_000,
  s: 1_000,
  ms: 1,
  us: 1e-3,
  µs: 1e-3,
  ns: 1e-6,
});

/**
 * Parses the Go-style durations of OpenAI's rate-limit headers (`1s`, `6m0s`, `20ms`, `1h2m3.5s`) into
 * whole ms, rounded up so a retry never comes early. Returns undefined for anything else.
 */
export function parseRateLimitDuration(value: string): number | undefined {
  const s = value.trim();
  if (!/^(\d+(\.\d+)?(h|ms|m|s|us|µs|ns))+$/.test(s)) return undefined;
  let total = 0;
  for (const [, n, unit] of s.matchAll(/(\d+(?:\.\d+)?)(h|ms|m|s|us|µs|ns)/g)) {
    total += Number(n) * (GO_DURATION_UNIT_MS[unit!] ?? 0);
  }
  return Math.ceil(total);
}

/** A JSON array of finite numbers as a Float32Array, or undefined when it is anything else. */
export function numberArrayToVector(value: unknown): Float32Array | undefined {
  if (!Array.isArray(value)) return undefined;
  const v = new Float32Array(value.length);
  for (let i = 0; i < value.length; i++) {
    const x = value[i];
    if (typeof x !== 'number' || !Number.isFinite(x)) return undefined;
    v[i] = x;
  }
  return v;
}

/** The value of `name` when `json` is a JSON object, else undefined. */
export function jsonField(json: unknown, name: string): unknown {
  if (typeof json !== 'object' || json === null || Array.isArray(json)) return undefined;
  return (json as Record<string, unknown>)[name];
}

/**
 * The Embedder half both adapters share: identity, validation and embed(). Subclasses only describe
 * their wire format and defaults.
 */
export abstract class RemoteEmbedder implements Embedder {
  readonly modelId: string;
  readonly dimensions: number;
  readonly similarityFloor: number;
  /** Server root the requests go to, without a trailing slash. */
  readonly baseUrl: string;
  private readonly transport: HttpEmbedderTransport;
  private readonly space: EmbeddingSpace;

  protected constructor(
    target: HttpEmbedderTarget,
    wire: EmbeddingWireFormat,
    dimensions: number,
    similarityFloor: number,
  ) {
    checkPositiveInteger(dimensions, 'dimensions', target.kind);
    if (!(similarityFloor >= -1 && similarityFloor <= 1)) {
      throw new CairnError(
        'INVALID_INPUT',
        `${target.kind} embedder: similarityFloor must be a cosine in [-1, 1], got ${similarityFloor}`,
        { field: 'similarityFloor' },
      );
    }
    this.transport = new HttpEmbedderTransport(target, wire);
    this.modelId = target.modelId;
    this.dimensions = dimensions;
    this.similarityFloor = similarityFloor;
    this.baseUrl = target.baseUrl;
    this.space = embeddingSpaceOf(this);
  }

  embed(texts: readonly string[]): Promise<Float32Array[]> {
    return this.transport.embed(texts, this.space);
  }
}

/** Refuses a missing or blank model name before any request is made. */
export function checkModel(model: unknown, kind: string): string {
  if (typeof model !== 'string' || model.trim() === '' || /\s/.test(model)) {
    throw new CairnError(
      'INVALID_INPUT',
      `${kind} embedder: model must be a non-empty name, got ${JSON.stringify(model)}`,
      {
        field: 'model',
      },
    );
  }
  return model;
}
