import type {
  ActivateSpaceResponse,
  BatchSearchRequest,
  BatchSearchResponse,
  ConsolidateRequest,
  ConsolidateResponse,
  ConsolidationsQuery,
  ConsolidationsResponse,
  ContextRequest,
  ContextResponse,
  DeadLettersResponse,
  DeleteResponse,
  DropSpaceResponse,
  ErrorBody,
  FederatedSearchRequest,
  FederatedSearchResponse,
  GetRequest,
  GetResponse,
  HygieneApi,
  MemoryApi,
  PruneRequest,
  PruneResponse,
  ReindexRequest,
  ReindexResponse,
  SearchRequestBody,
  SearchResponseOut,
  SpaceActionRequest,
  SpacesApi,
  SpacesResponse,
  StatsResponse,
  TimelineQuery,
  TimelineResponse,
  UndoConsolidationRequest,
  UndoConsolidationResponse,
  WriteRequest,
  WriteResponse,
} from '@cairn/api-contract';
import { CairnError, type CairnErrorCode, CairnErrorCode as Codes } from '@cairn/core';

export interface CairnClientOptions {
  /** The API's base URL, e.g. `http://127.0.0.1:7411`. */
  baseUrl: string;
  /** Sent as `Authorization: Bearer <apiKey>`. @defaultValue none (a server with auth off on loopback) */
  apiKey?: string;
  /** Per request (ms). @defaultValue 30_000 */
  timeoutMs?: number;
  /** @defaultValue globalThis.fetch */
  fetch?: typeof fetch;
}

/** Codes for answers without Cairn's error body (a proxy's 401, say). */
const STATUS_CODES: Record<number, CairnErrorCode> = {
  401: 'UNAUTHORIZED',
  403: 'FORBIDDEN_NAMESPACE',
  404: 'NOT_FOUND',
  405: 'METHOD_NOT_ALLOWED',
  413: 'PAYLOAD_TOO_LARGE',
  429: 'RATE_LIMITED',
};

/**
 * The typed client of the Cairn HTTP API. Its request and response types are the API contract's zod
 * types, so client and server cannot drift; every non-2xx answer is thrown as a CairnError with the
 * server's code, message and field.
 */
export class CairnClient implements MemoryApi, SpacesApi, HygieneApi {
  private readonly base: string;
  private readonly fetch: typeof fetch;

  constructor(private readonly opts: CairnClientOptions) {
    this.base = opts.baseUrl.replace(/\/+$/, '');
    this.fetch = opts.fetch ?? globalThis.fetch;
  }

  write(req: WriteRequest): Promise<WriteResponse> {
    return this.call('POST', '/v1/memories', req);
  }

  // Async so that an id refused before the request (`..`) rejects, as every other failure does.
  async delete(namespace: string, id: string): Promise<DeleteResponse> {
    return this.call('DELETE', `/v1/memories/${pathSegment(id)}?namespace=${encodeURIComponent(namespace)}`);
  }

  search(req: SearchRequestBody): Promise<SearchResponseOut> {
    return this.call('POST', '/v1/search', req);
  }

  searchBatch(req: BatchSearchRequest): Promise<BatchSearchResponse> {
    return this.call('POST', '/v1/search/batch', req);
  }

  searchFederated(req: FederatedSearchRequest): Promise<FederatedSearchResponse> {
    return this.call('POST', '/v1/search/federated', req);
  }

  timeline(query: TimelineQuery): Promise<TimelineResponse> {
    const qs = new URLSearchParams();
    for (const [k, v] of Object.entries(query)) if (v !== undefined) qs.set(k, String(v));
    return this.call('GET', `/v1/timeline?${qs}`);
  }

  get(req: GetRequest): Promise<GetResponse> {
    return this.call('POST', '/v1/memories/get', req);
  }

  context(req: ContextRequest): Promise<ContextResponse> {
    return this.call('POST', '/v1/context', req);
  }

  stats(): Promise<StatsResponse> {
    return this.call('GET', '/v1/stats');
  }

  /** Embedding spaces with their progress (needs a key for every namespace, like the three below). */
  spaces(): Promise<SpacesResponse> {
    return this.call('GET', '/v1/spaces');
  }

