import {
  assertDimensions,
  CairnError,
  cosine,
  dot,
  embeddingSpaceOf,
  isCairnError,
  l2Normalize,
  MS_PER_DAY,
  parseDuration,
  parseTimestamp,
} from '@cairn/core';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { cairnErrorFrom } from './helpers.js';

describe('parseTimestamp', () => {
  it('accepts epoch ms and rounds fractions', () => {
    expect(parseTimestamp(1000)).toBe(1000);
    expect(parseTimestamp(1000.6)).toBe(1001);
  });

  it('accepts an ISO date without a time', () => {
    expect(parseTimestamp('2024-01-02')).toBe(Date.UTC(2024, 0, 2));
  });

  it.each([
    ['2024-01-01T10:00:00Z', Date.UTC(2024, 0, 1, 10)],
    ['2024-01-01T10:00Z', Date.UTC(2024, 0, 1, 10)],
    ['2024-01-01 10:00:00', Date.UTC(2024, 0, 1, 10)],
    ['2024-01-01T10:00:00.123456Z', Date.UTC(2024, 0, 1, 10, 0, 0, 123)],
    ['2024-01-01T12:00:00+02:00', Date.UTC(2024, 0, 1, 10)],
    ['2024-01-01T12:00:00+0200', Date.UTC(2024, 0, 1, 10)],
  ])('accepts the ISO-8601 form %s', (s, ms) => {
    expect(parseTimestamp(s)).toBe(ms);
  });

  it.each([
    '2024-01-01 junk', // Date.parse alone reads "jun" as June
    '2024-01-01 trailing junk',
    '2024-01-01 (comment)',
    '2024-01-01T10:00:00Z junk',
    '2024-01-01T10',
    ' 2024-01-01',
    '2024-02-30',
  ])('refuses %j, naming the field', (s) => {
    expect(cairnErrorFrom(() => parseTimestamp(s, 'ts')).data.field).toBe('ts');
  });

  it('names the field it was given', () => {
    expect(cairnErrorFrom(() => parseTimestamp('1700000000', 'filters.since')).data.field).toBe(
      'filters.since',
    );
  });

  it('refuses every purely numeric string', () => {
    fc.assert(
      fc.property(fc.stringMatching(/^\d{1,15}$/), (s) => {
        expect(cairnErrorFrom(() => parseTimestamp(s)).code).toBe('INVALID_INPUT');
      }),
    );
  });

  it('refuses non-string, non-number values', () => {
    for (const v of [null, undefined, true, {}, []])
      expect(cairnErrorFrom(() => parseTimestamp(v)).data.field).toBe('ts');
  });
});

describe('parseDuration', () => {
  it.each([
    ['30d', 30 * MS_PER_DAY],
    ['12h', 12 * 3_600_000],
    ['90m', 90 * 60_000],
    ['45s', 45_000],
    ['250ms', 250],
    ['2w', 14 * MS_PER_DAY],
    ['5000', 5000],
    ['1.5d', 1.5 * MS_PER_DAY],
  ])('parses %s', (s, ms) => {
    expect(parseDuration(s)).toBe(ms);
  });

  it('accepts a positive number as milliseconds', () => {
    expect(parseDuration(1234)).toBe(1234);
  });

  it('refuses zero, negatives and garbage, naming the field', () => {
    for (const v of ['0', '0d', '-5d', 'soon', '', 0, -1]) {
      expect(cairnErrorFrom(() => parseDuration(v, 'decay')).data.field).toBe('decay');
    }
  });
});

describe('CairnError', () => {
  it('serialises code, message and field only', () => {
    const err = new CairnError('NOT_FOUND', 'gone', { field: 'anchor', secret: 'x' });
    expect(err.toJSON()).toEqual({ code: 'NOT_FOUND', message: 'gone', field: 'anchor' });
    expect(new CairnError('INTERNAL', 'bug').toJSON()).toEqual({ code: 'INTERNAL', message: 'bug' });
  });

  it('is recognised by isCairnError and keeps its cause', () => {
    const cause = new Error('root');
    const err = new CairnError('STORAGE_ERROR', 'wrapped', {}, { cause });
    expect(isCairnError(err)).toBe(true);
    expect(isCairnError(new Error('x'))).toBe(false);
    expect(err.cause).toBe(cause);
    expect(err.name).toBe('CairnError');
  });
});

describe('embedding spaces', () => {
  it('names a space by model id and dimensions', () => {
    expect(embeddingSpaceOf({ modelId: 'm', dimensions: 8 })).toEqual({
      id: 'm/8',
      modelId: 'm',
      dimensions: 8,
    });
  });

  it('refuses a vector of the wrong length with DIMENSION_MISMATCH', () => {
    const space = embeddingSpaceOf({ modelId: 'm', dimensions: 4 });
    expect(() => assertDimensions(new Float32Array(4), space)).not.toThrow();
    const err = cairnErrorFrom(() => assertDimensions(new Float32Array(3), space));
    expect(err.code).toBe('DIMENSION_MISMATCH');
    expect(err.data).toMatchObject({ expected: 4, actual: 3, space: 'm/4' });
  });
});

describe('vector math', () => {
  it('computes dot and cosine', () => {
    const a = new Float32Array([1, 2, 3]);
    const b = new Float32Array([4, 5, 6]);
    expect(dot(a, b)).toBe(32);
    expect(cosine(a, b)).toBeCloseTo(32 / Math.sqrt(14 * 77), 6);
  });

  it('gives cosine 0 for a zero vector instead of NaN', () => {
    expect(cosine(new Float32Array(3), new Float32Array([1, 2, 3]))).toBe(0);
  });

  it('normalises to unit length in place and leaves zero vectors alone', () => {
    const v = new Float32Array([3, 4]);
    expect(l2Normalize(v)).toBe(v);
    expect([...v]).toEqual([expect.closeTo(0.6, 6), expect.closeTo(0.8, 6)]);
    expect([...l2Normalize(new Float32Array(2))]).toEqual([0, 0]);
  });

  it('makes the dot product of normalised vectors equal their cosine', () => {
    const arr = fc.array(fc.float({ min: -100, max: 100, noNaN: true }), { minLength: 4, maxLength: 4 });
    fc.assert(
      fc.property(arr, arr, (x, y) => {
        const a = new Float32Array(x);
        const b = new Float32Array(y);
        const c = cosine(a, b);
        expect(dot(l2Normalize(a), l2Normalize(b))).toBeCloseTo(c, 4);
      }),
    );
  });
});
