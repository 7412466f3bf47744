import { loneSurrogateMessage, zodToCairnError } from '@cairn/core';
import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import {
  BatchSearchRequestSchema,
  ConsolidationsQuerySchema,
  ContextRequestSchema,
  FederatedSearchRequestSchema,
  GetRequestSchema,
  ReindexRequestSchema,
  SearchRequestSchema,
  SpaceActionRequestSchema,
  TimelineQuerySchema,
  UndoConsolidationRequestSchema,
} from '../src/index.js';

/** The CairnError a request body is refused with, as the service would throw it. */
function refusal(schema: z.ZodType, input: unknown) {
  const r = schema.safeParse(input);
  if (r.success) throw new Error(`expected ${JSON.stringify(input)} to be refused`);
  return zodToCairnError(r.error);
}

describe('request schemas: a lone UTF-16 surrogate', () => {
  // HTTP and MCP both validate with these schemas (in the service), so this is every face's answer.
  const cases: Array<[name: string, schema: z.ZodType, input: unknown, field: string]> = [
    ['search query', SearchRequestSchema, { namespace: 'a', query: '\ud800' }, 'query'],
    [
      'search tag filter',
      SearchRequestSchema,
      { namespace: 'a', query: 'q', filters: { tags: ['\udc00'] } },
      'filters.tags.0',
    ],
    [
      'batch query',
      BatchSearchRequestSchema,
      { queries: [{ namespace: 'a', query: 'x\ud800' }] },
      'queries.0.query',
    ],
    ['federated query', FederatedSearchRequestSchema, { namespaces: ['a'], query: '\ud800' }, 'query'],
    [
      'federated filter',
      FederatedSearchRequestSchema,
      { namespaces: ['a'], query: 'q', filters: { sessions: ['\ud800'] } },
      'filters.sessions.0',
    ],
    ['timeline anchor', TimelineQuerySchema, { namespace: 'a', anchor: 'm\ud800' }, 'anchor'],
    ['timeline query', TimelineQuerySchema, { namespace: 'a', query: '\udfff' }, 'query'],
    ['get ids', GetRequestSchema, { namespace: 'a', ids: ['ok', '\ud800'] }, 'ids.1'],
    ['context query', ContextRequestSchema, { namespace: 'a', query: '\ud800' }, 'query'],
    [
      'context exclude_ids',
      ContextRequestSchema,
      { namespace: 'a', exclude_ids: ['\ud800'] },
      'exclude_ids.0',
    ],
    ['undo ids', UndoConsolidationRequestSchema, { namespace: 'a', ids: ['\ud800'] }, 'ids.0'],
    ['reindex embedder', ReindexRequestSchema, { embedder: 'hash\ud800' }, 'embedder'],
    ['space id', SpaceActionRequestSchema, { space: '\ud800' }, 'space'],
  ];
  for (const [name, schema, input, field] of cases) {
    it(`is refused in the ${name}, naming ${field}`, () => {
      const err = refusal(schema, input);
      expect(err.code).toBe('INVALID_INPUT');
      expect(err.data.field).toBe(field);
      expect(err.message).toBe(loneSurrogateMessage(field));
    });
  }

  it('leaves surrogate pairs (emoji) alone', () => {
    expect(SearchRequestSchema.safeParse({ namespace: 'a', query: 'deploy 😀' }).success).toBe(true);
    expect(GetRequestSchema.safeParse({ namespace: 'a', ids: ['id-𝔘'] }).success).toBe(true);
  });
});

describe('request schemas: whole numbers from a query string', () => {
  it('says what was sent when it is not a whole number (not "must be number, got NaN")', () => {
    for (const [schema, input, field, sent] of [
      [TimelineQuerySchema, { namespace: 'a', anchor: 'm', before: 'abc' }, 'before', '"abc"'],
      [TimelineQuerySchema, { namespace: 'a', anchor: 'm', after: '2.5' }, 'after', '"2.5"'],
      [TimelineQuerySchema, { namespace: 'a', anchor: 'm', before: '' }, 'before', '""'],
      [TimelineQuerySchema, { namespace: 'a', anchor: 'm', max_tokens: 'lots' }, 'max_tokens', '"lots"'],
      [ConsolidationsQuerySchema, { namespace: 'a', limit: 'ten' }, 'limit', '"ten"'],
    ] as const) {
      const err = refusal(schema, input);
      expect(err.data.field).toBe(field);
      expect(err.message).toBe(`${field} must be an integer, got ${sent}`);
    }
  });

  it('reads digits as the number, and keeps the bounds and defaults', () => {
    expect(TimelineQuerySchema.parse({ namespace: 'a', anchor: 'm', before: '7', after: 3 })).toEqual({
      namespace: 'a',
      anchor: 'm',
      before: 7,
      after: 3,
    });
    expect(TimelineQuerySchema.parse({ namespace: 'a', anchor: 'm' })).toMatchObject({ before: 5, after: 5 });
    expect(refusal(TimelineQuerySchema, { namespace: 'a', anchor: 'm', before: '51' }).data.field).toBe(
      'before',
    );
    expect(refusal(TimelineQuerySchema, { namespace: 'a', anchor: 'm', max_tokens: '1e9' }).message).toBe(
      'max_tokens must be at most 100000',
    );
    expect(ConsolidationsQuerySchema.parse({ namespace: 'a' }).limit).toBe(100);
  });
});
