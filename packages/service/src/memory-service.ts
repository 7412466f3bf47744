import {
  type ApiLimits,
  type BatchSearchResponse,
  ContextRequestSchema,
  type ContextResponse,
  DEFAULT_API_LIMITS,
  type DeadLettersResponse,
  FederatedSearchRequestSchema,
  type FederatedSearchResponse,
  GetRequestSchema,
  type GetResponse,
  type MemoryApi,
  type SearchHitOut,
  SearchRequestSchema,
  type SearchResponseOut,
  type ServerLimits,
  type StatsResponse,
  TimelineQuerySchema,
  type TimelineResponse,
  WriteBatchSchema,
  WriteOneSchema,
  type WriteRequest,
  type WriteResponse,
} from '@cairn/api-contract';
import {
  asFactMemory,
  CairnError,
  type ExplainLevel,
  isCairnError,
  normalizeMemory,
  parseSearchRequest,
  type SearchHit,
  type SearchResponse,
  withDefaults,
} from '@cairn/core';
import type { CairnEngine } from '@cairn/engine';
import type { CaptureProducer } from '@cairn/pipeline/distributed';
import { z } from 'zod';
import { buildContextPack } from './context-pack.js';
import { HygieneService } from './hygiene-service.js';
import {
  indexLine,
  leadingWithinBudget,
  recordTokens,
  toIndexEntry,
  toRecord,
  withinBudget,
} from './index-entry.js';
import type { NamespaceAccess } from './namespace-access.js';
import { parseInput } from './parse-input.js';
import { SpaceService } from './space-service.js';
import { fitTimeline } from './timeline-fit.js';
import { countTokens } from './token-counter.js';
import type { TokenizerThread } from './tokenizer-thread.js';
import type { WriteForwarder } from './write-forwarder.js';

export interface MemoryServiceOptions {
  engine: CairnEngine;
  /** Distributed mode: writes go to the capture queue through this producer. @defaultValue null (embedded) */
  producer?: CaptureProducer | null;
  /**
   * Embedded mode, in a process that only reads the data folder (a `cairn serve --workers` child): writes
   * are forwarded to the process that owns it. @defaultValue null (this process writes)
   */
  forwarder?: WriteForwarder | null;
  /** Body size and batch limits. @defaultValue DEFAULT_API_LIMITS */
  limits?: Partial<ServerLimits>;
  /** Distributed mode: the queues' dead letters, for `GET /v1/dead-letters`. @defaultValue none */
  deadLetters?: () => Promise<DeadLettersResponse['dead_letters']>;
  /**
   * Counts a search's new texts (its hits' records and index lines) on this thread rather than the serving
   * one; the caller closes it. @defaultValue none (counted on the serving thread)
   */
  tokenizer?: TokenizerThread | null;
}

const BatchEnvelopeSchema = z.strictObject({ queries: z.array(z.unknown()).min(1) });

/**
 * The operations of the HTTP API and the MCP server, over one engine: validation against the API's
 * schemas and limits, namespace access, and progressive disclosure with token budgets. `scoped(access)`
 * gives one caller's view; nothing it returns ever comes from a namespace `access` does not allow.
 */
export class MemoryService {
  readonly engine: CairnEngine;
  readonly producer: CaptureProducer | null;
  readonly forwarder: WriteForwarder | null;
  private readonly tokenizer: TokenizerThread | null;
  readonly limits: ApiLimits;
  /** The embedding-space operations (an operator's: they need a key for every namespace). */
  readonly spaces: SpaceService;
  /** Consolidation and pruning, run now or dry. */
  readonly hygiene: HygieneService;

  constructor(opts: MemoryServiceOptions) {
    this.engine = opts.engine;
    this.spaces = new SpaceService(opts.engine, opts.deadLetters ?? null, opts.forwarder ?? null);
    this.hygiene = new HygieneService(opts.engine);
    this.producer = opts.producer ?? null;
    this.forwarder = opts.forwarder ?? null;
    this.tokenizer = opts.tokenizer ?? null;
    this.limits = { ...DEFAULT_API_LIMITS, ...withDefaults(DEFAULT_API_LIMITS, opts.limits ?? {}) };
  }

