import { api } from '../api.js';
import { ErrorBox } from '../error-box.js';
import { fmtDate, fmtInt } from '../format.js';
import { href } from '../route.js';
import { usePoll } from '../use-poll.js';

const POLL_MS = 3_000;
const COUNTS = [
  'stored',
  'superseded',
  'deleted',
  'embedded',
  'indexed',
  'pending',
  'failed',
  'fields',
  'fieldsEmbedded',
] as const;
const HEADINGS: Record<(typeof COUNTS)[number], string> = {
  stored: 'stored',
  superseded: 'superseded',
  deleted: 'deleted',
  embedded: 'embedded',
  indexed: 'indexed',
  pending: 'pending',
  failed: 'failed',
  fields: 'fields',
  fieldsEmbedded: 'fields embedded',
};

/**
 * The namespaces the key may read (GET /v1/stats lists no other), with their pipeline counts, polled so an
 * ingest or a reindex can be watched as it runs.
 */
export function NamespacesView({ keyEpoch }: { keyEpoch: number }) {
  const stats = usePoll(api.stats, POLL_MS, [keyEpoch]);
  const rows = Object.entries(stats.data?.namespaces ?? {}).sort(([a], [b]) => a.localeCompare(b));
  return (
    <section aria-labelledby="ns-title">
      <div class="section-head">
        <h1 id="ns-title">Namespaces</h1>
        {stats.data ? (
          <p class="muted" data-testid="ns-meta">
            {stats.data.mode} mode · embedding space <code>{stats.data.space ?? 'none yet'}</code> · refreshed
            every {POLL_MS / 1000} s{stats.at ? ` (last ${fmtDate(stats.at).slice(11)})` : ''}
          </p>
        ) : null}
      </div>
      {stats.error ? <ErrorBox error={stats.error} context="GET /v1/stats" /> : null}
      {stats.data && rows.length === 0 ? (
        <p class="empty" data-testid="ns-empty">
          No namespace this key may read holds a memory.
        </p>
      ) : null}
      {rows.length > 0 ? (
        <div class="table-wrap">
          <table class="data" data-testid="ns-table">
            <thead>
              <tr>
                <th scope="col">namespace</th>
                {COUNTS.map((c) => (
                  <th key={c} scope="col" class="num">
                    {HEADINGS[c]}
                  </th>
                ))}
                <th scope="col">open</th>
              </tr>
            </thead>
            <tbody>
              {rows.map(([ns, s]) => (
                <tr key={ns} data-namespace={ns}>
                  <th scope="row">
                    <code>{ns}</code>
                  </th>
                  {COUNTS.map((c) => (
                    <td key={c} class={`num${c === 'failed' && s[c] > 0 ? ' bad' : ''}`}>
                      {fmtInt(s[c])}
                    </td>
                  ))}
                  <td class="actions">
                    <a href={href('search', { ns })}>search</a>
                    {/* A blank query with a filter is a listing: newest first, paged by offset. */}
                    <a href={href('search', { ns, browse: '1' })}>browse newest</a>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
      <p class="muted small">
        <b>stored</b>: in SQLite and lexically searchable · <b>embedded</b>: with a vector in the active space
        · <b>indexed</b>: in the vector index · <b>pending</b>: waiting for a vector · <b>failed</b>: refused
        by the embedder.
      </p>
    </section>
  );
}
