import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { normalizeMemory } from '@cairn/core';
import { MemoryStore } from '@cairn/store';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AccessTracker } from '../src/access-tracker.js';

let dir: string;
let store: MemoryStore;
const N = 1_000;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'cairn-access-'));
  store = new MemoryStore({ path: join(dir, 'cairn.db') });
  store.write(
    Array.from({ length: N }, (_, i) =>
      normalizeMemory({ namespace: 'ns', id: `m${i}`, text: `memory ${i}` }, 0),
    ),
  );
});
afterEach(() => {
  store.close();
  rmSync(dir, { recursive: true, force: true });
});

const counts = () =>
  new Map(
    (
      store.db.prepare('SELECT id, access_count AS n FROM memories').all() as Array<{ id: string; n: number }>
    ).map((r) => [r.id, r.n]),
  );
const until = async (cond: () => boolean) => {
  for (let i = 0; i < 500 && !cond(); i++) await new Promise((r) => setTimeout(r, 10));
  expect(cond()).toBe(true);
};

describe('AccessTracker', () => {
  it('writes a window of counts in slices, a transaction each with a turn between, and loses none', async () => {
    // What each transaction wrote, observed on the real store.
    const slices: number[] = [];
    const recordAccess = store.recordAccess.bind(store);
    store.recordAccess = (accesses, at) => {
      slices.push(accesses.length);
      return recordAccess(accesses, at);
    };
    const tracker = new AccessTracker(store, (err) => expect.fail(err.message), 20);
    try {
      const ids = Array.from({ length: N }, (_, i) => `m${i}`);
      tracker.record('ns', ids);
      tracker.record('ns', ids.slice(0, 10));
      await until(() => slices.reduce((a, b) => a + b, 0) === N);
      expect(Math.max(...slices)).toBeLessThan(N);
      expect(slices.length).toBeGreaterThan(1);
      const c = counts();
      expect(c.get('m0')).toBe(2);
      expect(c.get('m9')).toBe(2);
      expect(c.get('m10')).toBe(1);
      expect(c.get(`m${N - 1}`)).toBe(1);
    } finally {
      tracker.close();
    }
  });

  it('keeps the counts while another connection holds the write lock, and writes them after', async () => {
    const other = new MemoryStore({ path: join(dir, 'cairn.db') });
    const tracker = new AccessTracker(store, (err) => expect.fail(err.message), 20);
    try {
      other.db.prepare('BEGIN IMMEDIATE').run();
      tracker.record('ns', ['m1', 'm2']);
      await new Promise((r) => setTimeout(r, 100));
      other.db.prepare('COMMIT').run();
      tracker.record('ns', ['m1']);
      await until(() => counts().get('m1') === 2);
      expect(counts().get('m2')).toBe(1);
    } finally {
      tracker.close();
      other.close();
    }
  });

  it('stops its slices when a flush wrote the rest meanwhile, and writes later counts in the next window', async () => {
    const calls: number[] = [];
    const recordAccess = store.recordAccess.bind(store);
    let tracker: AccessTracker | null = null;
    store.recordAccess = (accesses, at) => {
      calls.push(accesses.length);
      const ok = recordAccess(accesses, at);
      // Right after the window's first slice, before its next turn: a prune's flush() takes the rest.
      if (calls.length === 1) tracker!.flush();
      return ok;
    };
    tracker = new AccessTracker(store, (err) => expect.fail(err.message), 20);
    try {
      tracker.record(
        'ns',
        Array.from({ length: N }, (_, i) => `m${i}`),
      );
      await until(() => calls.length >= 2);
      await new Promise((r) => setTimeout(r, 100));
      // The slice, the flush of the other 744, and no empty transactions spinning after them.
      expect(calls).toEqual([256, N - 256]);
      expect([...counts().values()].every((n) => n === 1)).toBe(true);
      tracker.record('ns', ['m0']);
      await until(() => counts().get('m0') === 2);
    } finally {
      tracker.close();
    }
  });

  it('writes what is still pending when it closes', () => {
    const tracker = new AccessTracker(store, (err) => expect.fail(err.message), 60_000);
    tracker.record('ns', ['m3', 'm3', 'm4']);
    tracker.close();
    expect(counts().get('m3')).toBe(2);
    expect(counts().get('m4')).toBe(1);
  });
});