  get mode(): 'embedded' | 'distributed' {
    return this.producer ? 'distributed' : 'embedded';
  }

  scoped(access: NamespaceAccess): MemoryApi {
    return {
      write: async (req) => this.write(access, req),
      delete: async (ns, id) => this.delete(access, ns, id),
      search: async (req) => this.search(access, req),
      searchBatch: async (req) => this.searchBatch(access, req),
      searchFederated: async (req) => this.searchFederated(access, req),
      timeline: async (q) => this.timeline(access, q),
      get: async (req) => this.get(access, req),
      context: async (req) => this.context(access, req),
      stats: async () => this.stats(access),
    };
  }

  async write(access: NamespaceAccess, input: unknown): Promise<WriteResponse> {
    if (input && typeof input === 'object' && Array.isArray((input as { memories?: unknown }).memories)) {
      const n = (input as { memories: unknown[] }).memories.length;
      if (n > this.limits.maxBatch)
        throw new CairnError(
          'PAYLOAD_TOO_LARGE',
          `a write takes at most ${this.limits.maxBatch} memories, not ${n}`,
          { field: 'memories' },
        );
    }
    // Pick the branch by shape, so an error names the field (a union's error would name neither).
    const isBatch = !!input && typeof input === 'object' && 'memories' in input;
    const req: WriteRequest = isBatch
      ? parseInput(WriteBatchSchema, input)
      : parseInput(WriteOneSchema, input);
    const wait = req.wait ?? 'stored';
    const batch = 'memories' in req ? req.memories : [(({ wait: _w, ...m }) => m)(req)];
    const fallbackNs = 'memories' in req ? req.namespace : undefined;
    const now = Date.now();
    // Validate everything first: a bad or forbidden memory refuses the whole request, nothing stored.
    const memories = batch.map((m, i) => {
      const field = isBatch ? `memories.${i}` : '';
      const namespace = m.namespace ?? fallbackNs;
      if (namespace === undefined)
        throw new CairnError('INVALID_INPUT', 'namespace is required (on the memory or the request)', {
          field: field ? `${field}.namespace` : 'namespace',
        });
      access.assert(namespace, field ? `${field}.namespace` : 'namespace');
      try {
        // Facts are addressed by (slot, key): the id is derived (one-to-one), so the same key replaces it.
        const memory = { ...asFactMemory(m), namespace };
        normalizeMemory(memory, now);
        return memory;
      } catch (err) {
        if (isCairnError(err) && field)
          throw new CairnError(err.code, `${field}: ${err.message}`, {
            ...err.data,
            field: err.data.field ? `${field}.${err.data.field}` : field,
          });
        throw err;
      }
    });
    if (this.producer) {
      const r = await this.producer.enqueue(memories, now, wait);
      return this.writeResponse(r.items, wait === 'stored');
    }
    if (this.forwarder) return this.writeResponse(await this.forwarder.ingest(memories), true);
    const r = this.engine.ingest(memories);
    return this.writeResponse(r.items, true);
  }

  private writeResponse(
    items: ReadonlyArray<{ index: number; status: string; id?: string; namespace?: string; error?: unknown }>,
    durable: boolean,
  ): WriteResponse {
    const rejected = items.find((i) => i.status === 'rejected');
    // Validated above, so a rejection here is the engine disagreeing with the API's own check: a bug.
    if (rejected) throw new CairnError('INTERNAL', `memory ${rejected.index} was rejected after validation`);
    const counts = { stored: 0, updated: 0, unchanged: 0, queued: 0 };
    const out = items.map((i) => {
      const status = i.status as keyof typeof counts;
      counts[status]++;
      return { index: i.index, id: i.id!, namespace: i.namespace!, status };
    });
    return { items: out, counts, durable };
  }

