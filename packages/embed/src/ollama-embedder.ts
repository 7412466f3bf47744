import { withDefaults } from '@cairn/core';
import {
  checkModel,
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

/** Options of the Ollama embedder (`POST /api/embed`, Ollama ≥ 0.3). */
export interface OllamaEmbedderOptions extends RemoteEmbedderOptions {
  /**
   * Ollama model name, with or without a tag (`nomic-embed-text`, `nomic-embed-text:v1.5`).
   * @defaultValue none; required
   */
  model: string;
  /**
   * Length of every vector. When unknown, `OllamaEmbedder.probe` learns it from one request.
   * @defaultValue none; required by the constructor, learned by probe()
   */
  dimensions: number;
  /** Server root, without `/api`. @defaultValue 'http://127.0.0.1:11434' */
  baseUrl: string;
  /** Texts per request. Ollama embeds a batch in one forward pass per context window. @defaultValue 64 */
  maxBatch: number;
  /**
   * The modelId, which names the embedding space. Override it to keep one space across a rename, or to
   * keep two tags of a model apart.
   * @defaultValue `ollama/<model>`
   */
  id?: string;
}

export const DEFAULT_OLLAMA_OPTIONS: Readonly<
  Omit<OllamaEmbedderOptions, 'model' | 'dimensions' | 'id' | 'fetch'>
> = Object.freeze({
  ...DEFAULT_REMOTE_EMBEDDER_OPTIONS,
  baseUrl: 'http://127.0.0.1:11434',
  maxBatch: 64,
});

/** What the constructor needs: the model, its dimensions, and any option to override. */
export type OllamaEmbedderInit = Partial<OllamaEmbedderOptions> &
  Pick<OllamaEmbedderOptions, 'model' | 'dimensions'>;

/** What probe() needs: dimensions are optional (and checked when given). */
export type OllamaProbeInit = Partial<OllamaEmbedderOptions> & Pick<OllamaEmbedderOptions, 'model'>;

function ollamaSetup(init: OllamaProbeInit) {
  const o = withDefaults(DEFAULT_OLLAMA_OPTIONS, init);
  const model = checkModel(init.model, 'ollama');
  const target: HttpEmbedderTarget = {
    kind: 'ollama',
    modelId: init.id ?? `ollama/${model}`,
    baseUrl: normalizeBaseUrl(o.baseUrl, 'ollama'),
    maxBatch: o.maxBatch,
    maxConcurrency: o.maxConcurrency,
    timeoutMs: o.timeoutMs,
  };
  if (init.fetch) target.fetch = init.fetch;
  const wire: EmbeddingWireFormat = {
    path: '/api/embed',
    headers: () => ({}),
    // truncate: an over-long text would otherwise fail its whole batch with a 400 on every retry; Ollama
    // keeps the head that fits the context window, which is what the vector can represent anyway.
    body: (texts) => ({ model, input: texts, truncate: true }),
    parse(json, count) {
      const embeddings = jsonField(json, 'embeddings');
      if (!Array.isArray(embeddings)) return 'the body has no "embeddings" array';
      if (embeddings.length !== count) {
        return `expected ${count} vectors in "embeddings", got ${embeddings.length}`;
      }
      const out: Float32Array[] = [];
      for (let i = 0; i < embeddings.length; i++) {
        const v = numberArrayToVector(embeddings[i]);
        if (!v) return `embeddings[${i}] is not an array of numbers`;
        out.push(v);
      }
      return out;
    },
  };
  return { target, wire, similarityFloor: o.similarityFloor };
}

/**
 * Embeds with a local or remote Ollama server. Batches go out `maxBatch` texts at a time, at most
 * `maxConcurrency` at once; vectors come back in input order, L2-normalised. Failures are CairnErrors
 * (BACKEND_UNAVAILABLE with `data.retryable`, or DIMENSION_MISMATCH) and are never retried here.
 */
export class OllamaEmbedder extends RemoteEmbedder {
  constructor(init: OllamaEmbedderInit) {
    const { target, wire, similarityFloor } = ollamaSetup(init);
    super(target, wire, init.dimensions, similarityFloor);
  }

  /**
   * Builds an embedder after learning its dimensions from one short request; with `dimensions` given,
   * checks them instead (DIMENSION_MISMATCH when the model says otherwise).
   */
  static async probe(init: OllamaProbeInit): Promise<OllamaEmbedder> {
    const { target, wire } = ollamaSetup(init);
    const dimensions = await new HttpEmbedderTransport(target, wire).probeDimensions(init.dimensions);
    return new OllamaEmbedder({ ...init, dimensions });
  }
}
