import { CairnError, type Embedder } from '@cairn/core';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { DEFAULT_EMBED_BATCHER_OPTIONS, EmbedBatcher } from '../src/distributed/embed-batcher.js';
import { embedEach } from '../src/embed-stage.js';

/**
 * An in-process embedder that records every call. Texts are `t<n>`; the vector of `t<n>` is `[n, len]`, so
 * a caller can check it got the vectors of its own texts, in order.
 */
class RecordingEmbedder implements Embedder {
  readonly modelId = 'recording-v1';
  readonly dimensions = 2;
  readonly similarityFloor = 0.25;
  readonly calls: string[][] = [];
  failNext: Error | null = null;
  /** Texts answered with a vector of another length: the whole call is refused, as a remote embedder does. */
  readonly misfit = new Set<string>();

  async embed(texts: readonly string[]): Promise<Float32Array[]> {
    this.calls.push([...texts]);
    const err = this.failNext;
    this.failNext = null;
    if (err) throw err;
    const bad = texts.find((t) => this.misfit.has(t));
    if (bad) throw new CairnError('DIMENSION_MISMATCH', `vector of ${bad} has 3 dimensions, expected 2`);
    return texts.map((t) => Float32Array.of(Number(t.slice(1)), t.length));
  }
}

const texts = (from: number, count: number) => Array.from({ length: count }, (_, i) => `t${from + i}`);
const firstComponents = (vs: Float32Array[]) => vs.map((v) => v[0]);

afterEach(() => {
  vi.useRealTimers();
});

