// This file is the public API of @cairn/embed/testing: loopback fakes of the embedding servers, for tests
// only (they listen on 127.0.0.1). Named exports only.
export {
  DEFAULT_FAKE_OLLAMA_OPTIONS,
  type FakeOllama,
  type FakeOllamaOptions,
  type OllamaEmbedRequest,
  type OllamaEmbedResponse,
  startFakeOllama,
} from './fake-ollama.js';
export {
  DEFAULT_FAKE_OPENAI_BUSY_HEADERS,
  DEFAULT_FAKE_OPENAI_OPTIONS,
  type FakeOpenAI,
  type FakeOpenAIOptions,
  type OpenAIEmbeddingItem,
  type OpenAIEmbeddingRequest,
  type OpenAIEmbeddingResponse,
  startFakeOpenAI,
} from './fake-openai.js';
export {
  type CohereRerankRequest,
  type FakeRerankerOptions,
  overlapScore,
  startFakeReranker,
  type TeiRerankRequest,
} from './fake-reranker.js';
export type { FakeMode, FakeRequest, FakeServer, SetModeOptions } from './loopback-server.js';
