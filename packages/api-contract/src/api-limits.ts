import { DEFAULT_INPUT_LIMITS } from '@cairn/core';

/**
 * The HTTP API's limits. Each is documented in the README and enforced before any work is done: a request
 * past one is refused whole with a 4xx naming the field, and nothing of it is stored.
 */
export interface ApiLimits {
  /** Request body size (bytes). @defaultValue 8 MiB: a full batch of 1,000 memories of ~8 KiB each */
  maxBodyBytes: number;
  /** Memories per write. @defaultValue 1_000 */
  maxBatch: number;
  /** Queries per batch search. @defaultValue 50 */
  maxBatchQueries: number;
  /** Namespaces per federated search. @defaultValue 16 */
  maxFederatedNamespaces: number;
  /** Hits per search (and per namespace of a federated search). @defaultValue 100 */
  maxK: number;
  /** Ids per `memories/get`. @defaultValue 200 */
  maxGetIds: number;
  /** Memories on each side of a timeline anchor. @defaultValue 50 */
  maxTimelineSide: number;
  /** Any `max_tokens`. @defaultValue 100_000 */
  maxTokens: number;
  /** Text of one memory (bytes of UTF-8): the engine's own limit. @defaultValue 65_536 */
  maxTextBytes: number;
}

/**
 * The limits a server may set for itself. The others are part of the API's contract: they are fixed in
 * the zod schemas (and so in the OpenAPI document and the client's types).
 */
export type ServerLimits = Pick<ApiLimits, 'maxBodyBytes' | 'maxBatch' | 'maxBatchQueries'>;

export const DEFAULT_API_LIMITS: Readonly<ApiLimits> = Object.freeze({
  maxBodyBytes: 8 * 1024 * 1024,
  maxBatch: 1_000,
  maxBatchQueries: 50,
  maxFederatedNamespaces: 16,
  maxK: 100,
  maxGetIds: 200,
  maxTimelineSide: 50,
  maxTokens: 100_000,
  maxTextBytes: DEFAULT_INPUT_LIMITS.maxTextBytes,
});
