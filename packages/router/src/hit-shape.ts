import type { CandidateTrace, KeyedMemory, NeighborEntry, SearchHit } from '@cairn/core';
import type { FusedCandidate } from './fuse-candidates.js';

// How fused candidates become what a search returns: hits, a listing's unranked entries, the neighbours
// attached to a hit, and the `explain: 'full'` rows with each candidate's fate.

export function toNeighbor(m: KeyedMemory): NeighborEntry {
  return { id: m.id, kind: m.kind, ts: m.ts, title: m.title, text: m.text };
}

/** A listing's entry: newest first, no leg ranked it, so it carries no ranks and a score of 0. */
export function toListed(m: KeyedMemory): SearchHit {
  const unranked = {
    score: 0,
    rrf: 0,
    bm25Rank: null,
    vecRank: null,
    bm25: null,
    bm25Session: null,
    cosine: null,
    recency: 1,
    parts: {
      lexical: 0,
      vector: 0,
      routes: 0,
      agent: 1,
      session: 0,
      recency: 1,
      importance: 1,
      confidence: 1,
      boost: 1,
    },
  };
  return toHit(unranked, m);
}

export function toHit(
  c: Pick<
    FusedCandidate,
    | 'score'
    | 'rrf'
    | 'bm25Rank'
    | 'vecRank'
    | 'bm25'
    | 'bm25Session'
    | 'cosine'
    | 'recency'
    | 'parts'
    | 'routes'
  >,
  m: KeyedMemory,
): SearchHit {
  return {
    id: m.id,
    namespace: m.namespace,
    kind: m.kind,
    title: m.title,
    text: m.text,
    session: m.session,
    agent: m.agent,
    ts: m.ts,
    tags: m.tags,
    importance: m.importance,
    score: c.score,
    rrf: c.rrf,
    bm25Rank: c.bm25Rank,
    vecRank: c.vecRank,
    bm25: c.bm25,
    bm25Session: c.bm25Session,
    cosine: c.cosine,
    recency: c.recency,
    parts: c.parts,
    ...(c.routes ? { routes: c.routes } : {}),
    // A record's named fields come with it when fetched: what a hit says it costs counts them.
    ...(m.fields && Object.keys(m.fields).length > 0 ? { fields: m.fields } : {}),
  };
}

export function trace(
  fused: FusedCandidate[],
  selected: number[],
  duplicates: Map<number, number>,
): CandidateTrace[] {
  const position = new Map(selected.map((idx, pos) => [idx, pos + 1]));
  // A candidate ranked above the last hit but not taken was passed over for diversity (MMR).
  const lastSelected = selected.length > 0 ? Math.max(...selected) : -1;
  return fused.map((c, i) => {
    const { memory, key: _key, ...explain } = c;
    const pos = position.get(i) ?? null;
    const dupOf = duplicates.get(i);
    const row: CandidateTrace = {
      id: memory.id,
      ...explain,
      position: pos,
      fate:
        pos !== null ? 'hit' : dupOf !== undefined ? 'duplicate' : i < lastSelected ? 'diversity' : 'below_k',
    };
    if (dupOf !== undefined) row.duplicateOf = fused[dupOf]!.memory.id;
    return row;
  });
}
