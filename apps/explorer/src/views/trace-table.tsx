import type { CandidateTrace, SearchResponse } from '@cairn/core';
import { fmtFactor, fmtScore } from '../format.js';
import { href } from '../route.js';

/** What explain 'full' puts in a response's `trace`: the router's explain (settings and candidates). */
export type Trace = Partial<SearchResponse['explain']>;

/** At most this many rows are drawn; a candidate pool can hold hundreds and the table is for reading. */
const MAX_ROWS = 300;

/**
 * The retrieval trace: every fused candidate with its fate (hit, duplicate of a hit, dropped for
 * diversity, or below k), its ranks and parts; the memories consolidation merged into the hits; and the
 * settings the search ran with.
 */
export function TraceTable({ trace, namespace }: { trace: Trace; namespace: string }) {
  const candidates: CandidateTrace[] = trace.candidates ?? [];
  const fates = new Map<string, number>();
  for (const c of candidates) fates.set(c.fate, (fates.get(c.fate) ?? 0) + 1);
  const s = trace.settings;
  return (
    <details class="trace" data-testid="trace">
      <summary>
        Full trace: {candidates.length} candidates (
        {[...fates].map(([f, n]) => `${n} ${f}`).join(', ') || 'none'})
      </summary>
      {s ? (
        <dl class="settings" data-testid="trace-settings">
          <dt>lexical query</dt>
          <dd>
            <code>{trace.lexicalQuery ?? '–'}</code>
            {trace.droppedTerms?.length ? ` (dropped: ${trace.droppedTerms.join(', ')})` : ''}
          </dd>
          <dt>vector leg</dt>
          <dd>
            {trace.space ?? 'did not run'}
            {trace.vectorExact === null || trace.vectorExact === undefined
              ? ''
              : trace.vectorExact
                ? ' (exact)'
                : typeof trace.vectorFromLexical === 'number'
                  ? ` (HNSW, completed by ${trace.vectorFromLexical} lexical candidates scored exactly)`
                  : ' (HNSW)'}
          </dd>
          <dt>weights</dt>
          <dd>
            lexical {s.weights.lexical}, vector {s.weights.vector}, rrfK {s.rrfK}, k {s.k}, pool{' '}
            {s.candidatePool}
          </dd>
          <dt>recency</dt>
          <dd>
            {s.recency.mode}
            {s.recency.weight !== null ? `, w ${fmtScore(s.recency.weight)}` : ''}
            {s.recency.intent ? `, intent ${JSON.stringify(s.recency.intent)}` : ''}
          </dd>
        </dl>
      ) : null}
      <div class="table-wrap">
        <table class="data trace-table" data-testid="trace-table">
          <thead>
            <tr>
              <th scope="col">pos</th>
              <th scope="col">fate</th>
              <th scope="col">id</th>
              <th scope="col" class="num">
                BM25 rank
              </th>
              <th scope="col" class="num">
                vec rank
              </th>
              <th scope="col" class="num">
                lexical
              </th>
              <th scope="col" class="num">
                vector
              </th>
              <th scope="col" class="num">
                routes
              </th>
              <th scope="col" class="num">
                recency
              </th>
              <th scope="col" class="num">
                importance
              </th>
              <th scope="col" class="num">
                rrf
              </th>
              <th scope="col" class="num">
                score
              </th>
            </tr>
          </thead>
          <tbody>
            {candidates.slice(0, MAX_ROWS).map((c) => (
              <tr key={c.id} class={`fate-${c.fate}`} data-fate={c.fate}>
                <td>{c.position ?? ''}</td>
                <td>
                  {c.fate}
                  {c.duplicateOf ? (
                    <span class="muted">
                      {' '}
                      of <code>{c.duplicateOf}</code>
                    </span>
                  ) : null}
                </td>
                <td>
                  <a href={href('memory', { ns: namespace, id: c.id })}>
                    <code>{c.id}</code>
                  </a>
                </td>
                <td class="num">{c.bm25Rank ?? '–'}</td>
                <td class="num">{c.vecRank ?? '–'}</td>
                <td class="num">{fmtScore(c.parts.lexical)}</td>
                <td class="num">{fmtScore(c.parts.vector)}</td>
                <td class="num">{fmtScore(c.parts.routes)}</td>
                <td class="num">{fmtFactor(c.parts.recency)}</td>
                <td class="num">{fmtFactor(c.parts.importance)}</td>
                <td class="num">{fmtScore(c.rrf)}</td>
                <td class="num">{fmtScore(c.score)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {candidates.length > MAX_ROWS ? (
        <p class="muted">
          First {MAX_ROWS} of {candidates.length} candidates shown.
        </p>
      ) : null}
      {trace.superseded?.length ? (
        <div data-testid="superseded">
          <h3>Merged by consolidation</h3>
          <ul>
            {trace.superseded.map((m) => (
              <li key={m.id}>
                <a href={href('memory', { ns: namespace, id: m.id })}>
                  <code>{m.id}</code>
                </a>{' '}
                → merged into <code>{m.supersededBy}</code> (cosine {fmtScore(m.cosine)})
              </li>
            ))}
          </ul>
        </div>
      ) : null}
    </details>
  );
}
