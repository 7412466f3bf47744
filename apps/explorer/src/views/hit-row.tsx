import type { SearchHitOut } from '@cairn/api-contract';
import { fmtDate, fmtInt, fmtScore } from '../format.js';
import { href } from '../route.js';
import { ScoreChart } from '../score-chart.js';

/**
 * One hit of the compact index: what the API returns for it (title, kind, date, session, token count of
 * the full record) and why it ranked there (its rank in each leg, cosine, the score-part chart).
 */
export function HitRow({
  hit,
  position,
  scale,
  listing,
}: {
  hit: SearchHitOut;
  position: number;
  scale: number;
  listing: boolean;
}) {
  const x = hit.explain;
  return (
    <li class="hit" data-testid="hit" data-id={hit.id}>
      <div class="hit-main">
        <div class="hit-title">
          <span class="pos">{position}</span>
          <a href={href('memory', { ns: hit.namespace, id: hit.id })} data-testid="hit-link">
            {/* Isolated: a right-to-left title, or one with a stray direction mark, leaves the line around it as it is. */}
            <bdi>{hit.title}</bdi>
          </a>
        </div>
        <div class="hit-meta muted">
          <span class={`kind kind-${hit.kind}`}>{hit.kind}</span> {fmtDate(hit.date)}
          {hit.session ? (
            <>
              {' '}
              · session <code>{hit.session}</code>
            </>
          ) : null}{' '}
          · {fmtInt(hit.tokens)} tokens · <code class="id">{hit.id}</code>
          {hit.dupCount ? (
            <span class="badge" title="near-duplicates the consolidation job merged into this memory">
              {' '}
              +{hit.dupCount} merged
            </span>
          ) : null}
        </div>
        {x && !listing ? (
          <div class="hit-ranks" data-testid="hit-ranks">
            <span>
              score <b>{fmtScore(hit.score)}</b>
            </span>
            <span>BM25 rank {x.bm25Rank ?? '–'}</span>
            <span>vector rank {x.vecRank ?? '–'}</span>
            <span>bm25 {fmtScore(x.bm25)}</span>
            <span>cosine {fmtScore(x.cosine)}</span>
            {x.routes?.length ? <span>routes {x.routes.join(', ')}</span> : null}
            {x.rerank ? (
              <span data-testid="hit-rerank">
                reranked: score {fmtScore(x.rerank.score)}, fused rank {x.rerank.fusedRank}
              </span>
            ) : null}
          </div>
        ) : null}
        <div class="hit-actions">
          <a href={href('memory', { ns: hit.namespace, id: hit.id })}>timeline &amp; record</a>
        </div>
      </div>
      {x && !listing ? <ScoreChart parts={x.parts} scale={scale} score={hit.score} /> : null}
    </li>
  );
}
