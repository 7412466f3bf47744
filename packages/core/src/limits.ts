/**
 * Input limits. Each is a hard bound: input past it is refused with INVALID_INPUT naming the field,
 * never truncated silently.
 */
export interface InputLimits {
  /** @defaultValue 65_536 (bytes of UTF-8; a long session summary fits, a pasted log file does not) */
  maxTextBytes: number;
  /** @defaultValue 512 (characters) */
  maxTitleChars: number;
  /** @defaultValue 256 (characters, for id, session and agent) */
  maxIdChars: number;
  /** @defaultValue 128 (characters) */
  maxNamespaceChars: number;
  /** @defaultValue 64 (tags per memory) */
  maxTags: number;
  /** @defaultValue 16_384 (bytes of the JSON-serialised meta object) */
  maxMetaBytes: number;
  /** @defaultValue 4_096 (characters of a search query; longer queries are refused, not cut) */
  maxQueryChars: number;
  /** @defaultValue 1_000 (hits a single search may ask for) */
  maxK: number;
  /** @defaultValue 1_000 (candidates per leg) */
  maxCandidatePool: number;
  /** @defaultValue 10 (session neighbours attached before and after each hit) */
  maxNeighbors: number;
  /** @defaultValue 100_000 (entries a listing, a blank query with filters, may skip) */
  maxListingOffset: number;
}

export const DEFAULT_INPUT_LIMITS: Readonly<InputLimits> = Object.freeze({
  maxTextBytes: 65_536,
  maxTitleChars: 512,
  maxIdChars: 256,
  maxNamespaceChars: 128,
  maxTags: 64,
  maxMetaBytes: 16_384,
  maxQueryChars: 4_096,
  maxK: 1_000,
  maxCandidatePool: 1_000,
  maxNeighbors: 10,
  maxListingOffset: 100_000,
});