  async delete(access: NamespaceAccess, namespace: string, id: string) {
    access.assert(namespace);
    // `DELETE /v1/memories/` (an id left out of the URL) is a malformed request, not a missing memory.
    if (id === '')
      throw new CairnError('INVALID_INPUT', 'give the id of the memory to delete', { field: 'id' });
    const deleted = this.forwarder
      ? await this.forwarder.delete(namespace, id)
      : this.engine.delete(namespace, id);
    if (!deleted)
      throw new CairnError('NOT_FOUND', `no memory with id "${id}" in namespace "${namespace}"`, {
        field: 'id',
      });
    return { deleted: id, namespace };
  }

  async search(access: NamespaceAccess, input: unknown, context?: string): Promise<SearchResponseOut> {
    const { max_tokens, ...rest } = parseInput(SearchRequestSchema, input, context);
    access.assert(rest.namespace);
    const res = await this.engine.search(parseSearchRequest(rest, context), { countAccesses: false });
    await this.tokenizer?.primeSearch(res);
    const out = searchResponseOut(res, { explain: rest.explain ?? 'hits', max_tokens });
    // Only the hits the budget kept reached the caller: those alone count as accesses.
    if (!res.listing)
      this.engine.countAccesses(
        res.namespace,
        out.hits.map((h) => h.id),
      );
    return out;
  }

  async searchBatch(access: NamespaceAccess, input: unknown): Promise<BatchSearchResponse> {
    const n = (input as { queries?: unknown[] } | null)?.queries?.length ?? 0;
    if (n > this.limits.maxBatchQueries)
      throw new CairnError(
        'PAYLOAD_TOO_LARGE',
        `a batch takes at most ${this.limits.maxBatchQueries} queries, not ${n}`,
        { field: 'queries' },
      );
    // Only the envelope is checked here; each query is validated in its own slot.
    const { queries } = parseInput(BatchEnvelopeSchema, input);
    // Each query stands alone: a forbidden or bad one fails in its slot, the others are answered.
    const results: BatchSearchResponse['results'] = [];
    for (const [i, q] of queries.entries()) {
      const slot = `queries.${i}`;
      try {
        results.push({ ok: true, result: await this.search(access, q, slot) });
      } catch (err) {
        if (!isCairnError(err)) throw err;
        // The field at fault is named from the batch's body, as for any other request: `queries.1.k`.
        const error = err.toJSON();
        if (error.field !== undefined) error.field = error.field ? `${slot}.${error.field}` : slot;
        results.push({ ok: false, error });
      }
    }
    return { results };
  }

  async searchFederated(access: NamespaceAccess, input: unknown): Promise<FederatedSearchResponse> {
    const { namespaces, perNamespace, max_tokens, k, ...options } = parseInput(
      FederatedSearchRequestSchema,
      input,
    );
    const unique = [...new Set(namespaces)];
    for (const [i, ns] of unique.entries()) access.assert(ns, `namespaces.${i}`);
    const want = k ?? 5;
    const quota = Math.min(perNamespace ?? want, want);
    const perNs: FederatedSearchResponse['namespaces'] = {};
    const all: SearchHitOut[] = [];
    // A blank query with filters lists each namespace; the lists merge newest first, as one would.
    let listing = true;
    for (const namespace of unique) {
      const res = await this.engine.search(parseSearchRequest({ ...options, namespace, k: quota }), {
        countAccesses: false,
      });
      await this.tokenizer?.primeSearch(res);
      if (!res.listing) listing = false;
      perNs[namespace] = {
        hits: res.hits.length,
        degraded: res.degraded,
        ...(res.empty ? { empty: res.empty } : {}),
      };
      all.push(...res.hits.map((h) => toSearchHit(h, options.explain !== 'none')));
    }
    // Scores are comparable across namespaces: the same fusion formula, settings and clock.
    all.sort(listing ? (a, b) => b.date.localeCompare(a.date) : (a, b) => b.score - a.score);
    const budget = withinBudget(all.slice(0, want), (h) => countTokens(indexLine(h)), max_tokens);
    // Only the hits that made the merged page and the budget reached the caller: those alone count.
    if (!listing)
      for (const namespace of unique)
        this.engine.countAccesses(
          namespace,
          budget.kept.filter((h) => h.namespace === namespace).map((h) => h.id),
        );
    return {
      query: options.query,
      hits: budget.kept,
      namespaces: perNs,
      tokens: { used: budget.used, budget: max_tokens ?? null, omitted: budget.omitted.length },
    };
  }

