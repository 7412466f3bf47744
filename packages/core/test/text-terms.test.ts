import { codeParts, identifierParts, isStopWord, rawTokens, tokenize } from '@cairn/core';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

describe('identifierParts', () => {
  it.each([
    ['parseConfig', ['parse', 'config']],
    ['parse_config', ['parse', 'config']],
    ['HTTPServer2', ['http', 'server', '2']],
    ['getHTTPResponse', ['get', 'http', 'response']],
    ['ParseConfig', ['parse', 'config']],
    ['snake_case_name', ['snake', 'case', 'name']],
    ['__parse_config__', ['parse', 'config']],
    ['utf8Decode', ['utf', '8', 'decode']],
  ])('splits %s into its parts', (token, parts) => {
    expect(identifierParts(token)).toEqual(parts);
  });

  it.each(['config', 'Config', 'HTTP', '42', '_private', '__init__'])(
    'returns no parts for the plain word %s',
    (token) => {
      expect(identifierParts(token)).toEqual([]);
    },
  );

  it('returns lower-case parts, never an empty part', () => {
    fc.assert(
      fc.property(fc.stringMatching(/^[A-Za-z0-9_]{1,24}$/), (token) => {
        const parts = identifierParts(token);
        expect(parts.length === 0 || parts.length > 1).toBe(true);
        for (const p of parts) {
          expect(p.length).toBeGreaterThan(0);
          expect(p).toBe(p.toLowerCase());
        }
      }),
    );
  });
});

describe('codeParts', () => {
  it('emits the parts of every compound identifier, space-separated', () => {
    expect(codeParts('call parseConfig then parse_config')).toBe('parse config parse config');
  });

  it('emits nothing for plain prose', () => {
    expect(codeParts('the quick brown fox')).toBe('');
  });

  it('splits a path only on its identifier boundaries, leaving plain path segments to the text column', () => {
    // src, auth, middleware and ts are plain words: they are already tokens of the text itself.
    expect(codeParts('src/auth/middleware.ts')).toBe('');
    expect(codeParts('src/authMiddleware.ts')).toBe('auth middleware');
  });

  it('splits HTTPServer2 in text', () => {
    expect(codeParts('start HTTPServer2 now')).toBe('http server 2');
  });
});

describe('tokenize and rawTokens', () => {
  it('keeps underscores inside tokens and lower-cases', () => {
    expect(tokenize('Call parse_config() on HTTPServer2!')).toEqual([
      'call',
      'parse_config',
      'on',
      'httpserver2',
    ]);
  });

  it('preserves case in raw tokens', () => {
    expect(rawTokens('fix parseConfig in src/auth/middleware.ts')).toEqual([
      'fix',
      'parseConfig',
      'in',
      'src',
      'auth',
      'middleware',
      'ts',
    ]);
  });

  it('tokenizes letters of any script', () => {
    expect(tokenize('Café naïve 東京')).toEqual(['café', 'naïve', '東京']);
  });

  it('returns only letters, digits and underscores for any input', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), (s) => {
        for (const t of tokenize(s)) expect(t).toMatch(/^[\p{L}\p{N}_]+$/u);
      }),
    );
  });
});

describe('isStopWord', () => {
  it('recognises function words and not topical words', () => {
    expect(isStopWord('the')).toBe(true);
    expect(isStopWord('config')).toBe(false);
  });
});
