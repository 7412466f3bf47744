import { embeddingSpaceOf, type MemoryInput, type NormalizedMemory, normalizeMemory } from '@cairn/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mem, openTempStore, rawRow, searchIds, T0, type TempStore } from './helpers.js';

let t: TempStore;
beforeEach(() => {
  t = openTempStore('cairn-writer-');
});
afterEach(() => {
  t.cleanup();
});

const space = embeddingSpaceOf({ modelId: 'test', dimensions: 3 });

/** Embeds everything pending with a constant vector and returns how many memories were pending. */
function embedPending(): number {
  const pending = t.store.embeddings.pending(space.id, 1000);
  if (pending.length === 0) return 0;
  t.store.embeddings.put(
    space,
    pending.map((memory) => ({ memory, vector: new Float32Array([1, 0, 0]) })),
    pending.at(-1)!.changeSeq,
  );
  return pending.length;
}

describe('MemoryWriter: idempotent ingest', () => {
  const batch = () => [
    mem({ id: 'a', text: 'first memory', tags: ['x'] }),
    mem({ id: 'b', text: 'second memory', session: 's1' }),
    mem({ text: 'an id-less memory gets its id from its content' }),
  ];

  it('stores new memories', () => {
    const res = t.store.write(batch());
    expect(res.map((r) => r.status)).toEqual(['stored', 'stored', 'stored']);
    expect(new Set(res.map((r) => r.key)).size).toBe(3);
    expect(t.store.countLive('ns')).toBe(3);
  });

  it('reports every memory unchanged when the same batch is written again, and writes nothing', () => {
    const first = t.store.write(batch());
    const before = first.map((r) => rawRow(t.store, 'ns', r.id));
    const changesBefore = t.store.db.prepare('SELECT total_changes()').pluck().get();
    const second = t.store.write(batch());
    expect(second.map((r) => r.status)).toEqual(['unchanged', 'unchanged', 'unchanged']);
    expect(second.map((r) => r.key)).toEqual(first.map((r) => r.key));
    expect(first.map((r) => rawRow(t.store, 'ns', r.id))).toEqual(before);
    expect(t.store.db.prepare('SELECT total_changes()').pluck().get()).toBe(changesBefore);
    expect(t.store.countLive('ns')).toBe(3);
  });

  it('reports updated and moves change_seq when the text changes', () => {
    t.store.write(batch());
    const before = rawRow(t.store, 'ns', 'a');
    const [res] = t.store.write([mem({ id: 'a', text: 'first memory, corrected', tags: ['x'] })]);
    expect(res?.status).toBe('updated');
    expect(res?.key).toBe(before.key);
    expect(rawRow(t.store, 'ns', 'a').change_seq).toBeGreaterThan(before.change_seq);
    expect(t.store.get('ns', ['a']).memories[0]?.text).toBe('first memory, corrected');
  });

  it('reports updated without a new change_seq when only metadata changes', () => {
    t.store.write(batch());
    const before = rawRow(t.store, 'ns', 'a');
    const changes: Array<Omit<MemoryInput, 'namespace' | 'text'>> = [
      { tags: ['x', 'y'] },
      { importance: 0.9 },
      { session: 's9' },
      { agent: 'bot' },
      { meta: { source: 'slack' } },
      { ts: 12345 },
    ];
    for (const change of changes) {
      const [res] = t.store.write([mem({ id: 'a', text: 'first memory', tags: ['x'], ...change })]);
      expect(res?.status).toBe('updated');
      expect(rawRow(t.store, 'ns', 'a').change_seq).toBe(before.change_seq);
    }
    const stored = t.store.get('ns', ['a']).memories[0]!;
    expect(stored).toMatchObject({ ts: 12345, meta: {}, tags: ['x'], importance: 0.5 });
  });

  it('does not re-embed a memory whose metadata alone changed, but does re-embed changed text', () => {
    t.store.spaces.ensureSpace(space);
    t.store.write(batch());
    expect(embedPending()).toBe(3);
    t.store.write([mem({ id: 'a', text: 'first memory', tags: ['x', 'new-tag'], importance: 1 })]);
    expect(t.store.embeddings.pending(space.id, 10)).toEqual([]);
    t.store.write([mem({ id: 'a', text: 'first memory, reworded', tags: ['x', 'new-tag'], importance: 1 })]);
    expect(t.store.embeddings.pending(space.id, 10).map((p) => p.key)).toEqual([
      rawRow(t.store, 'ns', 'a').key,
    ]);
  });

  it('keeps the stored ts when a memory is re-sent without one, so re-running a file is a no-op', () => {
    t.store.write([normalizeMemory({ namespace: 'ns', id: 'a', text: 'no ts given' }, T0)]);
    const [res] = t.store.write([
      normalizeMemory({ namespace: 'ns', id: 'a', text: 'no ts given' }, T0 + 60_000),
    ]);
    expect(res?.status).toBe('unchanged');
    expect(t.store.get('ns', ['a']).memories[0]?.ts).toBe(T0);
  });

  it('dates a deleted memory written again without a ts by the new write, not by the dead one', () => {
    t.store.write([normalizeMemory({ namespace: 'ns', id: 'a', text: 'old news' }, T0)]);
    expect(t.store.delete('ns', 'a')).toBe(true);
    t.store.write([normalizeMemory({ namespace: 'ns', id: 'a', text: 'old news' }, T0 + 86_400_000)]);
    expect(t.store.get('ns', ['a']).memories[0]?.ts).toBe(T0 + 86_400_000);
  });

  it('takes an explicitly given ts over the stored one', () => {
    t.store.write([normalizeMemory({ namespace: 'ns', id: 'a', text: 'x' }, T0)]);
    const [res] = t.store.write([mem({ id: 'a', text: 'x', ts: T0 + 5 })]);
    expect(res?.status).toBe('updated');
    expect(t.store.get('ns', ['a']).memories[0]?.ts).toBe(T0 + 5);
  });

  it('treats the same id in two namespaces as two memories', () => {
    const res = t.store.write([
      mem({ id: 'same', text: 'one' }),
      mem({ id: 'same', namespace: 'other', text: 'one' }),
    ]);
    expect(res.map((r) => r.status)).toEqual(['stored', 'stored']);
    expect(res[0]?.key).not.toBe(res[1]?.key);
  });

  it('applies a repeated id within one batch as an update to the first', () => {
    const res = t.store.write([mem({ id: 'a', text: 'draft' }), mem({ id: 'a', text: 'final' })]);
    expect(res.map((r) => r.status)).toEqual(['stored', 'updated']);
    expect(t.store.get('ns', ['a']).memories[0]?.text).toBe('final');
  });

  it('gives later writes larger change_seq values, also across batches', () => {
    t.store.write([mem({ id: 'a', text: 'one' }), mem({ id: 'b', text: 'two' })]);
    t.store.write([mem({ id: 'c', text: 'three' })]);
    const seqs = ['a', 'b', 'c'].map((id) => rawRow(t.store, 'ns', id).change_seq);
    expect(seqs[0]).toBeLessThan(seqs[1]!);
    expect(seqs[1]).toBeLessThan(seqs[2]!);
  });

  it('writes a batch atomically: a failing memory leaves none of the batch behind', () => {
    const bad = { ...mem({ id: 'bad', text: 'x' }), text: null } as unknown as NormalizedMemory;
    expect(() => t.store.write([mem({ id: 'good', text: 'fine' }), bad])).toThrow();
    expect(t.store.countLive('ns')).toBe(0);
    expect(t.store.get('ns', ['good']).missing).toEqual(['good']);
  });

  it('returns an empty result for an empty batch', () => {
    expect(t.store.write([])).toEqual([]);
  });

  it('revives a deleted memory when it is written again, even unchanged, and queues it for embedding', () => {
    t.store.spaces.ensureSpace(space);
    t.store.write([mem({ id: 'a', text: 'come back' })]);
    embedPending();
    expect(t.store.delete('ns', 'a')).toBe(true);
    expect(t.store.get('ns', ['a']).missing).toEqual(['a']);
    const [res] = t.store.write([mem({ id: 'a', text: 'come back' })]);
    expect(res?.status).toBe('updated');
    expect(t.store.get('ns', ['a']).memories).toHaveLength(1);
    expect(searchIds(t.store, 'ns', 'come back')).toEqual(['a']);
    expect(t.store.embeddings.pending(space.id, 10)).toHaveLength(1);
  });
});

