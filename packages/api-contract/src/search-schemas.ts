import { SearchRequestSchema as EngineSearchRequestSchema, NamespaceSchema } from '@cairn/core';
import { z } from 'zod';
import { DEFAULT_API_LIMITS as L } from './api-limits.js';
import { IndexEntrySchema, MaxTokensSchema, TokenUsageSchema } from './disclosure-schemas.js';

// The bounds before int(): a huge k (±1e16) is named by its bound, not by int's safe range (zod reports the first).
const k = z.number().min(1).max(L.maxK, `k must be at most ${L.maxK}`).int();

/** The engine's search request (query, k, filters, weights, rrfK, decay, now, explain, …) plus a budget. */
export const SearchRequestSchema = EngineSearchRequestSchema.extend({
  k: k.optional(),
  max_tokens: MaxTokensSchema.optional(),
}).meta({ id: 'SearchRequest' });

export type SearchRequestBody = z.input<typeof SearchRequestSchema>;

const nullableNumber = z.number().nullable();

/** Why a hit ranked where it did: its rank in each leg, raw scores, and the score's parts. */
export const HitExplainSchema = z
  .object({
    bm25Rank: z.number().int().nullable(),
    vecRank: z.number().int().nullable(),
    bm25: nullableNumber,
    bm25Session: nullableNumber.describe("the share of bm25 from the memory's session's match"),
    cosine: nullableNumber,
    recency: z.number(),
    rrf: z.number(),
    score: z.number(),
    routes: z
      .array(z.string())
      .optional()
      .describe('multi-route recall: the routes that found it (text: its own words; else a field name)'),
    parts: z.object({
      lexical: z.number(),
      vector: z.number(),
      routes: z.number().describe("the named-field routes' share of rrf (0 without fields)"),
      agent: z.number().describe('factor applied when the query names the memory agent (1: not named)'),
      session: z.number().describe('support from another strong candidate of the same session (0: none)'),
      recency: z.number(),
      importance: z.number(),
      confidence: z.number().describe("the stated confidence's factor (1: none stated)"),
      boost: z.number().describe("the product of the query's boosts it matched (1: none)"),
    }),
    rerank: z
      .object({ score: z.number(), fusedRank: z.number().int() })
      .optional()
      .describe('set when a reranker reordered the page: its score, and the rank fusion gave'),
  })
  .meta({ id: 'HitExplain' });

export const NeighborEntrySchema = z
  .object({
    id: z.string(),
    kind: z.string(),
    ts: z.number().int(),
    title: z.string().nullable(),
    text: z.string(),
  })
  .meta({ id: 'NeighborEntry' });

export const SearchHitSchema = IndexEntrySchema.extend({
  score: z.number(),
  dupCount: z
    .number()
    .int()
    .optional()
    .describe('near-duplicates the consolidation job merged into this memory; absent when none'),
  explain: HitExplainSchema.optional().describe("why it ranked where it did; left out with explain: 'none'"),
  neighbors: z
    .object({ before: z.array(NeighborEntrySchema), after: z.array(NeighborEntrySchema) })
    .optional()
    .describe(
      'with the neighbors option: the live memories around the hit in its session (never superseded or deleted ones), oldest first',
    ),
}).meta({ id: 'SearchHit' });

export type SearchHitOut = z.infer<typeof SearchHitSchema>;

export const EmptyReasonSchema = z.object({
  reason: z.enum(['no_match', 'empty_namespace', 'filtered_out', 'blank_query']),
  message: z.string(),
});

export const SearchRelevanceSchema = z
  .object({
    score: z.number().min(0).max(1),
    level: z.enum(['relevant', 'weak', 'none']),
    missing: z.array(z.string()).describe('query words none of the first hits says'),
  })
  .describe(
    "how well the first hits answer the query: 'none' means nothing relevant was found, 'weak' only partial matches",
  )
  .meta({ id: 'SearchRelevance' });

export const SearchResponseSchema = z
  .object({
    namespace: z.string(),
    query: z.string(),
    hits: z.array(SearchHitSchema),
    degraded: z.array(z.enum(['lexical', 'vector'])),
    degradedReasons: z.record(z.string(), z.string()),
    empty: EmptyReasonSchema.optional(),
    listing: z
      .object({
        offset: z.number().int(),
        next: z
          .number()
          .int()
          .describe(
            'the offset of the next page: the first memory this page did not return (a page under max_tokens stops at the first that does not fit)',
          ),
      })
      .optional()
      .describe('a blank query with filters: the memories passing them, newest first from offset, unranked'),
    relevance: SearchRelevanceSchema.optional(),
    rerank: z
      .object({
        by: z.string().describe("'deterministic', the reranker's id, or 'none'"),
        applied: z.boolean(),
        reason: z.string().optional().describe('why the fused order was kept (a timeout, an error)'),
        depth: z.number().int(),
        tookMs: z.number(),
      })
      .optional()
      .describe('set when reranking was asked for'),
    tokens: TokenUsageSchema,
    trace: z.unknown().optional().describe("explain: 'full' only: the settings and every fused candidate"),
  })
  .meta({ id: 'SearchResponse' });

export type SearchResponseOut = z.infer<typeof SearchResponseSchema>;

export const BatchSearchRequestSchema = z.strictObject({
  queries: z
    .array(SearchRequestSchema)
    .min(1)
    .max(L.maxBatchQueries, `at most ${L.maxBatchQueries} queries per batch`),
});

export const BatchSearchResponseSchema = z
  .object({
    results: z.array(
      z.union([
        z.object({ ok: z.literal(true), result: SearchResponseSchema }),
        z.object({
          ok: z.literal(false),
          error: z.object({ code: z.string(), message: z.string(), field: z.string().optional() }),
        }),
      ]),
    ),
  })
  .meta({ id: 'BatchSearchResponse' });

/** One query over several namespaces, each contributing at most `perNamespace` hits, merged by score. */
export const FederatedSearchRequestSchema = EngineSearchRequestSchema.omit({ namespace: true, offset: true })
  .extend({
    namespaces: z
      .array(NamespaceSchema)
      .min(1)
      .max(L.maxFederatedNamespaces, `at most ${L.maxFederatedNamespaces} namespaces`),
    k: k.optional(),
    perNamespace: k.optional().describe('quota: hits any one namespace may contribute (default k)'),
    max_tokens: MaxTokensSchema.optional(),
  })
  .meta({ id: 'FederatedSearchRequest' });

export const FederatedSearchResponseSchema = z
  .object({
    query: z.string(),
    hits: z.array(SearchHitSchema),
    namespaces: z.record(
      z.string(),
      z.object({
        hits: z.number().int(),
        degraded: z.array(z.enum(['lexical', 'vector'])),
        empty: EmptyReasonSchema.optional(),
      }),
    ),
    tokens: TokenUsageSchema,
  })
  .meta({ id: 'FederatedSearchResponse' });