  async timeline(access: NamespaceAccess, input: unknown): Promise<TimelineResponse> {
    const q = parseInput(TimelineQuerySchema, input);
    access.assert(q.namespace);
    let anchorId = q.anchor;
    if (anchorId === undefined) {
      // Counted once the timeline is answered: a refused budget returns nothing.
      const res = await this.engine.search(
        parseSearchRequest({ namespace: q.namespace, query: q.query!, k: 1 }),
        { countAccesses: false },
      );
      anchorId = res.hits[0]?.id;
      if (anchorId === undefined)
        throw new CairnError('NOT_FOUND', `no memory in "${q.namespace}" matches the query`, {
          field: 'query',
        });
    }
    const t = this.engine.timeline(q.namespace, anchorId, q.before, q.after);
    await this.tokenizer?.primeTimeline([t.anchor, ...t.before, ...t.after]);
    const anchor = toIndexEntry(t.anchor);
    const fit = fitTimeline(
      anchor,
      t.before.map(toIndexEntry),
      t.after.map(toIndexEntry),
      (e) => countTokens(indexLine(e)),
      q.max_tokens,
    );
    if (q.anchor === undefined) this.engine.countAccesses(q.namespace, [anchorId]);
    return {
      namespace: q.namespace,
      scope: t.scope,
      anchor,
      before: fit.before,
      after: fit.after,
      tokens: { used: fit.used, budget: q.max_tokens ?? null, omitted: fit.omitted },
    };
  }

  async get(access: NamespaceAccess, input: unknown): Promise<GetResponse> {
    const req = parseInput(GetRequestSchema, input);
    access.assert(req.namespace);
    const { memories, missing } = this.engine.get(req.namespace, [...new Set(req.ids)], { touch: false });
    await this.tokenizer?.primeGet(memories);
    const budget = withinBudget(memories, recordTokens, req.max_tokens);
    // Only what the budget kept is fetched: those alone count as accesses (and show the count).
    this.engine.touch(budget.kept);
    return {
      memories: budget.kept.map(toRecord),
      missing,
      omitted: budget.omitted.map((m) => m.id),
      tokens: { used: budget.used, budget: req.max_tokens ?? null, omitted: budget.omitted.length },
    };
  }

  async context(access: NamespaceAccess, input: unknown): Promise<ContextResponse> {
    const req = parseInput(ContextRequestSchema, input);
    access.assert(req.namespace);
    const exclude = new Set(req.exclude_ids);
    const summaries = this.engine
      .recent(req.namespace, { kinds: ['summary'], limit: req.summaries + exclude.size })
      .filter((m) => !exclude.has(m.id))
      .slice(0, req.summaries);
    let relevant: SearchHit[] = [];
    if (req.query?.trim() && req.k > 0) {
      const res = await this.engine.search(
        parseSearchRequest({
          namespace: req.namespace,
          query: req.query,
          k: Math.min(req.k + exclude.size + summaries.length, 1_000),
        }),
        { countAccesses: false },
      );
      const taken = new Set(summaries.map((s) => s.id));
      relevant = res.hits.filter((h) => !exclude.has(h.id) && !taken.has(h.id)).slice(0, req.k);
    }
    const pack = buildContextPack({
      namespace: req.namespace,
      query: req.query ?? null,
      summaries,
      relevant,
      format: req.format,
      maxTokens: req.max_tokens,
    });
    // The pack's search counts only what it found and the pack carries: not the excluded memories, the
    // summaries already taken, nor what the budget left out.
    const found = new Set(relevant.map((h) => h.id));
    this.engine.countAccesses(
      req.namespace,
      pack.included.filter((id) => found.has(id)),
    );
    return {
      namespace: req.namespace,
      format: req.format,
      text: pack.text,
      included: pack.included,
      tokens: { used: pack.tokens, budget: req.max_tokens, omitted: pack.omitted },
    };
  }

