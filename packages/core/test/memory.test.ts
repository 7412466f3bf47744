import {
  CairnError,
  contentHash,
  DEFAULT_IMPORTANCE,
  DEFAULT_INPUT_LIMITS,
  generatedId,
  normalizeMemory,
} from '@cairn/core';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { cairnErrorFrom } from './helpers.js';

const NOW = Date.parse('2024-06-01T00:00:00Z');

describe('normalizeMemory: required fields', () => {
  it('names namespace when it is missing', () => {
    const err = cairnErrorFrom(() => normalizeMemory({ text: 'hello' }, NOW));
    expect(err.code).toBe('INVALID_INPUT');
    expect(err.data.field).toBe('namespace');
    expect(err.message).toMatch(/namespace/);
  });

  it('names text when it is missing', () => {
    const err = cairnErrorFrom(() => normalizeMemory({ namespace: 'acme/api' }, NOW));
    expect(err.code).toBe('INVALID_INPUT');
    expect(err.data.field).toBe('text');
    expect(err.message).toMatch(/text/);
  });

  it('names text when it is present but of the wrong type', () => {
    const err = cairnErrorFrom(() => normalizeMemory({ namespace: 'a', text: 42 }, NOW));
    expect(err.code).toBe('INVALID_INPUT');
    expect(err.data.field).toBe('text');
  });

  it('refuses blank text', () => {
    const err = cairnErrorFrom(() => normalizeMemory({ namespace: 'a', text: ' \n\t ' }, NOW));
    expect(err.data.field).toBe('text');
    expect(err.message).toMatch(/blank/);
  });

  it('refuses a non-object memory without a field', () => {
    for (const input of [null, 'text', 42, ['a']]) {
      const err = cairnErrorFrom(() => normalizeMemory(input, NOW));
      expect(err.code).toBe('INVALID_INPUT');
      expect(err.data.field).toBeUndefined();
    }
  });

  it('refuses a namespace with characters outside the allowed set', () => {
    for (const namespace of [
      'has space',
      '/leading-slash',
      '',
      'a'.repeat(DEFAULT_INPUT_LIMITS.maxNamespaceChars + 1),
    ]) {
      const err = cairnErrorFrom(() => normalizeMemory({ namespace, text: 'x' }, NOW));
      expect(err.data.field).toBe('namespace');
    }
  });

  it('accepts path-like namespaces', () => {
    for (const namespace of ['acme/api', 't:42', 'user@host', 'a.b_c-d']) {
      expect(normalizeMemory({ namespace, text: 'x' }, NOW).namespace).toBe(namespace);
    }
  });
});

describe('normalizeMemory: unknown fields', () => {
  it('refuses an unknown field and names it', () => {
    const err = cairnErrorFrom(() => normalizeMemory({ namespace: 'a', text: 'x', txet: 'typo' }, NOW));
    expect(err.code).toBe('INVALID_INPUT');
    expect(err.data.field).toBe('txet');
    expect(err.message).toMatch(/unknown field/);
  });

  it('names the unknown field beside a missing one it may be a misspelling of', () => {
    const err = cairnErrorFrom(() => normalizeMemory({ namespace: 'a', txt: 'typo field' }, NOW));
    expect(err.data.field).toBe('text');
    expect(err.message).toBe('text is required; got unknown field(s): txt');
  });

  it('lists every unknown field', () => {
    const err = cairnErrorFrom(() => normalizeMemory({ namespace: 'a', text: 'x', foo: 1, bar: 2 }, NOW));
    expect(err.data.field).toBe('foo,bar');
  });
});

describe('normalizeMemory: named fields', () => {
  it('refuses a field name that breaks the rule, naming the key and the rule (not "Invalid key in record")', () => {
    for (const name of ['Bad', '1st', 'with-dash', 'x'.repeat(33)]) {
      const err = cairnErrorFrom(() =>
        normalizeMemory({ namespace: 'a', text: 'x', fields: { [name]: 1 } }, NOW),
      );
      expect(err.code).toBe('INVALID_INPUT');
      expect(err.data.field).toBe(`fields.${name}`);
      expect(err.message).toBe(
        `fields: key ${JSON.stringify(name)}: a field name matches [a-z][a-z0-9_]*, at most 32 characters`,
      );
    }
    const text = cairnErrorFrom(() =>
      normalizeMemory({ namespace: 'a', text: 'x', fields: { text: 'y' } }, NOW),
    );
    expect(text.message).toBe(
      `fields: key "text": "text" names the memory's own text; pick another field name`,
    );
  });
});