describe('EmbedBatcher', () => {
  it('presents the inner embedder’s model, dimensions and similarity floor', () => {
    const b = new EmbedBatcher(new RecordingEmbedder());
    expect(b.modelId).toBe('recording-v1');
    expect(b.dimensions).toBe(2);
    expect(b.similarityFloor).toBe(0.25);
    expect(DEFAULT_EMBED_BATCHER_OPTIONS).toEqual({ maxBatch: 256, maxWaitMs: 5 });
  });

  it('merges concurrent small requests into one inner call and hands each caller its own vectors', async () => {
    const inner = new RecordingEmbedder();
    const b = new EmbedBatcher(inner, { maxBatch: 100, maxWaitMs: 20 });
    const [a, c, d] = await Promise.all([b.embed(texts(1, 2)), b.embed(texts(10, 3)), b.embed(texts(20, 1))]);
    expect(inner.calls).toEqual([[...texts(1, 2), ...texts(10, 3), ...texts(20, 1)]]);
    expect(b.calls).toBe(1);
    expect(firstComponents(a!)).toEqual([1, 2]);
    expect(firstComponents(c!)).toEqual([10, 11, 12]);
    expect(firstComponents(d!)).toEqual([20]);
  });

  it('sends a lone small request once maxWaitMs has passed', async () => {
    vi.useFakeTimers();
    const inner = new RecordingEmbedder();
    const b = new EmbedBatcher(inner, { maxBatch: 100, maxWaitMs: 50 });
    const p = b.embed(texts(1, 2));
    await vi.advanceTimersByTimeAsync(49);
    expect(inner.calls).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(firstComponents(await p)).toEqual([1, 2]);
    expect(inner.calls).toEqual([texts(1, 2)]);
  });

  it('calls at once, without waiting, when maxBatch texts are waiting', async () => {
    // Fake timers that are never advanced: the requests can only complete through the size trigger.
    vi.useFakeTimers();
    const inner = new RecordingEmbedder();
    const b = new EmbedBatcher(inner, { maxBatch: 4, maxWaitMs: 60_000 });
    const first = b.embed(texts(1, 3));
    const second = b.embed(texts(4, 1));
    const third = b.embed(texts(5, 1)); // starts the next group
    expect(firstComponents(await first)).toEqual([1, 2, 3]);
    expect(firstComponents(await second)).toEqual([4]);
    expect(inner.calls).toEqual([texts(1, 4)]);
    await vi.advanceTimersByTimeAsync(60_000);
    expect(firstComponents(await third)).toEqual([5]);
    expect(inner.calls).toEqual([texts(1, 4), texts(5, 1)]);
    expect(b.calls).toBe(2);
  });

  it('sends a request of maxBatch texts or more on its own, leaving the waiting ones to their group', async () => {
    vi.useFakeTimers();
    const inner = new RecordingEmbedder();
    const b = new EmbedBatcher(inner, { maxBatch: 4, maxWaitMs: 30 });
    const small = b.embed(texts(1, 1));
    const big = b.embed(texts(100, 4));
    const bigger = b.embed(texts(200, 6));
    expect(firstComponents(await big)).toEqual([100, 101, 102, 103]);
    expect(firstComponents(await bigger)).toEqual([200, 201, 202, 203, 204, 205]);
    expect(inner.calls).toEqual([texts(100, 4), texts(200, 6)]);
    await vi.advanceTimersByTimeAsync(30);
    expect(firstComponents(await small)).toEqual([1]);
    expect(inner.calls).toEqual([texts(100, 4), texts(200, 6), texts(1, 1)]);
    expect(b.calls).toBe(3);
  });

  it('answers an empty request without calling the embedder', async () => {
    const inner = new RecordingEmbedder();
    const b = new EmbedBatcher(inner);
    expect(await b.embed([])).toEqual([]);
    expect(inner.calls).toEqual([]);
    expect(b.calls).toBe(0);
  });

  it('rejects every request of a failed call with its error, and recovers for the next group', async () => {
    const inner = new RecordingEmbedder();
    const b = new EmbedBatcher(inner, { maxBatch: 100, maxWaitMs: 5 });
    const boom = new Error('embedder down');
    inner.failNext = boom;
    const results = await Promise.allSettled([
      b.embed(texts(1, 2)),
      b.embed(texts(3, 1)),
      b.embed(texts(4, 5)),
    ]);
    expect(inner.calls).toHaveLength(1);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected', 'rejected']);
    for (const r of results) if (r.status === 'rejected') expect(r.reason).toBe(boom);
    const after = await Promise.all([b.embed(texts(7, 1)), b.embed(texts(8, 1))]);
    expect(after.map(firstComponents)).toEqual([[7], [8]]);
    expect(inner.calls).toHaveLength(2);
  });

  it('passes a failure of a request sent on its own to that request only', async () => {
    const inner = new RecordingEmbedder();
    const b = new EmbedBatcher(inner, { maxBatch: 2, maxWaitMs: 5 });
    const small = b.embed(texts(1, 1));
    inner.failNext = new Error('too big');
    await expect(b.embed(texts(10, 2))).rejects.toThrow('too big');
    expect(firstComponents(await small)).toEqual([1]);
  });

  it('sends each request again on its own when a merged call meets a vector of another length: only its owner fails', async () => {
    const inner = new RecordingEmbedder();
    inner.misfit.add('t4');
    const b = new EmbedBatcher(inner, { maxBatch: 100, maxWaitMs: 5 });
    const results = await Promise.allSettled([
      b.embed(texts(1, 2)),
      b.embed(texts(3, 3)),
      b.embed(texts(6, 1)),
    ]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(results[0]!.status === 'fulfilled' && firstComponents(results[0]!.value)).toEqual([1, 2]);
    expect(inner.calls).toEqual([texts(1, 6), texts(1, 2), texts(3, 3), texts(6, 1)]);
  });
});

describe('embedEach', () => {
  it('finds the texts of another length by halving, and the others keep their vectors, in order', async () => {
    const inner = new RecordingEmbedder();
    inner.misfit.add('t3');
    inner.misfit.add('t7');
    const out = await embedEach(inner, texts(1, 8));
    expect(out.map((v) => (v ? v[0] : null))).toEqual([1, 2, null, 4, 5, 6, null, 8]);
    // Through the batcher, beside another job's texts, the same: nothing of the other job is blamed.
    const b = new EmbedBatcher(inner, { maxBatch: 100, maxWaitMs: 5 });
    const [mine, theirs] = await Promise.all([embedEach(b, texts(1, 4)), embedEach(b, texts(10, 4))]);
    expect(mine.map((v) => (v ? v[0] : null))).toEqual([1, 2, null, 4]);
    expect(theirs.map((v) => v?.[0])).toEqual([10, 11, 12, 13]);
  });

  it('throws when every text of a batch is of another length (the embedder changed), and records none', async () => {
    const inner = new RecordingEmbedder();
    for (const t of texts(1, 4)) inner.misfit.add(t);
    await expect(embedEach(inner, texts(1, 4))).rejects.toMatchObject({ code: 'DIMENSION_MISMATCH' });
    // A lone text can only be told by itself: it is recorded (null), so it cannot block what follows.
    expect(await embedEach(inner, ['t1'])).toEqual([null]);
    // Any other error is transient: it propagates as it is.
    inner.failNext = new Error('connection refused');
    await expect(embedEach(inner, texts(5, 2))).rejects.toThrow('connection refused');
  });
});
