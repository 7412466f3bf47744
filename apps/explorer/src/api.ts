import type {
  DeadLettersResponse,
  GetResponse,
  SearchRequestBody,
  SearchResponseOut,
  SpacesResponse,
  StatsResponse,
  TimelineResponse,
} from '@cairn/api-contract';
import { readApiKey } from './api-key.js';

/**
 * The explorer's only way to the data: the server's own /v1 routes, with the key the user typed, from the
 * page's origin. It is a plain fetch wrapper rather than @cairn/client because that package's runtime
 * (CairnError from @cairn/core) pulls Node modules into a browser bundle; the request and response types
 * are still the API contract's, so the two cannot drift.
 */

/** A non-2xx answer, kept as the server said it: status, code, message and field. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly field?: string,
  ) {
    super(message);
  }
}

/** Relative to the page (served at /ui/), so requests go to the origin that served it and nowhere else. */
const API_ROOT = new URL('../', document.baseURI);

async function call<T>(method: 'GET' | 'POST', path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (body !== undefined) headers['content-type'] = 'application/json';
  const key = readApiKey();
  if (key) headers.authorization = `Bearer ${key}`;
  let res: Response;
  try {
    res = await fetch(new URL(path, API_ROOT), {
      method,
      headers,
      body: body === undefined ? null : JSON.stringify(body),
      // A stale page must not hang forever on a server that went away.
      signal: AbortSignal.timeout(30_000),
    });
  } catch (err) {
    throw new ApiError(0, 'UNREACHABLE', `the Cairn server did not answer: ${(err as Error).message}`);
  }
  const text = await res.text();
  let json: unknown;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  if (res.ok) return json as T;
  const e = (json as { error?: { code?: string; message?: string; field?: string } } | undefined)?.error;
  throw new ApiError(
    res.status,
    e?.code ?? `HTTP_${res.status}`,
    e?.message ?? (text.slice(0, 300) || `HTTP ${res.status}`),
    e?.field,
  );
}

/** /readyz answers 503 with the same body when a check fails; both are shown, not thrown. */
export interface Readiness {
  httpStatus: number;
  status: 'ok' | 'unavailable';
  checks: Record<string, { ok: boolean; detail?: string }>;
}

export const api = {
  stats: () => call<StatsResponse>('GET', 'v1/stats'),
  search: (req: SearchRequestBody) => call<SearchResponseOut>('POST', 'v1/search', req),
  timeline: (namespace: string, anchor: string, before: number, after: number) =>
    call<TimelineResponse>(
      'GET',
      `v1/timeline?${new URLSearchParams({
        namespace,
        anchor,
        before: String(before),
        after: String(after),
      })}`,
    ),
  get: (namespace: string, ids: string[]) => call<GetResponse>('POST', 'v1/memories/get', { namespace, ids }),
  spaces: () => call<SpacesResponse>('GET', 'v1/spaces'),
  deadLetters: () => call<DeadLettersResponse>('GET', 'v1/dead-letters'),
  async readiness(): Promise<Readiness> {
    const res = await fetch(new URL('readyz', API_ROOT), { signal: AbortSignal.timeout(10_000) });
    const body = (await res.json()) as Omit<Readiness, 'httpStatus'>;
    return { httpStatus: res.status, status: body.status, checks: body.checks ?? {} };
  },
  /** Prometheus text: open like /healthz (totals only, no namespace names), so it needs no key. */
  async metrics(): Promise<string> {
    const res = await fetch(new URL('metrics', API_ROOT), { signal: AbortSignal.timeout(10_000) });
    if (!res.ok) throw new ApiError(res.status, `HTTP_${res.status}`, await res.text());
    return res.text();
  },
};