describe('MemoryWriter: what a delete does with what its memory hid', () => {
  const v = (id: string, ts: number, supersedes: string[] = []) =>
    mem({ id, text: `the release train leaves on ${id}`, ts, supersedes });

  it('gives back what the newest version superseded, and keeps older ones behind a newer one', () => {
    t.store.write([v('v1', T0), v('v2', T0 + 1, ['v1']), v('v3', T0 + 2, ['v2'])]);
    expect(searchIds(t.store, 'ns', 'release train')).toEqual(['v3']);
    // A middle version gone: v1 stays behind v3 (it came back beside it).
    expect(t.store.delete('ns', 'v2')).toBe(true);
    expect(searchIds(t.store, 'ns', 'release train')).toEqual(['v3']);
    expect(t.store.get('ns', ['v1'], { touch: false }).memories[0]!.supersededBy).toBe('v3');
    // The newest gone: the one before it answers.
    expect(t.store.delete('ns', 'v3')).toBe(true);
    expect(searchIds(t.store, 'ns', 'release train')).toEqual(['v1']);
  });

  it('writes a deleted memory again as a new one, not hidden behind what superseded it before', () => {
    t.store.write([v('b', T0), v('a', T0 + 1, ['b'])]);
    expect(t.store.delete('ns', 'b')).toBe(true);
    expect(t.store.delete('ns', 'a')).toBe(true);
    t.store.write([v('b', T0 + 2)]);
    expect(searchIds(t.store, 'ns', 'release train')).toEqual(['b']);
  });

  it('takes a chain of thousands of versions with it in a loop, not a recursion, and the counts follow', () => {
    const n = 5_000;
    t.store.write(Array.from({ length: n }, (_, i) => v(`s${i}`, T0 + i, i === 0 ? [] : [`s${i - 1}`])));
    const newest = `s${n - 1}`;
    const takes = () => true;
    expect(t.store.takenWith('ns', newest, takes)).toHaveLength(n - 1);
    // Recursing once per version overflowed the stack between 2,000 and 3,000, and nothing was deleted.
    const deleted = t.store.deleteMany('ns', [newest], takes);
    expect(deleted).toHaveLength(n);
    expect(deleted[0]).toBe('s0');
    expect(deleted.at(-1)).toBe(newest);
    expect(t.store.countLive('ns')).toBe(0);
  });

  it('writes one file twice to the same state, a deleted version in it or not', () => {
    t.store.write([v('v1', T0), v('v2', T0 + 1, ['v1'])]);
    expect(t.store.delete('ns', 'v1')).toBe(true);
    const supersededBy = () => t.store.get('ns', ['v1'], { touch: false }).memories[0]!.supersededBy;
    t.store.write([v('v2', T0 + 1, ['v1']), v('v1', T0)]);
    const first = supersededBy();
    t.store.write([v('v2', T0 + 1, ['v1']), v('v1', T0)]);
    expect(supersededBy()).toBe(first);
    // v2 is live and still says it replaces v1.
    expect(first).toBe('v2');
  });

  it('gives back the copies merged into a deleted middle of a chain as copies, for the job to merge again', () => {
    t.store.write([
      mem({ id: 'a', text: 'disk almost full', ts: T0 }),
      mem({ id: 'b', text: 'disk almost full', ts: T0 + 1 }),
      mem({ id: 'c', text: 'disk almost full', ts: T0 + 2 }),
    ]);
    const key = (id: string) => t.store.get('ns', [id], { touch: false }).memories[0]!.key;
    t.store.consolidations.merge([{ key: key('a'), byKey: key('b'), cosine: 1 }]);
    t.store.consolidations.merge([{ key: key('b'), byKey: key('c'), cosine: 1 }]);
    expect(t.store.delete('ns', 'b')).toBe(true);
    // Re-pointed to c, a's merge became a supersession no undo could reach, and an export made it permanent.
    expect(t.store.get('ns', ['a'], { touch: false }).memories[0]!.supersededBy).toBeNull();
    expect(t.store.consolidations.list('ns')).toEqual([]);
  });

  it('takes only what it is told to, and gives the rest back', () => {
    t.store.write([
      mem({ id: 'd1', kind: 'decision', text: 'we ship on fridays', ts: T0 }),
      mem({ id: 'o1', kind: 'observation', text: 'we ship on thursdays', ts: T0 + 1, supersedes: ['d1'] }),
    ]);
    expect(t.store.deleteMany('ns', ['o1'], (h) => h.kind === 'observation')).toEqual(['o1']);
    expect(searchIds(t.store, 'ns', 'ship')).toEqual(['d1']);
  });
});

