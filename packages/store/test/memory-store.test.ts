import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { cairnErrorFrom, mem, openTempStore, rawRow, T0, type TempStore } from './helpers.js';

let t: TempStore;
beforeEach(() => {
  t = openTempStore('cairn-memstore-');
});
afterEach(() => {
  t.cleanup();
});

const MIN = 60_000;
const ids = (ms: ReadonlyArray<{ id: string }>) => ms.map((m) => m.id);

describe('MemoryStore.timeline', () => {
  beforeEach(() => {
    // Two interleaved sessions plus session-less notes, written out of time order.
    t.store.write([
      mem({ id: 's1-3', session: 's1', text: 'three', ts: T0 + 30 * MIN }),
      mem({ id: 's2-1', session: 's2', text: 'other one', ts: T0 + 5 * MIN }),
      mem({ id: 's1-1', session: 's1', text: 'one', ts: T0 + 10 * MIN }),
      mem({ id: 'note-1', text: 'note one', ts: T0 + 12 * MIN }),
      mem({ id: 's1-2', session: 's1', text: 'two', ts: T0 + 20 * MIN }),
      mem({ id: 's2-2', session: 's2', text: 'other two', ts: T0 + 25 * MIN }),
      mem({ id: 's1-4', session: 's1', text: 'four', ts: T0 + 40 * MIN }),
      mem({ id: 'note-2', text: 'note two', ts: T0 + 35 * MIN }),
      mem({ id: 's1-5', session: 's1', text: 'five', ts: T0 + 50 * MIN }),
      mem({ id: 'elsewhere', namespace: 'other', session: 's1', text: 'x', ts: T0 + 21 * MIN }),
    ]);
  });

  it("orders the anchor's session by time and stays within the session", () => {
    const tl = t.store.timeline('ns', 's1-3', 10, 10);
    expect(tl.scope).toBe('session');
    expect(tl.anchor.id).toBe('s1-3');
    expect(ids(tl.before)).toEqual(['s1-1', 's1-2']);
    expect(ids(tl.after)).toEqual(['s1-4', 's1-5']);
  });

  it('returns at most the requested number before and after, nearest to the anchor', () => {
    const tl = t.store.timeline('ns', 's1-3', 1, 1);
    expect(ids(tl.before)).toEqual(['s1-2']);
    expect(ids(tl.after)).toEqual(['s1-4']);
    const none = t.store.timeline('ns', 's1-3', 0, 0);
    expect(none.before).toEqual([]);
    expect(none.after).toEqual([]);
  });

  it('treats negative counts as zero', () => {
    const tl = t.store.timeline('ns', 's1-3', -5, -1);
    expect(tl.before).toEqual([]);
    expect(tl.after).toEqual([]);
  });

  it('uses the whole namespace when the anchor has no session', () => {
    const tl = t.store.timeline('ns', 'note-1', 2, 3);
    expect(tl.scope).toBe('namespace');
    expect(ids(tl.before)).toEqual(['s2-1', 's1-1']);
    expect(ids(tl.after)).toEqual(['s1-2', 's2-2', 's1-3']);
    expect(ids([...tl.before, ...tl.after])).not.toContain('elsewhere');
  });

  it('orders memories with equal timestamps by their key', () => {
    t.store.write([
      mem({ id: 'tie-a', session: 'tie', text: 'a', ts: T0 }),
      mem({ id: 'tie-b', session: 'tie', text: 'b', ts: T0 }),
      mem({ id: 'tie-c', session: 'tie', text: 'c', ts: T0 }),
    ]);
    const tl = t.store.timeline('ns', 'tie-b', 5, 5);
    expect(ids(tl.before)).toEqual(['tie-a']);
    expect(ids(tl.after)).toEqual(['tie-c']);
  });

  it('shows superseded memories, which are history, but not deleted ones', () => {
    t.store.write([
      mem({ id: 's1-2b', session: 's1', text: 'two, revised', ts: T0 + 21 * MIN, supersedes: ['s1-2'] }),
    ]);
    t.store.delete('ns', 's1-4');
    const tl = t.store.timeline('ns', 's1-3', 10, 10);
    expect(ids(tl.before)).toEqual(['s1-1', 's1-2', 's1-2b']);
    expect(tl.before[1]?.supersededBy).toBe('s1-2b');
    expect(ids(tl.after)).toEqual(['s1-5']);
  });

  it('refuses an unknown or deleted anchor with NOT_FOUND naming the anchor', () => {
    const unknown = cairnErrorFrom(() => t.store.timeline('ns', 'nope', 1, 1));
    expect(unknown.code).toBe('NOT_FOUND');
    expect(unknown.data.field).toBe('anchor');
    t.store.delete('ns', 's1-1');
    expect(cairnErrorFrom(() => t.store.timeline('ns', 's1-1', 1, 1)).code).toBe('NOT_FOUND');
    expect(cairnErrorFrom(() => t.store.timeline('other', 's1-3', 1, 1)).code).toBe('NOT_FOUND');
  });
});

