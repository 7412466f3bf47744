import type { KeyedMemory, SearchResponse } from '@cairn/core';
import Table from 'cli-table3';

const oneLine = (s: string, max: number) => {
  const flat = s.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
};
const num = (v: number | null, digits = 3) => (v === null ? '–' : v.toFixed(digits));
const date = (ms: number) => new Date(ms).toISOString().slice(0, 16).replace('T', ' ');

/** The human table for `cairn search`: every hit with the numbers that explain its rank. */
export function renderHits(res: SearchResponse): string {
  const lines: string[] = [];
  if (res.degraded.length > 0) {
    lines.push(
      `degraded: ${res.degraded.join(', ')} (${Object.values(res.explain.degradedReasons).join('; ')})`,
    );
  }
  if (res.hits.length === 0) {
    lines.push(`no results: ${res.empty?.reason} — ${res.empty?.message}`);
    return `${lines.join('\n')}\n`;
  }
  if (res.relevance && res.relevance.level !== 'relevant') {
    const missing = res.relevance.missing.length ? `; nothing says ${res.relevance.missing.join(', ')}` : '';
    lines.push(
      res.relevance.level === 'none'
        ? `no relevant memory (relevance ${res.relevance.score.toFixed(2)}${missing}); the closest:`
        : `weak matches only (relevance ${res.relevance.score.toFixed(2)}${missing})`,
    );
  }
  const table = new Table({
    head: ['#', 'id', 'kind', 'when', 'score', 'bm25#', 'vec#', 'cosine', 'recency', 'text'],
    style: { head: [], border: [] },
  });
  res.hits.forEach((h, i) => {
    table.push([
      i + 1,
      oneLine(h.id, 24),
      h.kind,
      date(h.ts),
      h.score.toExponential(3),
      h.bm25Rank ?? '–',
      h.vecRank ?? '–',
      num(h.cosine),
      num(h.recency),
      oneLine(h.title ? `${h.title}: ${h.text}` : h.text, 60),
    ]);
  });
  lines.push(table.toString());
  if (res.explain.settings.routes.length > 0) {
    // Multi-route recall: which routes found each hit (text: its own words; else a field's name).
    lines.push(
      `routes: ${res.hits.map((h, i) => `#${i + 1} ${(h.routes ?? []).join('+') || '–'}`).join('  ')}`,
    );
  }
  res.hits.forEach((h, i) => {
    if (!h.neighbors) return;
    const line = (n: { id: string; text: string }, mark: string) =>
      `    ${mark} [${n.id}] ${oneLine(n.text, 90)}`;
    lines.push(
      `  #${i + 1} in its session:`,
      ...h.neighbors.before.map((n) => line(n, '↑')),
      ...h.neighbors.after.map((n) => line(n, '↓')),
    );
  });
  const candidates = res.explain.candidates;
  if (candidates) {
    // explain full: every fused candidate, best first, and what became of it.
    const trace = new Table({
      head: ['cand', 'id', 'fate', 'pos', 'score', 'rrf', 'bm25#', 'vec#', 'bm25', 'cosine', 'recency'],
      style: { head: [], border: [] },
    });
    candidates.forEach((c, i) => {
      trace.push([
        i + 1,
        oneLine(c.id, 24),
        c.fate === 'duplicate' && c.duplicateOf ? `duplicate of ${oneLine(c.duplicateOf, 16)}` : c.fate,
        c.position ?? '–',
        c.score.toExponential(3),
        c.rrf.toExponential(3),
        c.bm25Rank ?? '–',
        c.vecRank ?? '–',
        num(c.bm25, 2),
        num(c.cosine),
        num(c.recency),
      ]);
    });
    lines.push(`candidate trace (${candidates.length} fused):`, trace.toString());
  }
  const s = res.explain.settings;
  lines.push(
    `score = ((${s.weights.lexical}/(${s.rrfK}+bm25#) + ${s.weights.vector}/(${s.rrfK}+vec#)${s.routes.length > 0 ? ` + Σ routes ${s.routes.join(',')} at ${s.routeWeight}×leg` : ''}) × agent + session) × recency × importance` +
      ` | lexical: ${res.explain.lexicalQuery ?? '(none)'}` +
      (res.explain.droppedTerms.length ? ` | dropped: ${res.explain.droppedTerms.join(' ')}` : '') +
      ` | ${res.tookMs.total.toFixed(1)} ms`,
  );
  return `${lines.join('\n')}\n`;
}

export function renderMemories(memories: readonly KeyedMemory[], marker?: string): string {
  const table = new Table({
    head: ['id', 'kind', 'when', 'session', 'text'],
    style: { head: [], border: [] },
  });
  for (const m of memories) {
    table.push([
      `${m.id === marker ? '▶ ' : ''}${oneLine(m.id, 24)}`,
      m.kind,
      date(m.ts),
      m.session ?? '–',
      oneLine(m.text, 70),
    ]);
  }
  return `${table.toString()}\n`;
}