describe('MemoryWriter: supersedes', () => {
  it('marks the superseded memory with the id of its replacement', () => {
    t.store.write([mem({ id: 'old', text: 'the deploy target is heroku' })]);
    t.store.write([mem({ id: 'new', text: 'the deploy target is fly', supersedes: ['old'] })]);
    expect(rawRow(t.store, 'ns', 'old').superseded_by).toBe('new');
    expect(rawRow(t.store, 'ns', 'new').superseded_by).toBeNull();
  });

  it('supersedes within the writer’s namespace only', () => {
    t.store.write([mem({ id: 'old', text: 'x' }), mem({ id: 'old', namespace: 'other', text: 'x' })]);
    t.store.write([mem({ id: 'new', text: 'y', supersedes: ['old'] })]);
    expect(rawRow(t.store, 'ns', 'old').superseded_by).toBe('new');
    expect(rawRow(t.store, 'other', 'old').superseded_by).toBeNull();
  });

  it('never lets a memory supersede itself', () => {
    t.store.write([mem({ id: 'self', text: 'x', supersedes: ['self'] })]);
    expect(rawRow(t.store, 'ns', 'self').superseded_by).toBeNull();
  });

  it('keeps the first replacement when a memory is superseded twice', () => {
    t.store.write([mem({ id: 'old', text: 'v1' })]);
    t.store.write([mem({ id: 'v2', text: 'v2', supersedes: ['old'] })]);
    t.store.write([mem({ id: 'v3', text: 'v3', supersedes: ['old'] })]);
    expect(rawRow(t.store, 'ns', 'old').superseded_by).toBe('v2');
  });

  it('ignores supersedes ids that do not exist', () => {
    const [res] = t.store.write([mem({ id: 'new', text: 'x', supersedes: ['ghost'] })]);
    expect(res?.status).toBe('stored');
    expect(t.store.countLive('ns')).toBe(1);
  });
});

describe('MemoryWriter: a batch written under a receipt', () => {
  it('written again under the same receipt, writes nothing and answers what the first write did', () => {
    const batch = [mem({ id: 'a', text: 'first memory' }), mem({ id: 'b', text: 'second memory' })];
    const first = t.store.write(batch, { receipt: 'cap-1@1' });
    expect(first.map((r) => r.status)).toEqual(['stored', 'stored']);
    // A later write changes a; the receipted batch run again must not put its older text back.
    expect(t.store.write([mem({ id: 'a', text: 'first memory, corrected' })])[0]!.status).toBe('updated');
    const again = t.store.write(batch, { receipt: 'cap-1@1' });
    expect(again).toEqual(first);
    expect(t.store.get('ns', ['a']).memories[0]!.text).toBe('first memory, corrected');
    // Without a receipt, or under another one, the same batch is an ordinary write.
    expect(t.store.write(batch, { receipt: 'cap-1@2' }).map((r) => r.status)).toEqual([
      'updated',
      'unchanged',
    ]);
  });
});
