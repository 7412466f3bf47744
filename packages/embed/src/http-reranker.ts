import { CairnError, type Reranker } from '@cairn/core';

/**
 * The wire formats a reranker endpoint may speak:
 * - `tei`: Hugging Face text-embeddings-inference, `POST {url}/rerank` with `{query, texts}`, answering
 *   `[{index, score}]` (also served by Infinity and most self-hosted cross-encoders);
 * - `cohere`: Cohere's `POST {url}/v1/rerank` with `{model, query, documents, top_n}`, answering
 *   `{results: [{index, relevance_score}]}` (also Jina, Voyage and LiteLLM proxies).
 */
export type RerankerFormat = 'tei' | 'cohere';

export interface HttpRerankerInit {
  format: RerankerFormat;
  /** Base URL, e.g. `http://127.0.0.1:8080` (TEI) or `https://api.cohere.com` (Cohere). */
  url: string;
  /** Cohere-style endpoints name the model. */
  model?: string;
  /** Sent as `Authorization: Bearer <apiKey>`. @defaultValue none */
  apiKey?: string;
  /** @defaultValue globalThis.fetch, looked up at each request */
  fetch?: typeof fetch;
}

/**
 * A reranker behind an HTTP endpoint. The router gives each call a deadline (`rerankTimeoutMs`) through
 * the signal; any failure is thrown as BACKEND_UNAVAILABLE, which the router turns into "fused order
 * kept" in the response rather than a failed search.
 */
export class HttpReranker implements Reranker {
  readonly id: string;

  constructor(private readonly init: HttpRerankerInit) {
    this.id = `${init.format}:${init.model ?? init.url}`;
  }

  async rerank(query: string, texts: readonly string[], signal: AbortSignal): Promise<number[]> {
    if (texts.length === 0) return [];
    const { format, url, model, apiKey } = this.init;
    const base = url.replace(/\/+$/, '');
    const endpoint = format === 'tei' ? `${base}/rerank` : `${base}/v1/rerank`;
    const body =
      format === 'tei'
        ? { query, texts, raw_scores: false, truncate: true }
        : { model, query, documents: texts, top_n: texts.length };
    let res: Response;
    let json: unknown;
    try {
      res = await (this.init.fetch ?? globalThis.fetch)(endpoint, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          ...(apiKey ? { authorization: `Bearer ${apiKey}` } : {}),
        },
        body: JSON.stringify(body),
        signal,
      });
      json = await res.json().catch(() => undefined);
    } catch (err) {
      throw new CairnError('BACKEND_UNAVAILABLE', `reranker at ${endpoint}: ${(err as Error).message}`, {
        backend: 'reranker',
      });
    }
    if (!res.ok)
      throw new CairnError('BACKEND_UNAVAILABLE', `reranker at ${endpoint} answered HTTP ${res.status}`, {
        backend: 'reranker',
        status: res.status,
      });
    const items = format === 'tei' ? json : (json as { results?: unknown } | undefined)?.results;
    if (!Array.isArray(items))
      throw new CairnError('BACKEND_UNAVAILABLE', `reranker at ${endpoint} answered no ranking`, {
        backend: 'reranker',
      });
    const scores = new Array<number>(texts.length).fill(Number.NEGATIVE_INFINITY);
    for (const item of items as Array<{ index?: unknown; score?: unknown; relevance_score?: unknown }>) {
      const score = format === 'tei' ? item.score : item.relevance_score;
      if (
        typeof item.index === 'number' &&
        item.index >= 0 &&
        item.index < texts.length &&
        typeof score === 'number'
      )
        scores[item.index] = score;
    }
    // A text the endpoint left out of its answer ranks last rather than failing the page.
    const floor = Math.min(...scores.filter(Number.isFinite), 0) - 1;
    return scores.map((s) => (Number.isFinite(s) ? s : floor));
  }
}

/**
 * A reranker spec (CAIRN_RERANKER): `tei:<url>`, or `cohere:<model>@<url>` (the URL defaults to
 * `https://api.cohere.com`). The key comes from CAIRN_RERANKER_KEY.
 */
export function parseRerankerSpec(
  spec: string,
  env: Record<string, string | undefined> = process.env,
): HttpReranker {
  const bad = () =>
    new CairnError('INVALID_INPUT', `reranker spec "${spec}": give tei:<url> or cohere:<model>[@<url>]`, {
      field: 'CAIRN_RERANKER',
    });
  const at = spec.indexOf(':');
  if (at < 0) throw bad();
  const kind = spec.slice(0, at);
  const rest = spec.slice(at + 1);
  const apiKey = env.CAIRN_RERANKER_KEY || undefined;
  if (kind === 'tei') {
    if (!/^https?:\/\/[^/]/.test(rest)) throw bad();
    return new HttpReranker({ format: 'tei', url: rest, ...(apiKey ? { apiKey } : {}) });
  }
  if (kind === 'cohere') {
    // The model ends at the first @: the URL after it may hold one of its own (user@host).
    const at2 = rest.indexOf('@');
    const model = at2 < 0 ? rest : rest.slice(0, at2);
    const url = at2 < 0 ? 'https://api.cohere.com' : rest.slice(at2 + 1);
    if (!model || !/^https?:\/\/[^/]/.test(url)) throw bad();
    return new HttpReranker({ format: 'cohere', url, model, ...(apiKey ? { apiKey } : {}) });
  }
  throw bad();
}
