// This file is the public API of @cairn/embed; named exports only.

export { EMBED_TASK, type EmbedTaskRequest } from './embed-task-file.js';
export {
  createEmbedder,
  EMBEDDER_ENV,
  type EmbedderSpec,
  type EmbedderSpecOptions,
  parseEmbedderSpec,
  resolveEmbedder,
} from './embedder-spec.js';
export {
  DEFAULT_HASHING_OPTIONS,
  HASHING_EMBEDDER_VERSION,
  HashingEmbedder,
  type HashingEmbedderOptions,
} from './hashing-embedder.js';
export {
  DEFAULT_REMOTE_EMBEDDER_OPTIONS,
  PROBE_TEXT,
  parseRateLimitDuration,
  RemoteEmbedder,
  type RemoteEmbedderErrorData,
  type RemoteEmbedderOptions,
  retryAfterFromHeaders,
} from './http-embedder.js';
export {
  HttpReranker,
  type HttpRerankerInit,
  parseRerankerSpec,
  type RerankerFormat,
} from './http-reranker.js';
export {
  DEFAULT_OLLAMA_OPTIONS,
  OllamaEmbedder,
  type OllamaEmbedderInit,
  type OllamaEmbedderOptions,
  type OllamaProbeInit,
} from './ollama-embedder.js';
export {
  DEFAULT_OPENAI_COMPATIBLE_OPTIONS,
  OpenAICompatibleEmbedder,
  type OpenAICompatibleEmbedderInit,
  type OpenAICompatibleEmbedderOptions,
  type OpenAICompatibleProbeInit,
} from './openai-compatible-embedder.js';
export { threadEmbedder } from './thread-embedder.js';