  async stats(access: NamespaceAccess): Promise<StatsResponse> {
    const s = this.engine.stats((ns) => access.allows(ns));
    const namespaces: StatsResponse['namespaces'] = {};
    for (const [ns, v] of Object.entries(s.namespaces))
      namespaces[ns] = {
        stored: v.stored,
        superseded: v.superseded,
        deleted: v.deleted,
        embedded: v.embedded,
        indexed: v.indexed,
        pending: v.pending,
        failed: v.failed,
        fields: v.fields,
        fieldsEmbedded: v.fieldsEmbedded,
      };
    return { mode: this.mode, space: s.space, namespaces };
  }
}

/**
 * An engine search response in the wire shape every face returns (HTTP, `cairn search --json`, the MCP
 * tools' structured content): hits with their explanation nested under `explain` (left out with explain
 * 'none'), within `max_tokens`, the candidate trace with explain 'full'.
 */
export function searchResponseOut(
  res: SearchResponse,
  opts: { explain: ExplainLevel; max_tokens?: number | undefined },
): SearchResponseOut {
  const hits = res.hits.map((h) => toSearchHit(h, opts.explain !== 'none'));
  // A ranked answer leaves out a hit that does not fit and may keep a smaller one after it; a listing's
  // page stops at it instead, and the next page starts there, so paging never loses an entry.
  const fit = res.listing ? leadingWithinBudget : withinBudget;
  // A hit's neighbours are read in full, so their text counts against the budget with the hit.
  const cost = (h: (typeof hits)[number]) =>
    countTokens(indexLine(h)) +
    [...(h.neighbors?.before ?? []), ...(h.neighbors?.after ?? [])].reduce(
      (sum, n) => sum + countTokens(n.text),
      0,
    );
  const budget = fit(hits, cost, opts.max_tokens);
  const out: SearchResponseOut = {
    namespace: res.namespace,
    query: res.query,
    hits: budget.kept,
    degraded: res.degraded,
    degradedReasons: res.explain.degradedReasons,
    tokens: { used: budget.used, budget: opts.max_tokens ?? null, omitted: budget.omitted.length },
  };
  if (res.empty) out.empty = res.empty;
  if (res.listing && budget.kept.length === 0 && hits.length > 0) {
    // An empty page whose next page is this one: a caller following `next` would ask again for good.
    const least = cost(hits[0]!);
    throw new CairnError(
      'INVALID_INPUT',
      `max_tokens ${opts.max_tokens} cannot hold this listing's first entry (${least} tokens); give max_tokens of at least ${least}`,
      { field: 'max_tokens' },
    );
  }
  if (res.listing)
    out.listing = { offset: res.listing.offset, next: res.listing.offset + budget.kept.length };
  if (res.relevance) out.relevance = res.relevance;
  if (res.rerank) out.rerank = res.rerank;
  if (opts.explain === 'full') out.trace = res.explain;
  return out;
}

function toSearchHit(h: SearchHit, explained: boolean): SearchHitOut {
  if (!explained)
    return {
      ...toIndexEntry(h),
      score: h.score,
      ...(h.dupCount ? { dupCount: h.dupCount } : {}),
      ...(h.neighbors ? { neighbors: h.neighbors } : {}),
    };
  return {
    ...toIndexEntry(h),
    score: h.score,
    ...(h.dupCount ? { dupCount: h.dupCount } : {}),
    explain: {
      bm25Rank: h.bm25Rank,
      vecRank: h.vecRank,
      bm25: h.bm25,
      bm25Session: h.bm25Session,
      cosine: h.cosine,
      recency: h.recency,
      rrf: h.rrf,
      score: h.score,
      ...(h.routes ? { routes: h.routes } : {}),
      parts: h.parts,
      ...(h.rerank ? { rerank: h.rerank } : {}),
    },
    ...(h.neighbors ? { neighbors: h.neighbors } : {}),
  };
}