describe('MemoryStore.get', () => {
  beforeEach(() => {
    t.store.write([
      mem({ id: 'a', text: 'alpha' }),
      mem({ id: 'b', text: 'beta' }),
      mem({ id: 'c', text: 'gamma' }),
    ]);
  });

  it('returns memories in the order asked and lists the missing ids', () => {
    const res = t.store.get('ns', ['c', 'nope', 'a', 'b', 'gone']);
    expect(ids(res.memories)).toEqual(['c', 'a', 'b']);
    expect(res.missing).toEqual(['nope', 'gone']);
  });

  it('bumps access_count and last_accessed on every read', () => {
    const first = t.store.get('ns', ['a']).memories[0]!;
    expect(first.accessCount).toBe(1);
    expect(first.lastAccessed).not.toBeNull();
    t.store.get('ns', ['a', 'b']);
    const peek = t.store.get('ns', ['a', 'b', 'c'], { touch: false });
    expect(peek.memories.map((m) => m.accessCount)).toEqual([2, 1, 0]);
    expect(peek.memories[2]?.lastAccessed).toBeNull();
  });

  it('counts a repeated id as one access', () => {
    const res = t.store.get('ns', ['a', 'a']);
    expect(ids(res.memories)).toEqual(['a', 'a']);
    expect(t.store.get('ns', ['a'], { touch: false }).memories[0]?.accessCount).toBe(1);
  });

  it('does not bump anything with touch: false', () => {
    t.store.get('ns', ['a'], { touch: false });
    expect(t.store.get('ns', ['a'], { touch: false }).memories[0]).toMatchObject({
      accessCount: 0,
      lastAccessed: null,
    });
  });

  it("treats other namespaces' and deleted memories as missing", () => {
    t.store.delete('ns', 'b');
    expect(t.store.get('other', ['a']).missing).toEqual(['a']);
    expect(t.store.get('ns', ['b']).missing).toEqual(['b']);
  });

  it('returns every stored field', () => {
    t.store.write([
      mem({
        id: 'full',
        kind: 'fact',
        title: 'Title',
        text: 'body',
        session: 's',
        agent: 'bot',
        ts: T0 + 5,
        tags: ['x', 'y'],
        meta: { n: 1, nested: { ok: true } },
        importance: 0.8,
      }),
    ]);
    const m = t.store.get('ns', ['full'], { touch: false }).memories[0]!;
    expect(m).toMatchObject({
      id: 'full',
      namespace: 'ns',
      kind: 'fact',
      title: 'Title',
      text: 'body',
      session: 's',
      agent: 'bot',
      ts: T0 + 5,
      tags: ['x', 'y'],
      meta: { n: 1, nested: { ok: true } },
      importance: 0.8,
      supersededBy: null,
      accessCount: 0,
    });
    expect(m.contentHash).toMatch(/^[0-9a-f]{32}$/);
  });
});