describe('normalizeMemory: timestamps', () => {
  it('parses an ISO-8601 ts to epoch ms', () => {
    const m = normalizeMemory({ namespace: 'a', text: 'x', ts: '2024-05-08T13:56:00Z' }, NOW);
    expect(m.ts).toBe(Date.UTC(2024, 4, 8, 13, 56));
  });

  it('honours the offset of an ISO-8601 ts', () => {
    const m = normalizeMemory({ namespace: 'a', text: 'x', ts: '2024-05-08T15:56:00+02:00' }, NOW);
    expect(m.ts).toBe(Date.UTC(2024, 4, 8, 13, 56));
  });

  it('keeps an epoch-ms ts as is', () => {
    const m = normalizeMemory({ namespace: 'a', text: 'x', ts: 1_715_176_560_000 }, NOW);
    expect(m.ts).toBe(1_715_176_560_000);
  });

  it('uses now when ts is absent, and records that no ts was given', () => {
    const m = normalizeMemory({ namespace: 'a', text: 'x' }, NOW);
    expect(m.ts).toBe(NOW);
    expect(m.tsGiven).toBe(false);
    expect(normalizeMemory({ namespace: 'a', text: 'x', ts: 0 }, NOW).tsGiven).toBe(true);
  });

  it('refuses a numeric-string ts, since seconds and milliseconds cannot be told apart', () => {
    for (const ts of ['1700000000', '1700000000000', ' 1700000000']) {
      const err = cairnErrorFrom(() => normalizeMemory({ namespace: 'a', text: 'x', ts }, NOW));
      expect(err.code).toBe('INVALID_INPUT');
      expect(err.data.field).toBe('ts');
    }
  });

  it('refuses negative, non-finite and unparseable timestamps', () => {
    for (const ts of [-1, Number.NaN, Number.POSITIVE_INFINITY, 'yesterday', '2024-99-99T00:00:00Z']) {
      const err = cairnErrorFrom(() => normalizeMemory({ namespace: 'a', text: 'x', ts }, NOW));
      expect(err.data.field).toBe('ts');
    }
  });
});

describe('normalizeMemory: text that could not be read back as written', () => {
  it('refuses a lone UTF-16 surrogate anywhere, naming where (SQLite would store it as U+FFFD)', () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ id: 'col\ud800' }, 'id'],
      [{ text: 'lone \udc00 surrogate' }, 'text'],
      [{ title: 'x\ud800' }, 'title'],
      [{ tags: ['ok', 'bad\ud801'] }, 'tags.1'],
      [{ meta: { a: { b: ['\ud800'] } } }, 'meta.a.b.0'],
      [{ meta: { 'k\ud800': 1 } }, 'meta.k\ud800'],
      [{ fields: { facts: 'a \udfff b' } }, 'fields.facts'],
    ];
    for (const [extra, field] of cases) {
      const err = cairnErrorFrom(() => normalizeMemory({ namespace: 'a', text: 'x', ...extra }, NOW));
      expect(err.code).toBe('INVALID_INPUT');
      expect(err.data.field).toBe(field);
      expect(err.message).toMatch(/lone UTF-16 surrogate/);
    }
    // A surrogate pair (an emoji) and NUL are text.
    expect(normalizeMemory({ namespace: 'a', id: 'x\u{1F600}', text: 'a\u0000b 😀' }, NOW).id).toBe('x😀');
  });

  it('says the same as every read does, and why a write cannot take one', () => {
    const err = cairnErrorFrom(() => normalizeMemory({ namespace: 'a', text: 'lone \ud800' }, NOW));
    expect(err.message).toBe(
      'text holds a lone UTF-16 surrogate: not valid Unicode text, it would be stored altered',
    );
  });

  it('refuses "." and ".." as ids: a URL path cannot address them', () => {
    for (const id of ['.', '..']) {
      const err = cairnErrorFrom(() => normalizeMemory({ namespace: 'a', id, text: 'x' }, NOW));
      expect(err.data.field).toBe('id');
    }
    expect(normalizeMemory({ namespace: 'a', id: '...', text: 'x' }, NOW).id).toBe('...');
  });

  it('says a date before 1970 is too early, not that it is not a date', () => {
    const err = cairnErrorFrom(() => normalizeMemory({ namespace: 'a', text: 'x', ts: '1800-01-01' }, NOW));
    expect(err.data.field).toBe('ts');
    expect(err.message).toMatch(/before 1970/);
  });
});

