import { CairnError, withDefaults } from '@cairn/core';
import {
  checkModel,
  checkPositiveInteger,
  DEFAULT_REMOTE_EMBEDDER_OPTIONS,
  type EmbeddingWireFormat,
  type HttpEmbedderTarget,
  HttpEmbedderTransport,
  jsonField,
  normalizeBaseUrl,
  numberArrayToVector,
  RemoteEmbedder,
  type RemoteEmbedderOptions,
} from './http-embedder.js';

/**
 * Options of an embedder for any OpenAI-compatible `POST /embeddings` (OpenAI, Azure-style gateways,
 * vLLM, LM Studio, llama.cpp server, LiteLLM…).
 */
export interface OpenAICompatibleEmbedderOptions extends RemoteEmbedderOptions {
  /** Model name as the server knows it, e.g. `text-embedding-3-small`. @defaultValue none; required */
  model: string;
  /**
   * Length of every vector. When unknown, `OpenAICompatibleEmbedder.probe` learns it from one request.
   * @defaultValue `requestDimensions` when that is set; otherwise required by the constructor
   */
  dimensions: number;
  /** API root including the version segment; `/embeddings` is appended. @defaultValue 'https://api.openai.com/v1' */
  baseUrl: string;
  /** Sent as `Authorization: Bearer <apiKey>`. @defaultValue undefined: no header (local servers need none) */
  apiKey?: string;
  /**
   * Asks the server to shorten vectors to this length (the request's `dimensions` field; only
   * text-embedding-3 and other Matryoshka-trained models accept it). Not sent when unset.
   * @defaultValue undefined: the model's full length
   */
  requestDimensions?: number;
  /**
   * Texts per request. OpenAI accepts up to 2,048 inputs (and 300k tokens) per request; 256 keeps one
   * failed request cheap to retry and stays under the token cap for memory-sized texts.
   * @defaultValue 256
   */
  maxBatch: number;
  /** The modelId, which names the embedding space. @defaultValue `openai/<model>` */
  id?: string;
}

export const DEFAULT_OPENAI_COMPATIBLE_OPTIONS: Readonly<
  Omit<
    OpenAICompatibleEmbedderOptions,
    'model' | 'dimensions' | 'id' | 'fetch' | 'apiKey' | 'requestDimensions'
  >
> = Object.freeze({
  ...DEFAULT_REMOTE_EMBEDDER_OPTIONS,
  baseUrl: 'https://api.openai.com/v1',
  maxBatch: 256,
});

/** What probe() needs: the model, and any option to override. */
export type OpenAICompatibleProbeInit = Partial<OpenAICompatibleEmbedderOptions> &
  Pick<OpenAICompatibleEmbedderOptions, 'model'>;

/** What the constructor needs: the model, and the dimensions directly or through `requestDimensions`. */
export type OpenAICompatibleEmbedderInit = OpenAICompatibleProbeInit &
  ({ dimensions: number } | { requestDimensions: number });

/** Decodes `encoding_format: "base64"`: the raw bytes of little-endian float32s. */
function base64ToVector(s: string): Float32Array | undefined {
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(s)) return undefined;
  const bytes = Buffer.from(s, 'base64');
  if (bytes.length % 4 !== 0) return undefined;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const v = new Float32Array(bytes.length / 4);
  for (let i = 0; i < v.length; i++) {
    v[i] = view.getFloat32(i * 4, true);
    if (!Number.isFinite(v[i])) return undefined;
  }
  return v;
}

function openAISetup(init: OpenAICompatibleProbeInit) {
  const o = withDefaults(DEFAULT_OPENAI_COMPATIBLE_OPTIONS, init);
  const model = checkModel(init.model, 'openai');
  const { apiKey, requestDimensions } = init;
  if (requestDimensions !== undefined) checkPositiveInteger(requestDimensions, 'requestDimensions', 'openai');
  const target: HttpEmbedderTarget = {
    kind: 'openai',
    modelId: init.id ?? `openai/${model}`,
    baseUrl: normalizeBaseUrl(o.baseUrl, 'openai'),
    maxBatch: o.maxBatch,
    maxConcurrency: o.maxConcurrency,
    timeoutMs: o.timeoutMs,
  };
  if (init.fetch) target.fetch = init.fetch;
  const wire: EmbeddingWireFormat = {
    path: '/embeddings',
    headers: (): Record<string, string> => (apiKey ? { authorization: `Bearer ${apiKey}` } : {}),
    body: (texts) => ({
      model,
      input: texts,
      encoding_format: 'float',
      ...(requestDimensions === undefined ? {} : { dimensions: requestDimensions }),
    }),
    parse(json, count) {
      const data = jsonField(json, 'data');
      if (!Array.isArray(data)) return 'the body has no "data" array';
      if (data.length !== count) return `expected ${count} embeddings in "data", got ${data.length}`;
      // The API documents `index` as the input position; servers that parallelise may send any order.
      const out: (Float32Array | undefined)[] = new Array(count);
      for (let pos = 0; pos < data.length; pos++) {
        const index = jsonField(data[pos], 'index');
        if (typeof index !== 'number' || !Number.isInteger(index) || index < 0 || index >= count) {
          return `data[${pos}].index is ${JSON.stringify(index) ?? 'missing'}, expected an integer in 0..${count - 1}`;
        }
        if (out[index]) return `data holds index ${index} twice`;
        const embedding = jsonField(data[pos], 'embedding');
        const v = typeof embedding === 'string' ? base64ToVector(embedding) : numberArrayToVector(embedding);
        if (!v) return `data[${pos}].embedding is neither an array of numbers nor base64 float32`;
        out[index] = v;
      }
      return out as Float32Array[];
    },
  };
  return { target, wire, similarityFloor: o.similarityFloor };
}

/**
 * Embeds through an OpenAI-compatible `/embeddings` endpoint. Batches go out `maxBatch` texts at a time,
 * at most `maxConcurrency` at once; vectors are placed by their `index` and L2-normalised. A 429's
 * `retry-after` or `x-ratelimit-reset-*` headers become `data.retryAfterMs` of the BACKEND_UNAVAILABLE
 * error; nothing is retried here.
 */
export class OpenAICompatibleEmbedder extends RemoteEmbedder {
  /** The `dimensions` sent with each request, if any. */
  readonly requestDimensions: number | undefined;

  constructor(init: OpenAICompatibleEmbedderInit) {
    const { target, wire, similarityFloor } = openAISetup(init);
    const requested = init.requestDimensions;
    const dimensions = init.dimensions ?? requested;
    if (requested !== undefined && dimensions !== requested) {
      throw new CairnError(
        'DIMENSION_MISMATCH',
        `openai embedder ${target.modelId}: requestDimensions ${requested} differs from dimensions ${dimensions}`,
        { expected: dimensions, actual: requested, field: 'requestDimensions' },
      );
    }
    super(target, wire, dimensions as number, similarityFloor);
    this.requestDimensions = requested;
  }

  /**
   * Builds an embedder after learning its dimensions from one short request; with `dimensions` (or
   * `requestDimensions`) given, checks them instead (DIMENSION_MISMATCH when the server says otherwise).
   */
  static async probe(init: OpenAICompatibleProbeInit): Promise<OpenAICompatibleEmbedder> {
    const { target, wire } = openAISetup(init);
    const expected = init.dimensions ?? init.requestDimensions;
    const dimensions = await new HttpEmbedderTransport(target, wire).probeDimensions(expected);
    return new OpenAICompatibleEmbedder({ ...init, dimensions });
  }
}
