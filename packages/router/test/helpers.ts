import type { KeyedMemory } from '@cairn/core';

/** A live memory record for fusion tests: only the fields under test are given. */
export const memory = (key: number, over: Partial<KeyedMemory> = {}): KeyedMemory => ({
  key,
  id: `m${key}`,
  namespace: 'ns',
  kind: 'observation',
  text: 't',
  title: null,
  session: null,
  agent: null,
  ts: 0,
  tags: [],
  meta: {},
  importance: 0.5,
  contentHash: 'h',
  createdAt: 0,
  updatedAt: 0,
  supersededBy: null,
  accessCount: 0,
  lastAccessed: null,
  ...over,
});
