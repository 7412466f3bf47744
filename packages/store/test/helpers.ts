import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CairnError, type MemoryInput, type NormalizedMemory, normalizeMemory } from '@cairn/core';
import { MemoryStore, type MemoryStoreOptions } from '@cairn/store';

/** A fixed clock for memories, so tests never depend on the wall time. */
export const T0 = Date.parse('2024-01-01T00:00:00Z');

/** Normalises a memory in namespace `ns` unless another is given. */
export function mem(input: Omit<MemoryInput, 'namespace'> & { namespace?: string }): NormalizedMemory {
  return normalizeMemory({ namespace: 'ns', ...input }, T0);
}

/** A real store in its own temporary folder; `cleanup` closes it and removes the folder. */
export interface TempStore {
  dir: string;
  path: string;
  store: MemoryStore;
  cleanup(): void;
}

export function openTempStore(
  prefix = 'cairn-store-',
  opts: Omit<MemoryStoreOptions, 'path'> = {},
): TempStore {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const path = join(dir, 'cairn.db');
  const store = new MemoryStore({ ...opts, path });
  return {
    dir,
    path,
    store,
    cleanup() {
      store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Runs `fn`, which must throw a CairnError, and returns that error. */
export function cairnErrorFrom(fn: () => unknown): CairnError {
  try {
    fn();
  } catch (err) {
    if (err instanceof CairnError) return err;
    throw new Error(`expected a CairnError, got ${String(err)}`, { cause: err });
  }
  throw new Error('expected a CairnError, but nothing was thrown');
}

/** The raw row of a memory, including bookkeeping columns the public API does not expose. */
export function rawRow(
  store: MemoryStore,
  namespace: string,
  id: string,
): {
  key: number;
  change_seq: number;
  updated_at: number;
  deleted_at: number | null;
  superseded_by: string | null;
} {
  return store.db
    .prepare(
      'SELECT key, change_seq, updated_at, deleted_at, superseded_by FROM memories WHERE namespace = ? AND id = ?',
    )
    .get(namespace, id) as {
    key: number;
    change_seq: number;
    updated_at: number;
    deleted_at: number | null;
    superseded_by: string | null;
  };
}

/** Ids of a lexical search's hits, best first. */
export function searchIds(store: MemoryStore, namespace: string, query: string, limit = 50): string[] {
  const res = store.lexical.searchLexical({ namespace, query, filters: {}, limit });
  const byKey = store.liveByKeys(
    namespace,
    res.candidates.map((c) => c.key),
  );
  return res.candidates.map((c) => byKey.get(c.key)?.id ?? `?${c.key}`);
}