describe('MemoryStore.delete', () => {
  it('tombstones a memory once and reports whether it did', () => {
    t.store.write([mem({ id: 'a', text: 'x' })]);
    expect(t.store.delete('ns', 'a')).toBe(true);
    expect(t.store.delete('ns', 'a')).toBe(false);
    expect(t.store.delete('ns', 'never')).toBe(false);
    expect(rawRow(t.store, 'ns', 'a').deleted_at).not.toBeNull();
  });
});

describe('MemoryStore: key lookups and counts', () => {
  it('restricts liveByKeys and filterKeys to one namespace and to live memories', () => {
    const res = t.store.write([
      mem({ id: 'a', text: 'x', kind: 'fact' }),
      mem({ id: 'b', text: 'y' }),
      mem({ id: 'c', namespace: 'other', text: 'z' }),
      mem({ id: 'd', text: 'w', supersedes: ['b'] }),
    ]);
    const keys = res.map((r) => r.key);
    expect([...t.store.liveByKeys('ns', keys).values()].map((m) => m.id).sort()).toEqual(['a', 'd']);
    expect([...t.store.filterKeys('ns', keys, { kinds: ['fact'] }).keys()]).toEqual([res[0]!.key]);
    expect(t.store.liveByKeys('ns', []).size).toBe(0);
  });

  it('handles key lists longer than one SQL chunk', () => {
    const res = t.store.write(Array.from({ length: 1200 }, (_, i) => mem({ id: `m${i}`, text: `n${i}` })));
    expect(
      t.store.liveByKeys(
        'ns',
        res.map((r) => r.key),
      ).size,
    ).toBe(1200);
  });

  it('lists keys matching filters up to a limit', () => {
    t.store.write(
      Array.from({ length: 10 }, (_, i) => mem({ id: `m${i}`, text: `n${i}`, tags: i % 2 ? ['odd'] : [] })),
    );
    expect(t.store.keysMatching('ns', { tags: ['odd'] }, 100)).toHaveLength(5);
    expect(t.store.keysMatching('ns', {}, 3)).toHaveLength(3);
  });

  it('counts live, superseded and deleted memories per namespace', () => {
    t.store.write([
      mem({ id: 'a', text: '1' }),
      mem({ id: 'b', text: '2' }),
      mem({ id: 'c', text: '3', supersedes: ['a'] }),
      mem({ id: 'd', namespace: 'zz', text: '4' }),
    ]);
    t.store.delete('ns', 'b');
    expect(t.store.namespaces()).toEqual([
      { namespace: 'ns', live: 1, superseded: 1, deleted: 1 },
      { namespace: 'zz', live: 1, superseded: 0, deleted: 0 },
    ]);
    expect(t.store.countLive('ns')).toBe(1);
    expect(t.store.countLive('nobody')).toBe(0);
    // What an empty search asks: existence, not a count.
    expect(t.store.hasMatching('ns', {})).toBe(true);
    expect(t.store.hasMatching('ns', { kinds: ['never'] })).toBe(false);
    expect(t.store.hasMatching('nobody', {})).toBe(false);
    t.store.delete('zz', 'd');
    expect(t.store.hasMatching('zz', {})).toBe(false);
  });

  it('closes idempotently', () => {
    t.store.close();
    expect(() => t.store.close()).not.toThrow();
  });
});

describe('MemoryStore.compactLexicalIndex', () => {
  it('merges the segments left by many small writes without changing any result', async () => {
    for (let b = 0; b < 40; b++) {
      t.store.write(
        Array.from({ length: 5 }, (_, i) =>
          mem({ id: `b${b}-${i}`, text: `batch ${b} note ${i} about redis` }),
        ),
      );
    }
    const search = () =>
      t.store.lexical.searchLexical({ namespace: 'ns', query: 'redis note', filters: {}, limit: 50 });
    const before = search().candidates;
    expect(await t.store.compactLexicalIndex(50)).toBeGreaterThan(1);
    // One step per FTS5 table (memories, named fields) when there is nothing left to merge.
    expect(await t.store.compactLexicalIndex(50)).toBe(2);
    expect(search().candidates).toEqual(before);
    t.store.db.exec("INSERT INTO memories_fts (memories_fts) VALUES ('integrity-check')");
  });
});
