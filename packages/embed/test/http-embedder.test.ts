import { parseRateLimitDuration, retryAfterFromHeaders } from '@cairn/embed';
import { describe, expect, it } from 'vitest';

describe('parseRateLimitDuration', () => {
  it.each([
    ['1s', 1_000],
    ['6m0s', 360_000],
    ['20ms', 20],
    ['1h2m3.5s', 3_723_500],
    ['0s', 0],
    ['150us', 1],
  ])('parses %s as %d ms (rounded up)', (text, ms) => {
    expect(parseRateLimitDuration(text)).toBe(ms);
  });

  it.each(['', '10', 'soon', '1d', '5 s'])('refuses %j', (text) => {
    expect(parseRateLimitDuration(text)).toBeUndefined();
  });
});

describe('retryAfterFromHeaders', () => {
  const now = Date.parse('2024-01-01T00:00:00Z');
  const h = (init: Record<string, string>) => new Headers(init);

  it('reads retry-after-ms, then retry-after as seconds or an HTTP date', () => {
    expect(retryAfterFromHeaders(h({ 'retry-after-ms': '250', 'retry-after': '9' }), now)).toBe(250);
    expect(retryAfterFromHeaders(h({ 'retry-after': '3' }), now)).toBe(3_000);
    expect(retryAfterFromHeaders(h({ 'retry-after': 'Mon, 01 Jan 2024 00:00:05 GMT' }), now)).toBe(5_000);
    expect(retryAfterFromHeaders(h({ 'retry-after': 'Sun, 31 Dec 2023 00:00:00 GMT' }), now)).toBe(0);
  });

  it('waits for the exhausted budget, or for the longest reset when none is marked', () => {
    const both = { 'x-ratelimit-reset-requests': '1s', 'x-ratelimit-reset-tokens': '6m0s' };
    expect(retryAfterFromHeaders(h(both), now)).toBe(360_000);
    expect(retryAfterFromHeaders(h({ ...both, 'x-ratelimit-remaining-requests': '0' }), now)).toBe(1_000);
  });

  it('returns undefined when the server gives no hint', () => {
    expect(retryAfterFromHeaders(h({}), now)).toBeUndefined();
    expect(retryAfterFromHeaders(h({ 'retry-after': 'later' }), now)).toBeUndefined();
  });
});
