import { CairnError } from './errors.js';

/**
 * Turns texts into vectors. Implementations must be deterministic for a given `modelId`: the id names an
 * embedding space, and vectors from two different spaces are never compared.
 */
export interface Embedder {
  /** Stable id of the model and its version, e.g. `cairn-hash-v1`. Changing the model means a new id. */
  readonly modelId: string;
  /** Length of every vector this embedder returns. */
  readonly dimensions: number;
  /**
   * Cosine below which this model's vectors are unrelated noise. Vector candidates under it are not
   * fused: with rank fusion, a "nearest" neighbour at cosine 0 would otherwise score like a real match.
   * Models differ widely (hashed features sit near 0 when unrelated, learned models often near 0.3).
   * @defaultValue 0
   */
  readonly similarityFloor?: number;
  /**
   * The vector leg's RRF weight when neither the caller nor the configuration sets one. A learned model
   * finds what the words miss and takes a full weight. An embedder whose features are the query's own
   * words adds no evidence the lexical leg lacks, only a second, noisier ranking of it, so it declares a
   * backstop weight: its candidates fill in and break ties below every lexical match. @defaultValue 1
   */
  readonly fusionWeight?: number;
  /** Embeds a batch; returns one L2-normalised vector per text, in order. */
  embed(texts: readonly string[]): Promise<Float32Array[]>;
}

/**
 * An embedder whose features are words (such as the hashing embedder) can weight a query's words, e.g. by
 * their rarity in the namespace. Documents stay unweighted, so stored vectors never depend on corpus
 * statistics; only the query side adapts. Learned models do not need this and do not implement it.
 */
export interface TermWeightedEmbedder extends Embedder {
  /** The words of `text` that carry a weight (lower-cased, as the embedder tokenizes them). */
  weightableTerms(text: string): string[];
  /** Embeds one query with each word's features scaled by `weights` (missing words keep weight 1). */
  embedWeighted(text: string, weights: ReadonlyMap<string, number>): Promise<Float32Array>;
}

export function isTermWeighted(e: Embedder): e is TermWeightedEmbedder {
  return typeof (e as Partial<TermWeightedEmbedder>).embedWeighted === 'function';
}

/**
 * Refuses an option that is not an Embedder, by name: TypeScript keeps its callers right, JavaScript callers
 * pass anything. A spec string here (`'hash:256'`, which belongs in `embedderSpec`) reached SQLite as a
 * space without a model id and failed there with a constraint error that named neither.
 */
export function assertEmbedder(value: unknown, field: string): asserts value is Embedder {
  const e = value as Partial<Embedder> | null;
  const ok =
    typeof e === 'object' &&
    e !== null &&
    typeof e.embed === 'function' &&
    typeof e.modelId === 'string' &&
    e.modelId.length > 0 &&
    Number.isInteger(e.dimensions) &&
    (e.dimensions ?? 0) > 0 &&
    // Read by fusion on every search: a non-number would quietly skew every ranking rather than fail.
    (e.similarityFloor === undefined ||
      (Number.isFinite(e.similarityFloor) && Math.abs(e.similarityFloor) <= 1)) &&
    (e.fusionWeight === undefined || (Number.isFinite(e.fusionWeight) && e.fusionWeight >= 0));
  if (ok) return;
  const hint =
    typeof value === 'string'
      ? `; a spec such as ${JSON.stringify(value)} goes in embedderSpec`
      : ': an object with embed(texts), a non-empty modelId, a positive integer dimensions and, if given, a similarityFloor in [-1, 1] and a fusionWeight of 0 or more';
  throw new CairnError('INVALID_INPUT', `${field} takes an Embedder${hint}`, { field });
}

/** An embedding space: vectors are comparable only within one. */
export interface EmbeddingSpace {
  /** `${modelId}/${dimensions}`, the key under which vectors are stored. */
  id: string;
  modelId: string;
  dimensions: number;
}

export function embeddingSpaceOf(embedder: Pick<Embedder, 'modelId' | 'dimensions'>): EmbeddingSpace {
  return {
    id: `${embedder.modelId}/${embedder.dimensions}`,
    modelId: embedder.modelId,
    dimensions: embedder.dimensions,
  };
}

/** Refuses a vector whose length does not match its space, naming both. */
export function assertDimensions(vector: ArrayLike<number>, space: EmbeddingSpace, what = 'vector'): void {
  if (vector.length !== space.dimensions) {
    throw new CairnError(
      'DIMENSION_MISMATCH',
      `${what} has ${vector.length} dimensions but embedding space ${space.id} expects ${space.dimensions}`,
      { expected: space.dimensions, actual: vector.length, space: space.id },
    );
  }
}
