import {
  identifierParts,
  isStopWord,
  l2Normalize,
  rawTokens,
  type TermWeightedEmbedder,
  withDefaults,
} from '@cairn/core';

/** Options of the feature-hashing embedder. Changing any of them changes the model id. */
export interface HashingEmbedderOptions {
  /**
   * Vector length; fewer dimensions mean more hash collisions. On the LoCoMo dev conversations the vector
   * leg alone gets recall@10 0.535 at 256, 0.571 at 384 and 0.613 at 768, but the fused default is the
   * same at all three (0.757-0.758, every category within 0.006), because the leg is a backstop (see
   * `fusionWeight`). 384 is the smallest that keeps every category at or above 768's: half the disk,
   * memory and graph-build time of 768 (bench/RESULTS.md, "Fewer dimensions"). @defaultValue 384
   */
  dimensions: number;
  /** Character n-gram sizes taken from each word (with `<` `>` boundary marks). @defaultValue [3, 4] */
  ngrams: readonly number[];
  /** Weight of a whole-word feature. @defaultValue 1 */
  wordWeight: number;
  /** Weight of each character n-gram; n-grams catch inflections and typos. @defaultValue 0.5 */
  ngramWeight: number;
  /** Weight of a stop word, which says little about topic. @defaultValue 0.1 */
  stopWordWeight: number;
}

export const DEFAULT_HASHING_OPTIONS: Readonly<HashingEmbedderOptions> = Object.freeze({
  dimensions: 384,
  ngrams: Object.freeze([3, 4]),
  wordWeight: 1,
  ngramWeight: 0.5,
  stopWordWeight: 0.1,
});

/** Bump when the feature extraction changes: stored vectors from another version are not comparable. */
export const HASHING_EMBEDDER_VERSION = 1;

/** 32-bit FNV-1a over UTF-16 code units, finished with a murmur3 avalanche so low bits mix well. */
function hash32(s: string, seed: number): number {
  let h = 0x811c9dc5 ^ seed;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/**
 * A deterministic embedder that needs no model download: word unigrams (plus the parts of compound
 * identifiers) and character n-grams, hashed into a fixed number of buckets with a hashed sign
 * (Weinberger et al. 2009, "feature hashing"), log-scaled term frequency, then L2-normalised.
 * It is a lexical-semantic hybrid, not a learned model: it finds paraphrases only through shared word
 * pieces. Real models plug in through the same Embedder interface.
 */
export class HashingEmbedder implements TermWeightedEmbedder {
  readonly modelId: string;
  readonly dimensions: number;
  /**
   * Texts with no word in common share only hash collisions, stop words and stray n-grams: on LoCoMo
   * turns their median cosine is 0.03 at 384 dimensions (as at 768), so 0.08 drops most of them and
   * keeps shared-word matches.
   */
  readonly similarityFloor = 0.08;
  /**
   * Its features are the words the lexical leg already ranks. On the LoCoMo dev conversations, fusing it at
   * weight 1 lost to the lexical leg alone (recall@10 0.677 against 0.758, bench/RESULTS.md), and every
   * weight down to 0.1 lost too. At 0.02, which every fold of a leave-one-conversation-out picked, it
   * breaks the lexical leg's near-ties and fills in below its matches: at or above the lexical leg in
   * every category, and it still answers queries that leg cannot.
   */
  readonly fusionWeight = 0.02;
  private readonly opts: HashingEmbedderOptions;

  constructor(opts: Partial<HashingEmbedderOptions> = {}) {
    this.opts = withDefaults(DEFAULT_HASHING_OPTIONS, opts);
    if (!Number.isInteger(this.opts.dimensions) || this.opts.dimensions < 8) {
      throw new RangeError(
        `HashingEmbedder: dimensions must be an integer >= 8, got ${this.opts.dimensions}`,
      );
    }
    this.dimensions = this.opts.dimensions;
    const o = this.opts;
    const isDefault =
      o.ngrams.join(',') === DEFAULT_HASHING_OPTIONS.ngrams.join(',') &&
      o.wordWeight === DEFAULT_HASHING_OPTIONS.wordWeight &&
      o.ngramWeight === DEFAULT_HASHING_OPTIONS.ngramWeight &&
      o.stopWordWeight === DEFAULT_HASHING_OPTIONS.stopWordWeight;
    const variant = isDefault
      ? ''
      : `-n${o.ngrams.join('.')}-w${o.wordWeight}-g${o.ngramWeight}-s${o.stopWordWeight}`;
    this.modelId = `cairn-hash-v${HASHING_EMBEDDER_VERSION}${variant}`;
  }

  async embed(texts: readonly string[]): Promise<Float32Array[]> {
    return texts.map((t) => this.embedOne(t));
  }

  weightableTerms(text: string): string[] {
    return [...new Set(rawTokens(text).map((t) => t.toLowerCase()))].filter((t) => !isStopWord(t));
  }

  async embedWeighted(text: string, weights: ReadonlyMap<string, number>): Promise<Float32Array> {
    return this.embedOne(text, weights);
  }

  /** Synchronous form, for worker threads and benchmarks. `weights` scales each word and its n-grams. */
  embedOne(text: string, weights?: ReadonlyMap<string, number>): Float32Array {
    // feature → [accumulated weight, the largest query-side scale among the words that produced it]
    const features = new Map<string, [number, number]>();
    const add = (feature: string, weight: number, scale: number) => {
      const f = features.get(feature);
      if (f) {
        f[0] += weight;
        if (scale > f[1]) f[1] = scale;
      } else features.set(feature, [weight, scale]);
    };
    const { ngrams, wordWeight, ngramWeight, stopWordWeight } = this.opts;
    for (const raw of rawTokens(text)) {
      const word = raw.toLowerCase();
      const stop = isStopWord(word);
      const scale = weights?.get(word) ?? 1;
      add(`w:${word}`, stop ? stopWordWeight : wordWeight, scale);
      if (stop) continue;
      for (const part of identifierParts(raw)) add(`w:${part}`, wordWeight * 0.5, scale);
      const marked = `<${word}>`;
      for (const n of ngrams) {
        for (let i = 0; i + n <= marked.length; i++) add(`g:${marked.slice(i, i + n)}`, ngramWeight, scale);
      }
    }
    const v = new Float32Array(this.dimensions);
    for (const [feature, [tf, scale]] of features) {
      const h = hash32(feature, 0x9e3779b9);
      const sign = hash32(feature, 0x7f4a7c15) & 1 ? 1 : -1;
      // log-scaled tf: a word said five times is more central, not five times more.
      v[h % this.dimensions]! += sign * (tf > 1 ? 1 + Math.log(tf) : tf) * scale;
    }
    return l2Normalize(v);
  }
}
