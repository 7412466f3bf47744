import { createHash } from 'node:crypto';
import { identifierParts, isStopWord, l2Normalize, rawTokens } from '@cairn/core';
import { describe, expect, it } from 'vitest';
import { DEFAULT_HASHING_OPTIONS, HashingEmbedder } from '../src/hashing-embedder.js';

/**
 * The embedder's definition, written the plain way: every feature a string (`w:word`, `g:<gram>`), hashed
 * with 32-bit FNV-1a and a murmur3 finish. The shipped embedder hashes code units without building the
 * strings; it must give the same floats, bit for bit, or vectors stored by an earlier build would no
 * longer be comparable with new ones under the same model id.
 */
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

function referenceEmbed(
  text: string,
  dimensions: number,
  weights?: ReadonlyMap<string, number>,
): Float32Array {
  const { ngrams, wordWeight, ngramWeight, stopWordWeight } = DEFAULT_HASHING_OPTIONS;
  const features = new Map<string, [number, number]>();
  const add = (feature: string, weight: number, scale: number) => {
    const f = features.get(feature);
    if (f) {
      f[0] += weight;
      if (scale > f[1]) f[1] = scale;
    } else features.set(feature, [weight, scale]);
  };
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
  const v = new Float32Array(dimensions);
  for (const [feature, [tf, scale]] of features) {
    const h = hash32(feature, 0x9e3779b9);
    const sign = hash32(feature, 0x7f4a7c15) & 1 ? 1 : -1;
    v[h % dimensions]! += sign * (tf > 1 ? 1 + Math.log(tf) : tf) * scale;
  }
  return l2Normalize(v);
}

const TEXTS = [
  'Caroline: I went to a LGBTQ support group yesterday and it was so powerful.',
  'parseConfig reads HTTPServer2 and snake_case_names; x86_64 and IPv6 too',
  'Ünïcödé café naïve — 東京 2024, Ärger über Öl',
  'emoji 🚀 and surrogate pairs 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 in words',
  '',
  'the a of',
  'I I I a',
  'deploy deploy deploy deploy deploy the service',
  'Mixed CASE Words, ALLCAPS and numbers 42 3.14 1e9',
];

describe('HashingEmbedder', () => {
  it('gives the same floats as the string-keyed definition, bit for bit', () => {
    for (const dims of [8, 384, 768]) {
      const e = new HashingEmbedder({ dimensions: dims });
      for (const t of TEXTS) expect(e.embedOne(t)).toEqual(referenceEmbed(t, dims));
    }
  });

  it("gives the definition's floats with query-side weights", () => {
    const e = new HashingEmbedder();
    const weights = new Map([
      ['support', 2.5],
      ['group', 0.25],
      ['caroline', 0],
    ]);
    expect(e.embedOne(TEXTS[0]!, weights)).toEqual(referenceEmbed(TEXTS[0]!, 384, weights));
  });

  it('matches the definition on a text with more features than its table starts with', () => {
    // About 3,000 distinct words: the open-addressing table grows several times within one text.
    const words = Array.from({ length: 3000 }, (_, i) => `w${i.toString(36)}x${(i * 7919).toString(36)}`);
    const text = words.join(' ');
    const e = new HashingEmbedder();
    expect(e.embedOne(text)).toEqual(referenceEmbed(text, 384));
    // The table is reused: a short text after a long one carries nothing over.
    expect(e.embedOne(TEXTS[0]!)).toEqual(referenceEmbed(TEXTS[0]!, 384));
  });

  it('keeps the vectors of model cairn-hash-v1 (a change here needs a new HASHING_EMBEDDER_VERSION)', () => {
    const digest = (dims: number) => {
      const e = new HashingEmbedder({ dimensions: dims });
      const h = createHash('sha256');
      for (const t of TEXTS) h.update(Buffer.from(e.embedOne(t).buffer));
      return h.digest('hex').slice(0, 16);
    };
    expect(new HashingEmbedder().modelId).toBe('cairn-hash-v1');
    expect(digest(384)).toBe('cbf47f745812b1cc');
    expect(digest(768)).toBe('b871b9668846f184');
  });

  it('returns unit vectors, and the zero vector for a text without words', async () => {
    const e = new HashingEmbedder();
    const [a, empty] = await e.embed(['a turn about deploys', '  ,.;  ']);
    const norm = Math.sqrt(a!.reduce((s, x) => s + x * x, 0));
    expect(norm).toBeCloseTo(1, 5);
    expect(empty!.every((x) => x === 0)).toBe(true);
  });

  it('is deterministic across instances and calls', () => {
    const a = new HashingEmbedder();
    const b = new HashingEmbedder();
    const first = a.embedOne(TEXTS[1]!);
    a.embedOne(TEXTS[2]!);
    expect(a.embedOne(TEXTS[1]!)).toEqual(first);
    expect(b.embedOne(TEXTS[1]!)).toEqual(first);
  });
});
