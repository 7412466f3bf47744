import type { RerankerFormat } from '../http-reranker.js';
import { type FakeReply, type FakeServer, startLoopbackServer } from './loopback-server.js';

/** The body of TEI's `POST /rerank`. */
export interface TeiRerankRequest {
  query: string;
  texts: string[];
  raw_scores?: boolean;
  return_text?: boolean;
  truncate?: boolean;
}

/** The body of Cohere's `POST /v1/rerank`. */
export interface CohereRerankRequest {
  model: string;
  query: string;
  documents: string[];
  top_n?: number;
}

export interface FakeRerankerOptions {
  format: RerankerFormat;
  /**
   * The relevance of a text to a query, in [0, 1] (a cross-encoder's sigmoid output).
   * @defaultValue the share of the query's words the text contains
   */
  scoreOf?: (query: string, text: string) => number;
}

const words = (s: string) => new Set(s.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []);

/** Word overlap: a deterministic stand-in for a cross-encoder's judgement. */
export function overlapScore(query: string, text: string): number {
  const q = words(query);
  if (q.size === 0) return 0;
  const t = words(text);
  let n = 0;
  for (const w of q) if (t.has(w)) n++;
  return n / q.size;
}

/**
 * A fake reranker on 127.0.0.1 speaking TEI's `POST /rerank` or Cohere's `POST /v1/rerank`, answering
 * in the real servers' shapes (best first; Cohere wraps them in `results` with an `id` and `meta`).
 * `hang` mode holds requests, for timeout tests.
 */
export async function startFakeReranker(
  opts: FakeRerankerOptions,
): Promise<FakeServer<TeiRerankRequest | CohereRerankRequest>> {
  const scoreOf = opts.scoreOf ?? overlapScore;
  return startLoopbackServer<TeiRerankRequest | CohereRerankRequest>((req, mode): FakeReply => {
    const path = opts.format === 'tei' ? '/rerank' : '/v1/rerank';
    if (req.method !== 'POST' || req.path !== path) return { status: 404, body: { error: 'Not Found' } };
    if (mode === 'busy')
      return { status: 429, body: { error: 'Model is overloaded', error_type: 'overloaded' } };
    if (mode === 'error500') return { status: 500, body: { error: 'internal error', error_type: 'backend' } };
    const body = req.body as Partial<TeiRerankRequest & CohereRerankRequest> | undefined;
    const texts = opts.format === 'tei' ? body?.texts : body?.documents;
    if (typeof body?.query !== 'string' || !Array.isArray(texts))
      return {
        status: 422,
        body: { error: 'Failed to deserialize the JSON body', error_type: 'validation' },
      };
    const ranked = texts
      .map((t, index) => ({ index, score: scoreOf(body.query!, String(t)) }))
      .sort((a, b) => b.score - a.score || a.index - b.index);
    if (opts.format === 'tei') return { status: 200, body: ranked };
    return {
      status: 200,
      body: {
        id: 'fake-rerank',
        results: ranked
          .slice(0, body.top_n ?? ranked.length)
          .map((r) => ({ index: r.index, relevance_score: r.score })),
        meta: { api_version: { version: '1' }, billed_units: { search_units: 1 } },
      },
    };
  });
}
