import { embeddingSpaceOf } from '@cairn/core';
import { MemoryStore } from '@cairn/store';
import { afterEach, describe, expect, it } from 'vitest';
import { mem, openTempStore, type TempStore } from './helpers.js';

// The consolidation job's store: real SQLite, vectors put as the embed stage puts them.

let t: TempStore | undefined;
afterEach(() => {
  t?.cleanup();
  t = undefined;
});

const space = embeddingSpaceOf({ modelId: 'test-model', dimensions: 4 });

function embedPending() {
  const store = t!.store;
  const pending = store.embeddings.pending(space.id, 1_000);
  if (pending.length === 0) return;
  store.embeddings.put(
    space,
    pending.map((memory) => ({ memory, vector: new Float32Array([1, 0, 0, 0]) })),
    Math.max(...pending.map((m) => m.changeSeq)),
  );
}

describe('ConsolidationStore', () => {
  it('finds a text’s copies by its hash, not by walking the namespace, in a new folder (no statistics)', () => {
    // Asked once per text written since the job's cursor: walking the namespace's memories for each made a
    // run O(n²) (5.5 of 11 s over 4,000 fresh memories).
    t = openTempStore('cairn-consolidation-');
    const store = t.store;
    store.spaces.ensureSpace(space);
    store.write(Array.from({ length: 50 }, (_, i) => mem({ id: `m${i}`, text: `note ${i}` })));
    embedPending();
    const sql = (store.consolidations as unknown as { sameTextStmt: { source: string } }).sameTextStmt.source;
    const plan = (
      store.db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(space.id, 'h', 'ns') as Array<{
        detail: string;
      }>
    ).map((r) => r.detail);
    expect(plan[0]).toMatch(/SEARCH e USING INDEX embeddings_space_hash \(space=\? AND content_hash=\?\)/);
    expect(plan.join('\n')).not.toMatch(/memories_ns_ts/);
  });

  it('never offers a memory whose stored vector is of an older text (rewritten, not yet embedded again)', () => {
    t = openTempStore('cairn-consolidation-');
    const store = t.store;
    store.spaces.ensureSpace(space);
    store.write([mem({ id: 'x', text: 'same words' }), mem({ id: 'y', text: 'same words' })]);
    embedPending();
    const { contentHash } = store.get('ns', ['x']).memories[0]!;
    expect(
      store.consolidations
        .sameText(space.id, 'ns', contentHash)
        .map((m) => m.id)
        .sort(),
    ).toEqual(['x', 'y']);
    // x now says something else; its vector row still holds the old text's until the embed stage runs.
    store.write([mem({ id: 'x', text: 'other words entirely' })]);
    expect(store.consolidations.sameText(space.id, 'ns', contentHash).map((m) => m.id)).toEqual(['y']);
    expect(store.consolidations.newVectors(space.id, 0, 100, []).candidates.map((c) => c.id)).toEqual(['y']);
  });

  it('merges nothing of a memory rewritten or re-tagged after the stamps its pair was verified under', () => {
    t = openTempStore('cairn-consolidation-');
    const store = t.store;
    store.write([
      mem({ id: 'a', text: 'deploys go through the staging cluster first' }),
      mem({ id: 'b', text: 'deploys go through the staging cluster first!' }),
      mem({ id: 'c', text: 'the release train leaves on tuesdays' }),
      mem({ id: 'd', text: 'the release train leaves on tuesdays!' }),
    ]);
    const key = (id: string) =>
      store.db
        .prepare("SELECT key FROM memories WHERE namespace = 'ns' AND id = ?")
        .pluck()
        .get(id) as number;
    const stamps = store.consolidations.stamps();
    // While the pass verified: a got a new text, and d new tags.
    store.write([
      mem({ id: 'a', text: 'deploys now go straight to production' }),
      mem({ id: 'd', text: 'the release train leaves on tuesdays!', tags: ['release'] }),
    ]);
    const pairs = [
      { key: key('a'), byKey: key('b'), cosine: 0.97 },
      { key: key('c'), byKey: key('d'), cosine: 0.97 },
    ];
    expect(store.consolidations.merge(pairs, Date.now(), stamps)).toEqual([]);
    // Verified again under fresh stamps, the second pair stands.
    expect(
      store.consolidations.merge(pairs.slice(1), Date.now(), store.consolidations.stamps()),
    ).toMatchObject([{ id: 'c', into: 'd' }]);
  });

  it('answers "nothing merged" from one probe, per namespace', () => {
    t = openTempStore('cairn-consolidation-');
    const store = t.store;
    store.spaces.ensureSpace(space);
    store.write([
      mem({ id: 'x', text: 'w' }),
      mem({ id: 'y', text: 'w' }),
      mem({ namespace: 'other', id: 'z', text: 'w' }),
    ]);
    const key = (ns: string, id: string) => store.get(ns, [id]).memories[0]!.key;
    expect(store.consolidations.hasMerges('ns')).toBe(false);
    store.consolidations.merge([{ key: key('ns', 'x'), byKey: key('ns', 'y'), cosine: 1 }]);
    expect(store.consolidations.hasMerges('ns')).toBe(true);
    expect(store.consolidations.hasMerges('other')).toBe(false);
    // Across namespaces nothing merges, whatever the caller asks.
    expect(
      store.consolidations.merge([{ key: key('other', 'z'), byKey: key('ns', 'y'), cosine: 1 }]),
    ).toEqual([]);
    expect(store.consolidations.dupCounts('other', [key('ns', 'y')]).size).toBe(0);
    expect(store.consolidations.dupCounts('ns', [key('ns', 'y')]).get(key('ns', 'y'))).toBe(1);
  });
});

describe('access counts', () => {
  it('never wait for another process’s write lock: busy now, the caller keeps them for later', () => {
    t = openTempStore('cairn-access-');
    const store = t.store;
    store.write([mem({ id: 'x', text: 'w' })]);
    const other = new MemoryStore({ path: t.path });
    try {
      other.db.prepare('BEGIN IMMEDIATE').run();
      expect(store.recordAccess([{ namespace: 'ns', id: 'x', count: 2 }], 1)).toBe(false);
      other.db.prepare('COMMIT').run();
      expect(store.recordAccess([{ namespace: 'ns', id: 'x', count: 2 }], 1)).toBe(true);
      expect(store.get('ns', ['x'], { touch: false }).memories[0]!.accessCount).toBe(2);
      // The connection's own busy timeout is back for every other write.
      expect(store.db.pragma('busy_timeout', { simple: true })).toBe(5000);
    } finally {
      other.close();
    }
  });
});
