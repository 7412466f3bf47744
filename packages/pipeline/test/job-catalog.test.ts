import { describe, expect, it } from 'vitest';
import {
  JOB_CATALOG,
  JOB_NAMES,
  MAX_CAPTURE_BATCH,
  MAX_STAGE_BATCH,
  parsePayload,
  retryDelay,
} from '../src/distributed/job-catalog.js';

const pending = (key: number) => ({
  key,
  namespace: 'team/alpha',
  kind: 'observation',
  title: null,
  text: `memory ${key}`,
  contentHash: `hash-${key}`,
  changeSeq: key,
});

const indexItem = (key: number) => ({
  key,
  namespace: 'team/alpha',
  contentHash: `hash-${key}`,
  changeSeq: key,
  vector: 'AACAPw==',
});

const embedPayload = (over: Record<string, unknown> = {}) => ({
  space: 'hash-v1:8',
  embedder: 'hash',
  dimensions: 8,
  items: [pending(1), pending(2)],
  ...over,
});

const indexPayload = (over: Record<string, unknown> = {}) => ({
  space: 'hash-v1:8',
  shard: 0,
  items: [indexItem(1)],
  ...over,
});

/** The error of a payload that must be rejected. */
function rejection(result: ReturnType<typeof parsePayload>): string {
  if (result.ok) throw new Error(`expected the payload to be rejected, got ${JSON.stringify(result.value)}`);
  return result.error;
}

describe('parsePayload', () => {
  it('names every job of the catalog', () => {
    expect(JOB_NAMES).toEqual(['capture', 'embed', 'index']);
  });

  it('accepts a valid capture payload and keeps the raw memories as sent', () => {
    const memories = [{ namespace: 'a', text: 'x' }, 'anything: the capture stage validates each one'];
    const r = parsePayload('capture', { memories, receivedAt: 1_700_000_000_000 });
    expect(r).toEqual({ ok: true, value: { memories, receivedAt: 1_700_000_000_000 } });
  });

  it('accepts a valid embed payload', () => {
    const r = parsePayload('embed', embedPayload());
    expect(r.ok).toBe(true);
    if (r.ok) expect(r.value.items.map((i) => i.key)).toEqual([1, 2]);
  });

  it('accepts a valid index payload and defaults failures to an empty list', () => {
    const r = parsePayload('index', indexPayload());
    expect(r.ok).toBe(true);
    if (r.ok) {
      expect(r.value.items).toHaveLength(1);
      expect(r.value.failures).toEqual([]);
    }
  });

  it('accepts an index job carrying only failures (a batch the embedder refused entirely)', () => {
    const r = parsePayload('index', indexPayload({ items: [], failures: [{ key: 7, error: 'too long' }] }));
    expect(r).toEqual({
      ok: true,
      value: { space: 'hash-v1:8', shard: 0, items: [], failures: [{ key: 7, error: 'too long' }] },
    });
  });

  it('rejects an index job with neither items nor failures', () => {
    expect(rejection(parsePayload('index', indexPayload({ items: [] })))).toBe(
      'INVALID_PAYLOAD: index job: items: an index job needs at least one item or failure',
    );
    expect(rejection(parsePayload('index', indexPayload({ items: [], failures: [] })))).toMatch(
      /^INVALID_PAYLOAD: index job: items: /,
    );
  });

  it('names a missing field with its path', () => {
    const { receivedAt: _, ...noTime } = { memories: [{}], receivedAt: 1 };
    expect(rejection(parsePayload('capture', noTime))).toMatch(/^INVALID_PAYLOAD: capture job: receivedAt: /);
    const { space: __, ...noSpace } = embedPayload();
    expect(rejection(parsePayload('embed', noSpace))).toMatch(/^INVALID_PAYLOAD: embed job: space: /);
  });

  it('names a field of the wrong type, down to the nested item', () => {
    expect(rejection(parsePayload('capture', { memories: 'not an array', receivedAt: 1 }))).toMatch(
      /^INVALID_PAYLOAD: capture job: memories: /,
    );
    const badItem = { ...pending(2), changeSeq: 'seven' };
    expect(rejection(parsePayload('embed', embedPayload({ items: [pending(1), badItem] })))).toMatch(
      /^INVALID_PAYLOAD: embed job: items\.1\.changeSeq: /,
    );
    expect(rejection(parsePayload('index', indexPayload({ shard: -1 })))).toMatch(
      /^INVALID_PAYLOAD: index job: shard: /,
    );
    expect(rejection(parsePayload('index', indexPayload({ items: [{ ...indexItem(1), key: 0 }] })))).toMatch(
      /^INVALID_PAYLOAD: index job: items\.0\.key: /,
    );
  });

  it('rejects too many items and empty batches', () => {
    const tooManyMemories = Array.from({ length: MAX_CAPTURE_BATCH + 1 }, () => ({}));
    expect(rejection(parsePayload('capture', { memories: tooManyMemories, receivedAt: 1 }))).toMatch(
      /^INVALID_PAYLOAD: capture job: memories: /,
    );
    const full = Array.from({ length: MAX_STAGE_BATCH }, (_, i) => pending(i + 1));
    expect(parsePayload('embed', embedPayload({ items: full })).ok).toBe(true);
    expect(
      rejection(parsePayload('embed', embedPayload({ items: [...full, pending(MAX_STAGE_BATCH + 1)] }))),
    ).toMatch(/^INVALID_PAYLOAD: embed job: items: /);
    expect(rejection(parsePayload('embed', embedPayload({ items: [] })))).toMatch(
      /^INVALID_PAYLOAD: embed job: items: /,
    );
    expect(rejection(parsePayload('capture', { memories: [], receivedAt: 1 }))).toMatch(
      /^INVALID_PAYLOAD: capture job: memories: /,
    );
  });

  it('names the payload itself when it is not an object', () => {
    expect(rejection(parsePayload('embed', null))).toMatch(/^INVALID_PAYLOAD: embed job: \(payload\): /);
    expect(rejection(parsePayload('index', 'x'))).toMatch(/^INVALID_PAYLOAD: index job: \(payload\): /);
  });
});

describe('retryDelay', () => {
  it('starts at the first delay and doubles per attempt', () => {
    for (const name of JOB_NAMES) {
      const { delayMs } = JOB_CATALOG[name].retry;
      expect(retryDelay(name, 0)).toBe(delayMs);
      expect(retryDelay(name, 1)).toBe(delayMs);
      expect(retryDelay(name, 2)).toBe(delayMs * 2);
      expect(retryDelay(name, 3)).toBe(delayMs * 4);
      expect(retryDelay(name, 4)).toBe(delayMs * 8);
    }
    expect(retryDelay('capture', 3)).toBe(1_000);
    expect(retryDelay('embed', 3)).toBe(2_000);
  });

  it('is capped at maxDelayMs and never decreases', () => {
    for (const name of JOB_NAMES) {
      const { maxDelayMs, attempts } = JOB_CATALOG[name].retry;
      let previous = 0;
      for (let attempt = 1; attempt <= attempts + 10; attempt++) {
        const d = retryDelay(name, attempt);
        expect(d).toBeGreaterThanOrEqual(previous);
        expect(d).toBeLessThanOrEqual(maxDelayMs);
        previous = d;
      }
      expect(retryDelay(name, attempts)).toBe(maxDelayMs);
      expect(retryDelay(name, 1_000)).toBe(maxDelayMs);
    }
  });
});
