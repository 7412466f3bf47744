import { type KeyedMemory, type ResolvedSearch, resolveDecay } from '@cairn/core';

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
  confidence: null,
  validFrom: null,
  validTo: null,
  contentHash: 'h',
  createdAt: 0,
  updatedAt: 0,
  supersededBy: null,
  accessCount: 0,
  lastAccessed: null,
  fields: {},
  ...over,
});

/** The options fusion and age read, as the tests use them: decay off, both legs at 1, no routes weighted. */
export type FusionOptions = Pick<
  ResolvedSearch,
  | 'weights'
  | 'rrfK'
  | 'decay'
  | 'now'
  | 'importanceWeight'
  | 'confidenceWeight'
  | 'routeWeight'
  | 'routeWeights'
  | 'routeFusion'
>;

export const fusionOptions = (over: Partial<FusionOptions> = {}): FusionOptions => ({
  weights: { lexical: 1, vector: 1 },
  rrfK: 60,
  decay: resolveDecay('off'),
  now: 0,
  importanceWeight: 0.3,
  confidenceWeight: 0.3,
  routeWeight: 0.5,
  routeWeights: {},
  routeFusion: 'best',
  ...over,
});
