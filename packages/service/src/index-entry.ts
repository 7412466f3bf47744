import type { IndexEntry, MemoryRecordOut } from '@cairn/api-contract';
import type { MemoryRecord } from '@cairn/core';
import { countTokens } from './token-counter.js';

const TITLE_CHARS = 120;

/** The title, else the first non-empty line of the text, cut to 120 characters. */
export function headline(m: { title: string | null; text: string }): string {
  const line =
    m.title?.trim() ||
    m.text
      .split('\n')
      .find((l) => l.trim())
      ?.trim() ||
    '';
  return line.length > TITLE_CHARS ? `${line.slice(0, TITLE_CHARS - 1)}…` : line;
}

/** How a full record reads in a prompt; its token count is what fetching it costs. */
export function renderRecord(m: { title: string | null; text: string }): string {
  return m.title ? `${m.title}\n${m.text}` : m.text;
}

export type Headed = Pick<MemoryRecord, 'id' | 'namespace' | 'kind' | 'title' | 'text' | 'ts' | 'session'> &
  Partial<Pick<MemoryRecord, 'fields'>>;

/** The texts a full record brings into a caller's context: its title and text, and each named field. */
export function recordTexts(m: Pick<Headed, 'title' | 'text' | 'fields'>): string[] {
  return [renderRecord(m), ...Object.values(m.fields ?? {})];
}

/**
 * What a full record costs a caller's context (memories/get): its text and its named fields, which come
 * with it. The index entries of search and timeline quote the same count, so a budget planned on them holds.
 */
export function recordTokens(m: Pick<Headed, 'title' | 'text' | 'fields'>): number {
  return recordTexts(m).reduce((n, t) => n + countTokens(t), 0);
}

export function toIndexEntry(m: Headed): IndexEntry {
  return {
    id: m.id,
    namespace: m.namespace,
    kind: m.kind,
    title: headline(m),
    date: new Date(m.ts).toISOString(),
    session: m.session,
    tokens: recordTokens(m),
  };
}

/** One index entry as an agent reads it in a list; what it costs the caller's context. */
export function indexLine(e: IndexEntry): string {
  return `- [${e.id}] ${e.date.slice(0, 16)} ${e.kind}${e.session ? ` (${e.session})` : ''}: ${e.title} — ${e.tokens} tok`;
}

export function toRecord(m: MemoryRecord): MemoryRecordOut {
  return {
    id: m.id,
    namespace: m.namespace,
    kind: m.kind,
    title: m.title,
    text: m.text,
    session: m.session,
    agent: m.agent,
    ts: m.ts,
    date: new Date(m.ts).toISOString(),
    tags: m.tags,
    meta: (m.meta ?? {}) as Record<string, unknown>,
    importance: m.importance,
    confidence: m.confidence ?? null,
    validFrom: m.validFrom ?? null,
    validTo: m.validTo ?? null,
    supersededBy: m.supersededBy,
    accessCount: m.accessCount,
    lastAccessed: m.lastAccessed,
    fields: m.fields ?? {},
    tokens: recordTokens(m),
  };
}

/**
 * Keeps items in order while their cost fits the budget; the rest are omitted (never cut mid-item).
 * Without a budget everything is kept.
 */
export function withinBudget<T>(
  items: readonly T[],
  cost: (item: T) => number,
  budget: number | undefined,
): { kept: T[]; omitted: T[]; used: number } {
  const kept: T[] = [];
  const omitted: T[] = [];
  let used = 0;
  for (const it of items) {
    const c = cost(it);
    if (budget !== undefined && used + c > budget) omitted.push(it);
    else {
      kept.push(it);
      used += c;
    }
  }
  return { kept, omitted, used };
}

/**
 * The longest run of items, from the first, whose cost fits the budget: it stops at the first that does
 * not fit. For a page of a listing, whose next page starts where this one stops: skipping an entry that
 * does not fit and keeping a smaller one after it would lose the skipped one from every page.
 */
export function leadingWithinBudget<T>(
  items: readonly T[],
  cost: (item: T) => number,
  budget: number | undefined,
): { kept: T[]; omitted: T[]; used: number } {
  let used = 0;
  let n = 0;
  for (; n < items.length; n++) {
    const c = cost(items[n]!);
    if (budget !== undefined && used + c > budget) break;
    used += c;
  }
  return { kept: items.slice(0, n), omitted: items.slice(n), used };
}