  /** Starts a live reindex in the server's data folder; follow it with spaces(). */
  reindex(req: ReindexRequest): Promise<ReindexResponse> {
    return this.call('POST', '/v1/spaces/reindex', req);
  }

  activateSpace(req: SpaceActionRequest): Promise<ActivateSpaceResponse> {
    return this.call('POST', '/v1/spaces/activate', req);
  }

  dropSpace(req: Pick<SpaceActionRequest, 'space'>): Promise<DropSpaceResponse> {
    return this.call('POST', '/v1/spaces/drop', req);
  }

  /** The distributed pipeline's dead letters, newest first (a key for every namespace). */
  deadLetters(): Promise<DeadLettersResponse> {
    return this.call('GET', '/v1/dead-letters');
  }

  /** Merges near-duplicates now, or lists what would merge (`dry_run`); a namespace, or every one (`*` key). */
  consolidate(req: ConsolidateRequest): Promise<ConsolidateResponse> {
    return this.call('POST', '/v1/hygiene/consolidate', req);
  }

  /** Brings merged memories back (every merge of the namespace without `ids`). */
  undoConsolidation(req: UndoConsolidationRequest): Promise<UndoConsolidationResponse> {
    return this.call('POST', '/v1/hygiene/undo', req);
  }

  consolidations(query: ConsolidationsQuery): Promise<ConsolidationsResponse> {
    const params = new URLSearchParams({ namespace: query.namespace });
    if (query.limit !== undefined) params.set('limit', String(query.limit));
    return this.call('GET', `/v1/hygiene/consolidations?${params}`);
  }

  /** Applies a pruning policy now, or lists what it would delete (`dry_run`). */
  prune(req: PruneRequest): Promise<PruneResponse> {
    return this.call('POST', '/v1/hygiene/prune', req);
  }

  private async call<T>(method: string, path: string, body?: unknown): Promise<T> {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (body !== undefined) headers['content-type'] = 'application/json';
    if (this.opts.apiKey) headers.authorization = `Bearer ${this.opts.apiKey}`;
    let res: Response;
    let text: string;
    try {
      res = await this.fetch(`${this.base}${path}`, {
        method,
        headers,
        body: body === undefined ? null : JSON.stringify(body),
        signal: AbortSignal.timeout(this.opts.timeoutMs ?? 30_000),
      });
      // Inside the try: a timeout can also strike while the body is read.
      text = await res.text();
    } catch (err) {
      throw new CairnError(
        'BACKEND_UNAVAILABLE',
        `Cairn API at ${this.base} did not answer: ${(err as Error).message}`,
        {
          backend: 'api',
        },
      );
    }
    let json: unknown;
    try {
      json = text ? JSON.parse(text) : undefined;
    } catch {
      json = undefined;
    }
    if (res.ok) return json as T;
    const e = (json as ErrorBody | undefined)?.error;
    const code: CairnErrorCode =
      e && Object.hasOwn(Codes, e.code)
        ? e.code
        : (STATUS_CODES[res.status] ?? (res.status >= 500 ? 'BACKEND_UNAVAILABLE' : 'INVALID_INPUT'));
    const retryAfterS = Number(res.headers.get('retry-after'));
    throw new CairnError(code, e?.message ?? `HTTP ${res.status} from ${method} ${path}`, {
      ...(e?.field ? { field: e.field } : {}),
      status: res.status,
      ...(retryAfterS > 0 ? { retryAfterMs: retryAfterS * 1_000 } : {}),
    });
  }
}

/**
 * One path segment, percent-encoded. `.` and `..` cannot be one: every URL parser resolves them away (even
 * as `%2E%2E`), so `DELETE /v1/memories/..` asked `DELETE /v1/`. No memory has such an id (writes refuse
 * it), so the call is refused here, with the error the server gives such an id on a write.
 */
function pathSegment(value: string): string {
  if (value === '.' || value === '..')
    throw new CairnError('INVALID_INPUT', 'id must not be "." or "..": a URL cannot address it', {
      field: 'id',
    });
  return encodeURIComponent(value);
}
