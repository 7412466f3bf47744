import { type KeyedMemory, sortedFields } from '@cairn/core';

/** The columns every read selects, aliased `m`. */
export const MEMORY_COLUMNS =
  'm.key, m.namespace, m.id, m.kind, m.title, m.text, m.session, m.agent, m.ts, m.tags, m.meta, m.importance, m.confidence, m.valid_from, m.valid_to, ' +
  'm.content_hash, m.created_at, m.updated_at, m.superseded_by, m.access_count, m.last_accessed, ' +
  // Named fields as one JSON object; the (key, route) index makes it a probe per row ('{}' when none).
  '(SELECT json_group_object(r.route, r.text) FROM memory_routes r WHERE r.key = m.key) AS fields';

export interface MemoryRow {
  key: number;
  namespace: string;
  id: string;
  kind: string;
  title: string | null;
  text: string;
  session: string | null;
  agent: string | null;
  ts: number;
  tags: string;
  meta: string;
  importance: number;
  confidence: number | null;
  valid_from: number | null;
  valid_to: number | null;
  content_hash: string;
  created_at: number;
  updated_at: number;
  superseded_by: string | null;
  access_count: number;
  last_accessed: number | null;
  fields: string;
}

export function toMemory(row: MemoryRow): KeyedMemory {
  return {
    key: row.key,
    namespace: row.namespace,
    id: row.id,
    kind: row.kind,
    title: row.title,
    text: row.text,
    session: row.session,
    agent: row.agent,
    ts: row.ts,
    tags: JSON.parse(row.tags) as string[],
    meta: JSON.parse(row.meta) as Record<string, unknown>,
    importance: row.importance,
    confidence: row.confidence,
    validFrom: row.valid_from,
    validTo: row.valid_to,
    contentHash: row.content_hash,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    supersededBy: row.superseded_by,
    accessCount: row.access_count,
    lastAccessed: row.last_accessed,
    fields: sortedFields(JSON.parse(row.fields) as Record<string, string>),
  };
}
