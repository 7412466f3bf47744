import type {
  GetResponse,
  IndexEntry,
  SearchResponseOut,
  TimelineResponse,
  WriteResponse,
} from '@cairn/api-contract';
import { indexLine } from '@cairn/service';

type Usage = { used: number; budget: number | null; omitted: number };

// Each tool's text states the tokens of the whole text (see fit-answer.ts), the size the model pays for.

/** `45 tokens` / `45 of 500 tokens, 2 omitted (past max_tokens)`. */
export function usageLine(t: Usage): string {
  const of = t.budget === null ? `${t.used} tokens` : `${t.used} of ${t.budget} tokens`;
  return t.omitted > 0 ? `${of}, ${t.omitted} omitted (past max_tokens)` : of;
}

/** `more`: a listing's page may be followed by another (it was cut, or came back full). */
export function renderSearch(res: SearchResponseOut, opts: { more?: boolean } = {}): string {
  const head = res.listing
    ? `${res.hits.length} memor${res.hits.length === 1 ? 'y' : 'ies'} passing the filters in ${res.namespace}, newest first from ${res.listing.offset} (${usageLine(res.tokens)})`
    : `${res.hits.length} hit${res.hits.length === 1 ? '' : 's'} for "${res.query}" in ${res.namespace} (${usageLine(res.tokens)})`;
  const lines = [head, ...res.hits.map(indexLine)];
  if (res.empty) lines.push(`(${res.empty.message})`);
  else if (res.relevance?.level === 'none')
    lines.push(
      `(no relevant memory: the best hits share little with the query${res.relevance.missing.length ? `; nothing says ${res.relevance.missing.join(', ')}` : ''})`,
    );
  else if (res.relevance?.level === 'weak')
    lines.push(
      `(weak matches only${res.relevance.missing.length ? `: nothing says ${res.relevance.missing.join(', ')}` : ''})`,
    );
  if (res.degraded.length)
    lines.push(`(degraded: ${res.degraded.join(', ')} leg unavailable; results may be incomplete)`);
  if (res.listing && opts.more)
    lines.push(`(next page: mem_search with the same filters and offset=${res.listing.next})`);
  if (res.hits.length)
    lines.push('Next: mem_timeline anchor=<id> for context around a hit, mem_get ids=[...] for full text.');
  return lines.join('\n');
}

export function renderTimeline(res: TimelineResponse): string {
  const mark = (e: IndexEntry) => indexLine(e).replace(/^- /, '> ');
  return [
    `Timeline around [${res.anchor.id}] within its ${res.scope} in ${res.namespace} (${usageLine(res.tokens)}; > marks the anchor)`,
    ...res.before.map(indexLine),
    mark(res.anchor),
    ...res.after.map(indexLine),
  ].join('\n');
}

export function renderGet(res: GetResponse): string {
  const out: string[] = [];
  for (const m of res.memories) {
    const session = m.session ? `, session ${m.session}` : '';
    out.push(`── [${m.id}] ${m.kind}, ${m.date}${session} — ${m.tokens} tok`);
    if (m.title) out.push(m.title);
    out.push(m.text);
    for (const [name, value] of Object.entries(m.fields ?? {})) out.push(`${name}: ${value}`);
    if (m.tags.length) out.push(`tags: ${m.tags.join(', ')}`);
    if (m.supersededBy) out.push(`(superseded by ${m.supersededBy})`);
    out.push('');
  }
  out.push(
    `${res.memories.length} memor${res.memories.length === 1 ? 'y' : 'ies'} (${usageLine(res.tokens)})`,
  );
  if (res.missing.length) out.push(`not found: ${res.missing.join(', ')}`);
  if (res.omitted.length) out.push(`past max_tokens, not returned: ${res.omitted.join(', ')}`);
  return out.join('\n');
}

export function renderWrite(res: WriteResponse): string {
  const lines = res.items.map((i) => `${i.status} [${i.id}] in ${i.namespace}`);
  if (!res.durable) lines.push('(queued: searchable once a worker stores it)');
  return lines.join('\n');
}
