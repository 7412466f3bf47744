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

const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;
/** Seed of the hash that picks a feature's bucket. */
const BUCKET_SEED = 0x9e3779b9;
/** Seed of the hash whose low bit is a feature's sign. */
const SIGN_SEED = 0x7f4a7c15;
const CODE_LT = 0x3c; // '<'
const CODE_GT = 0x3e; // '>'

/** One FNV-1a step over a UTF-16 code unit. */
function fnvStep(h: number, code: number): number {
  return Math.imul(h ^ code, FNV_PRIME);
}

/** The murmur3 avalanche that finishes a hash, so its low bits mix well. */
function avalanche(h: number): number {
  let x = h ^ (h >>> 16);
  x = Math.imul(x, 0x85ebca6b);
  x ^= x >>> 13;
  x = Math.imul(x, 0xc2b2ae35);
  x ^= x >>> 16;
  return x >>> 0;
}

/** FNV-1a state after a feature's two-character prefix (`w:` or `g:`), for the given seed. */
function prefixState(seed: number, prefix: string): number {
  let h = FNV_OFFSET ^ seed;
  for (let i = 0; i < prefix.length; i++) h = fnvStep(h, prefix.charCodeAt(i));
  return h;
}

const WORD_BUCKET = prefixState(BUCKET_SEED, 'w:');
const WORD_SIGN = prefixState(SIGN_SEED, 'w:');
const GRAM_BUCKET = prefixState(BUCKET_SEED, 'g:');
const GRAM_SIGN = prefixState(SIGN_SEED, 'g:');

/**
 * True for an ASCII word of lower-case letters, or a capital and lower-case letters ("deploy", "Caroline"):
 * identifierParts leaves such a token whole, so the embedder can skip its regular expressions.
 */
function isPlainAsciiWord(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0x61 && c <= 0x7a) continue;
    if (i === 0 && c >= 0x41 && c <= 0x5a && s.length > 1) continue;
    return false;
  }
  return true;
}

/**
 * A text's features, accumulated in the order they first occur. A feature is named by its two hashes
 * (the bucket hash, and the sign hash's low 21 bits) rather than by its string: hashing straight from the
 * word's code units builds no string per n-gram, and the open-addressing table below allocates nothing per
 * text, which made the embedder about twice as fast. Two features merge only when 53 bits of hash agree.
 * One instance is reused by every call: embedding is synchronous, so calls never interleave.
 */
class FeatureSet {
  /** Slot of the table → feature index + 1; 0 is empty. Its length is a power of two. */
  private table = new Int32Array(1024);
  readonly bucketHash: number[] = [];
  readonly signHash: number[] = [];
  readonly tf: number[] = [];
  readonly scale: number[] = [];
  private tableSlots: number[] = [];

  get size(): number {
    return this.tf.length;
  }

  clear(): void {
    for (const slot of this.tableSlots) this.table[slot] = 0;
    this.tableSlots.length = 0;
    this.bucketHash.length = 0;
    this.signHash.length = 0;
    this.tf.length = 0;
    this.scale.length = 0;
  }

  add(bucketHash: number, signHash: number, weight: number, scale: number): void {
    // Keep the table at most half full.
    if (this.tf.length * 2 >= this.table.length) this.grow();
    const mask = this.table.length - 1;
    const sign21 = signHash & 0x1fffff;
    for (let slot = (bucketHash ^ sign21) & mask; ; slot = (slot + 1) & mask) {
      const entry = this.table[slot]!;
      if (entry === 0) {
        this.table[slot] = this.tf.length + 1;
        this.tableSlots.push(slot);
        this.bucketHash.push(bucketHash);
        this.signHash.push(signHash);
        this.tf.push(weight);
        this.scale.push(scale);
        return;
      }
      const i = entry - 1;
      if (this.bucketHash[i] === bucketHash && (this.signHash[i]! & 0x1fffff) === sign21) {
        this.tf[i]! += weight;
        if (scale > this.scale[i]!) this.scale[i] = scale;
        return;
      }
    }
  }

  private grow(): void {
    this.table = new Int32Array(this.table.length * 2);
    this.tableSlots = [];
    const mask = this.table.length - 1;
    for (let i = 0; i < this.tf.length; i++) {
      let slot = (this.bucketHash[i]! ^ (this.signHash[i]! & 0x1fffff)) & mask;
      while (this.table[slot] !== 0) slot = (slot + 1) & mask;
      this.table[slot] = i + 1;
      this.tableSlots.push(slot);
    }
  }

  /** A whole-word feature, `w:<word>`. */
  addWord(word: string, weight: number, scale: number): void {
    let b = WORD_BUCKET;
    let g = WORD_SIGN;
    for (let i = 0; i < word.length; i++) {
      const c = word.charCodeAt(i);
      b = fnvStep(b, c);
      g = fnvStep(g, c);
    }
    this.add(avalanche(b), avalanche(g), weight, scale);
  }

  /** Every character n-gram of `<word>` of each size in `sizes`, `g:<gram>`. */
  addNgrams(word: string, sizes: readonly number[], weight: number, scale: number): void {
    const marked = word.length + 2;
    const code = (i: number) => (i === 0 ? CODE_LT : i === marked - 1 ? CODE_GT : word.charCodeAt(i - 1));
    for (const n of sizes) {
      for (let i = 0; i + n <= marked; i++) {
        let b = GRAM_BUCKET;
        let g = GRAM_SIGN;
        for (let j = i; j < i + n; j++) {
          const c = code(j);
          b = fnvStep(b, c);
          g = fnvStep(g, c);
        }
        this.add(avalanche(b), avalanche(g), weight, scale);
      }
    }
  }
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
  private readonly features = new FeatureSet();

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
    // Each feature keeps its accumulated weight and the largest query-side scale among the words that
    // produced it.
    const features = this.features;
    features.clear();
    const { ngrams, wordWeight, ngramWeight, stopWordWeight } = this.opts;
    for (const raw of rawTokens(text)) {
      const word = raw.toLowerCase();
      const stop = isStopWord(word);
      const scale = weights?.get(word) ?? 1;
      features.addWord(word, stop ? stopWordWeight : wordWeight, scale);
      if (stop) continue;
      // identifierParts returns nothing for a plain word, the common case: skip its regular expressions.
      if (!isPlainAsciiWord(raw)) {
        for (const part of identifierParts(raw)) features.addWord(part, wordWeight * 0.5, scale);
      }
      features.addNgrams(word, ngrams, ngramWeight, scale);
    }
    const v = new Float32Array(this.dimensions);
    const { bucketHash, signHash, tf, scale } = features;
    for (let i = 0; i < features.size; i++) {
      const w = tf[i]!;
      const sign = signHash[i]! & 1 ? 1 : -1;
      // log-scaled tf: a word said five times is more central, not five times more.
      v[bucketHash[i]! % this.dimensions]! += sign * (w > 1 ? 1 + Math.log(w) : w) * scale[i]!;
    }
    return l2Normalize(v);
  }
}
