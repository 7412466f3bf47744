import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { asFactMemory, factId } from '../src/index.js';
import { cairnErrorFrom as thrown } from './helpers.js';

describe('fact ids', () => {
  it('keep the readable form for a slot without a colon, so facts stored before keep their ids', () => {
    expect(factId('prefs', 'editor')).toBe('fact:prefs:editor');
    expect(factId('user', 'home:city')).toBe('fact:user:home:city');
  });

  it('never give two (slot, key) pairs one id: (user:home, city) and (user, home:city) stay apart', () => {
    expect(factId('user:home', 'city')).not.toBe(factId('user', 'home:city'));
    const part = fc.string({ unit: fc.constantFrom('a', ':', 'b', '1', '%'), minLength: 1, maxLength: 8 });
    fc.assert(
      fc.property(part, part, part, part, (s1, k1, s2, k2) => {
        fc.pre(s1 !== s2 || k1 !== k2);
        expect(factId(s1, k1)).not.toBe(factId(s2, k2));
      }),
      { numRuns: 2_000 },
    );
  });

  it('fit the id limit for the longest slot and key the API takes (64 and 128 characters)', () => {
    expect(factId(':'.repeat(64), 'k'.repeat(128)).length).toBeLessThanOrEqual(256);
  });
});

describe('asFactMemory', () => {
  it('derives the id, defaults the kind to fact and records slot and key in meta', () => {
    expect(asFactMemory({ text: 'vim', slot: 'prefs', key: 'editor', meta: { by: 'me' } })).toEqual({
      text: 'vim',
      id: 'fact:prefs:editor',
      kind: 'fact',
      meta: { by: 'me', slot: 'prefs', key: 'editor' },
    });
    expect(asFactMemory({ text: 'plain', id: 'x' })).toEqual({ text: 'plain', id: 'x' });
  });

  it('refuses half a fact, an id beside slot/key, and a slot or key that is not a string, by field', () => {
    expect(thrown(() => asFactMemory({ slot: 'a' }, 'memories.2')).data.field).toBe('memories.2.key');
    expect(thrown(() => asFactMemory({ key: 'a' })).data.field).toBe('slot');
    expect(thrown(() => asFactMemory({ slot: 'a', key: 'b', id: 'c' })).data.field).toBe('id');
    expect(thrown(() => asFactMemory({ slot: 7, key: 'b' })).data.field).toBe('slot');
    expect(thrown(() => asFactMemory({ slot: 'a', key: ' ' })).code).toBe('INVALID_INPUT');
    expect(thrown(() => asFactMemory({ slot: 's'.repeat(65), key: 'k' })).data.field).toBe('slot');
    expect(thrown(() => asFactMemory({ slot: 's', key: 'k'.repeat(129) })).data.field).toBe('key');
    expect(thrown(() => asFactMemory({ slot: 's', key: 'k', meta: 'x' })).data.field).toBe('meta');
    expect(thrown(() => asFactMemory({ slot: 's', key: 'k', meta: [1] })).data.field).toBe('meta');
  });
});