describe('normalizeMemory: limits', () => {
  it('refuses text over the byte limit and names the field', () => {
    const err = cairnErrorFrom(() =>
      normalizeMemory({ namespace: 'a', text: 'a'.repeat(DEFAULT_INPUT_LIMITS.maxTextBytes + 1) }, NOW),
    );
    expect(err.code).toBe('INVALID_INPUT');
    expect(err.data.field).toBe('text');
  });

  it('accepts text of exactly the byte limit', () => {
    const text = 'a'.repeat(DEFAULT_INPUT_LIMITS.maxTextBytes);
    expect(normalizeMemory({ namespace: 'a', text }, NOW).text).toBe(text);
  });

  it('counts the limit in UTF-8 bytes, not characters', () => {
    // 'é' is 2 bytes of UTF-8: half the limit plus one in characters is over the limit in bytes.
    const text = 'é'.repeat(DEFAULT_INPUT_LIMITS.maxTextBytes / 2 + 1);
    expect(text.length).toBeLessThan(DEFAULT_INPUT_LIMITS.maxTextBytes);
    const err = cairnErrorFrom(() => normalizeMemory({ namespace: 'a', text }, NOW));
    expect(err.data.field).toBe('text');
  });

  it('refuses too many tags and an empty tag, naming the tag position', () => {
    const many = Array.from({ length: DEFAULT_INPUT_LIMITS.maxTags + 1 }, (_, i) => `t${i}`);
    expect(
      cairnErrorFrom(() => normalizeMemory({ namespace: 'a', text: 'x', tags: many }, NOW)).data.field,
    ).toBe('tags');
    expect(
      cairnErrorFrom(() => normalizeMemory({ namespace: 'a', text: 'x', tags: ['ok', ''] }, NOW)).data.field,
    ).toBe('tags.1');
  });

  it('refuses meta that serialises past its byte limit', () => {
    const meta = { blob: 'x'.repeat(DEFAULT_INPUT_LIMITS.maxMetaBytes) };
    expect(cairnErrorFrom(() => normalizeMemory({ namespace: 'a', text: 'x', meta }, NOW)).data.field).toBe(
      'meta',
    );
  });
});

describe('normalizeMemory: importance', () => {
  it('accepts importance at both ends of [0, 1]', () => {
    expect(normalizeMemory({ namespace: 'a', text: 'x', importance: 0 }, NOW).importance).toBe(0);
    expect(normalizeMemory({ namespace: 'a', text: 'x', importance: 1 }, NOW).importance).toBe(1);
  });

  it('refuses importance outside [0, 1] and names the field', () => {
    for (const importance of [-0.01, 1.01, 5]) {
      const err = cairnErrorFrom(() => normalizeMemory({ namespace: 'a', text: 'x', importance }, NOW));
      expect(err.code).toBe('INVALID_INPUT');
      expect(err.data.field).toBe('importance');
    }
  });

  it('defaults importance to the neutral value', () => {
    expect(normalizeMemory({ namespace: 'a', text: 'x' }, NOW).importance).toBe(DEFAULT_IMPORTANCE);
  });
});

