// This file is the public API of @cairn/embed; named exports only.
export {
  DEFAULT_HASHING_OPTIONS,
  HASHING_EMBEDDER_VERSION,
  HashingEmbedder,
  type HashingEmbedderOptions,
} from './hashing-embedder.js';
