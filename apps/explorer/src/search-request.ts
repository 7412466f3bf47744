import type { SearchRequestBody } from '@cairn/api-contract';

/** The search form as typed: strings, so a blank field means "the server's default", not 0. */
export interface SearchForm {
  namespace: string;
  query: string;
  kinds: string;
  sessions: string;
  agents: string;
  tags: string;
  since: string;
  until: string;
  lexical: string;
  vector: string;
  decay: string;
  rerank: string;
  k: string;
  explain: 'hits' | 'full';
  offset: number;
}

export const EMPTY_FORM: SearchForm = {
  namespace: '',
  query: '',
  kinds: '',
  sessions: '',
  agents: '',
  tags: '',
  since: '',
  until: '',
  lexical: '',
  vector: '',
  decay: 'auto',
  rerank: 'auto',
  k: '10',
  explain: 'hits',
  offset: 0,
};

const list = (s: string): string[] | undefined => {
  const items = s
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean);
  return items.length > 0 ? items : undefined;
};

const num = (s: string): number | undefined => {
  const t = s.trim();
  if (t === '') return undefined;
  const n = Number(t);
  return Number.isFinite(n) ? n : undefined;
};

/** A time bound as the API takes it: epoch ms when all digits, else the text (ISO-8601 or "7d"). */
const timeBound = (s: string): string | number | undefined => {
  const t = s.trim();
  if (t === '') return undefined;
  return /^\d+$/.test(t) ? Number(t) : t;
};

type Filters = NonNullable<SearchRequestBody['filters']>;

/** The filters set in the form, or undefined when none is. */
export function buildFilters(f: SearchForm): Filters | undefined {
  const filters: Filters = {};
  const kinds = list(f.kinds);
  const sessions = list(f.sessions);
  const agents = list(f.agents);
  const tags = list(f.tags);
  const since = timeBound(f.since);
  const until = timeBound(f.until);
  if (kinds) filters.kinds = kinds;
  if (sessions) filters.sessions = sessions;
  if (agents) filters.agents = agents;
  if (tags) filters.tags = tags;
  if (since !== undefined) filters.since = since;
  if (until !== undefined) filters.until = until;
  return Object.keys(filters).length > 0 ? filters : undefined;
}

/** Memories per page of a listing: the form's k, or 10 when it is blank or not a number. */
export function pageSize(f: SearchForm): number {
  const k = num(f.k);
  return k !== undefined && k > 0 ? k : 10;
}

/**
 * The POST /v1/search body for a form. Only what the user set is sent, so every other option keeps the
 * server's configured default; the server validates it all and names the field at fault.
 */
export function buildSearchRequest(f: SearchForm): SearchRequestBody {
  const req: SearchRequestBody = { namespace: f.namespace.trim(), query: f.query, explain: f.explain };
  const k = num(f.k);
  if (k !== undefined) req.k = k;
  // A listing is paged by k: send the page size the pager assumes, not the server's default (5).
  else if (f.query.trim() === '') req.k = pageSize(f);
  const filters = buildFilters(f);
  if (filters) req.filters = filters;
  const lexical = num(f.lexical);
  const vector = num(f.vector);
  if (lexical !== undefined || vector !== undefined)
    req.weights = {
      ...(lexical !== undefined ? { lexical } : {}),
      ...(vector !== undefined ? { vector } : {}),
    };
  if (f.decay && f.decay !== 'auto') req.decay = f.decay;
  if (f.rerank === 'off' || f.rerank === 'deterministic' || f.rerank === 'model') req.rerank = f.rerank;
  // offset pages a listing (a blank query with filters: the memories passing them, newest first, never a
  // whole namespace at once); the server refuses it with a query, so it is sent only with a blank one.
  if (f.offset > 0 && f.query.trim() === '') req.offset = f.offset;
  return req;
}