describe('normalizeMemory: normalisation', () => {
  it('fills defaults for every optional field', () => {
    expect(normalizeMemory({ namespace: 'a', text: 'hello' }, NOW)).toMatchObject({
      kind: 'observation',
      title: null,
      session: null,
      agent: null,
      tags: [],
      meta: {},
      supersedes: [],
    });
  });

  it('turns a blank title into null', () => {
    expect(normalizeMemory({ namespace: 'a', text: 'x', title: '   ' }, NOW).title).toBeNull();
  });

  it('removes duplicate tags, keeping first-seen order', () => {
    expect(normalizeMemory({ namespace: 'a', text: 'x', tags: ['b', 'a', 'b', 'c', 'a'] }, NOW).tags).toEqual(
      ['b', 'a', 'c'],
    );
  });

  it('keeps a caller-given id', () => {
    expect(normalizeMemory({ namespace: 'a', id: 'mine', text: 'x' }, NOW).id).toBe('mine');
  });
});

describe('normalizeMemory: generated ids', () => {
  it('generates the same id for the same content', () => {
    const a = normalizeMemory({ namespace: 'a', text: 'the build is green', kind: 'fact' }, NOW);
    const b = normalizeMemory({ namespace: 'a', text: 'the build is green', kind: 'fact' }, NOW + 1000);
    expect(a.id).toBe(b.id);
    expect(a.id).toMatch(/^m_[0-9a-f]{24}$/);
    expect(a.id).toBe(generatedId(contentHash('fact', null, 'the build is green')));
  });

  it('generates the same id whatever the session, agent, ts or tags', () => {
    const a = normalizeMemory({ namespace: 'a', text: 'same words' }, NOW);
    const b = normalizeMemory(
      {
        namespace: 'a',
        text: 'same words',
        session: 's1',
        agent: 'bot',
        ts: 5,
        tags: ['x'],
        importance: 0.9,
      },
      NOW,
    );
    expect(b.id).toBe(a.id);
    expect(b.contentHash).toBe(a.contentHash);
  });

  it('generates different ids when text, kind or title differ', () => {
    const base = normalizeMemory({ namespace: 'a', text: 'same words' }, NOW).id;
    expect(normalizeMemory({ namespace: 'a', text: 'other words' }, NOW).id).not.toBe(base);
    expect(normalizeMemory({ namespace: 'a', text: 'same words', kind: 'fact' }, NOW).id).not.toBe(base);
    expect(normalizeMemory({ namespace: 'a', text: 'same words', title: 'T' }, NOW).id).not.toBe(base);
  });

  it('does not confuse title and text boundaries in the content hash', () => {
    expect(contentHash('k', 'ab', 'c')).not.toBe(contentHash('k', 'a', 'bc'));
    expect(contentHash('k', null, 'x')).toBe(contentHash('k', '', 'x'));
  });
});

describe('normalizeMemory: arbitrary JSON input', () => {
  const field = fc.constantFrom(
    'id',
    'namespace',
    'kind',
    'text',
    'title',
    'session',
    'agent',
    'ts',
    'tags',
    'meta',
    'importance',
    'supersedes',
    'extra',
  );

  it('either normalises or throws INVALID_INPUT, never anything else', () => {
    fc.assert(
      fc.property(fc.dictionary(field, fc.jsonValue(), { maxKeys: 8 }), (input) => {
        try {
          const m = normalizeMemory(input, NOW);
          expect(typeof m.id).toBe('string');
          expect(m.text.trim().length).toBeGreaterThan(0);
          expect(m.importance).toBeGreaterThanOrEqual(0);
          expect(m.importance).toBeLessThanOrEqual(1);
          expect(Number.isFinite(m.ts)).toBe(true);
          expect(new Set(m.tags).size).toBe(m.tags.length);
        } catch (err) {
          expect(err).toBeInstanceOf(CairnError);
          expect((err as CairnError).code).toBe('INVALID_INPUT');
        }
      }),
      { numRuns: 500 },
    );
  });

  it('accepts any non-blank text in a valid namespace', () => {
    fc.assert(
      fc.property(
        fc.string({ unit: 'grapheme', minLength: 1, maxLength: 200 }).filter((s) => s.trim().length > 0),
        (text) => {
          const m = normalizeMemory({ namespace: 'ns', text }, NOW);
          expect(m.text).toBe(text);
          expect(normalizeMemory({ namespace: 'ns', text }, NOW + 1).id).toBe(m.id);
        },
      ),
    );
  });
});
