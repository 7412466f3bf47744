import type { z } from 'zod';
import type {
  ContextRequestSchema,
  ContextResponseSchema,
  GetRequestSchema,
  GetResponseSchema,
  TimelineQuerySchema,
  TimelineResponseSchema,
} from './disclosure-schemas.js';
import type { DeleteResponseSchema, WriteRequest, WriteResponse } from './memory-schemas.js';
import type {
  BatchSearchRequestSchema,
  BatchSearchResponseSchema,
  FederatedSearchRequestSchema,
  FederatedSearchResponseSchema,
  SearchRequestBody,
  SearchResponseOut,
} from './search-schemas.js';
import type { StatsResponseSchema } from './stats-schemas.js';

export type TimelineQuery = z.input<typeof TimelineQuerySchema>;
export type TimelineResponse = z.infer<typeof TimelineResponseSchema>;
export type GetRequest = z.input<typeof GetRequestSchema>;
export type GetResponse = z.infer<typeof GetResponseSchema>;
export type ContextRequest = z.input<typeof ContextRequestSchema>;
export type ContextResponse = z.infer<typeof ContextResponseSchema>;
export type BatchSearchRequest = z.input<typeof BatchSearchRequestSchema>;
export type BatchSearchResponse = z.infer<typeof BatchSearchResponseSchema>;
export type FederatedSearchRequest = z.input<typeof FederatedSearchRequestSchema>;
export type FederatedSearchResponse = z.infer<typeof FederatedSearchResponseSchema>;
export type DeleteResponse = z.infer<typeof DeleteResponseSchema>;
export type StatsResponse = z.infer<typeof StatsResponseSchema>;

/**
 * Every operation of the API, as one interface: the HTTP client implements it over the wire, and the
 * service implements it in-process for one caller's namespaces. The MCP server works against either.
 */
export interface MemoryApi {
  write(req: WriteRequest): Promise<WriteResponse>;
  delete(namespace: string, id: string): Promise<DeleteResponse>;
  search(req: SearchRequestBody): Promise<SearchResponseOut>;
  searchBatch(req: BatchSearchRequest): Promise<BatchSearchResponse>;
  searchFederated(req: FederatedSearchRequest): Promise<FederatedSearchResponse>;
  timeline(query: TimelineQuery): Promise<TimelineResponse>;
  get(req: GetRequest): Promise<GetResponse>;
  context(req: ContextRequest): Promise<ContextResponse>;
  stats(): Promise<StatsResponse>;
}
