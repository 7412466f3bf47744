import type { SearchResponseOut } from '@cairn/api-contract';
import { fmtInt, fmtScore } from '../format.js';
import { ScoreLegend } from '../score-chart.js';
import { addedScale } from '../score-parts.js';
import { HitRow } from './hit-row.js';
import { type Trace, TraceTable } from './trace-table.js';

/**
 * A search response as the API gave it: the compact index with every hit's explanation, and, said plainly,
 * what the response says about itself (degraded legs and why, why it is empty, how relevant the first hits
 * are, the tokens it cost, which page of a listing it is).
 */
export function SearchResults({
  res,
  k,
  onPage,
}: {
  res: SearchResponseOut;
  k: number;
  onPage: (offset: number) => void;
}) {
  const listing = res.listing !== undefined;
  const scale = addedScale(res.hits.flatMap((h) => (h.explain ? [h.explain.parts] : [])));
  const offset = res.listing?.offset ?? 0;
  return (
    <section class="results" aria-live="polite" aria-label="search results">
      <p class="summary" data-testid="summary">
        <b>{res.hits.length}</b> {listing ? 'memories listed, newest first' : 'hits'} in{' '}
        <code>{res.namespace}</code>
        {listing ? ` from offset ${fmtInt(offset)}` : ''} · {fmtInt(res.tokens.used)} tokens
        {res.tokens.budget !== null ? ` of ${fmtInt(res.tokens.budget)}` : ''}
        {res.tokens.omitted > 0 ? ` (${res.tokens.omitted} left out by the budget)` : ''}
        {res.relevance ? (
          <span class={`relevance rel-${res.relevance.level}`} data-testid="relevance">
            {' '}
            · relevance {res.relevance.level} ({fmtScore(res.relevance.score)})
            {res.relevance.missing.length ? `, not found: ${res.relevance.missing.join(', ')}` : ''}
          </span>
        ) : null}
      </p>
      {res.rerank ? (
        <p class={res.rerank.applied ? 'muted' : 'warn'} data-testid="rerank">
          {res.rerank.applied
            ? `Reranked by ${res.rerank.by}: the first ${res.rerank.depth} hits, in ${res.rerank.tookMs.toFixed(1)} ms; each hit's score is still the fused one.`
            : `Not reranked (${res.rerank.by}): ${res.rerank.reason ?? 'the fused order stands'}.`}
        </p>
      ) : null}
      {res.degraded.length > 0 ? (
        <div class="warn" role="status" data-testid="degraded">
          <b>Degraded:</b> {res.degraded.join(' and ')} leg could not answer; the other served.
          <ul>
            {Object.entries(res.degradedReasons).map(([leg, why]) => (
              <li key={leg}>
                <b>{leg}</b>: {why}
              </li>
            ))}
          </ul>
        </div>
      ) : null}
      {res.empty ? (
        <div class="empty" role="status" data-testid="empty">
          <b>{res.empty.reason}</b>: {res.empty.message}
        </div>
      ) : null}
      {res.hits.length > 0 && !listing ? <ScoreLegend /> : null}
      <ol class="hits">
        {res.hits.map((h, i) => (
          <HitRow key={h.id} hit={h} position={offset + i + 1} scale={scale} listing={listing} />
        ))}
      </ol>
      {listing ? (
        <div class="pager">
          <button type="button" disabled={offset === 0} onClick={() => onPage(Math.max(0, offset - k))}>
            ← newer
          </button>
          <button type="button" disabled={res.hits.length < k} onClick={() => onPage(offset + k)}>
            older →
          </button>
        </div>
      ) : null}
      {res.trace ? <TraceTable trace={res.trace as Trace} namespace={res.namespace} /> : null}
    </section>
  );
}
