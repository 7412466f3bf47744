import type { SpacesResponse } from '@cairn/api-contract';
import { fmtInt } from '../format.js';

/** Embedding spaces with their progress: a live reindex fills a building space beside the active one. */
export function SpacesTable({ spaces }: { spaces: SpacesResponse['spaces'] }) {
  if (spaces.length === 0) return <p class="muted">No embedding space yet (lexical only).</p>;
  return (
    <div class="table-wrap">
      <table class="data" data-testid="spaces-table">
        <thead>
          <tr>
            <th scope="col">space</th>
            <th scope="col">embedder</th>
            <th scope="col" class="num">
              dims
            </th>
            <th scope="col">state</th>
            <th scope="col">progress</th>
            <th scope="col">build</th>
          </tr>
        </thead>
        <tbody>
          {spaces.map((s) => {
            const pct = s.progress.total > 0 ? s.progress.embedded / s.progress.total : 1;
            return (
              <tr key={s.id}>
                <th scope="row">
                  <code>{s.id}</code>
                  {s.active ? <span class="badge"> active</span> : null}
                </th>
                <td>{s.embedder ?? '–'}</td>
                <td class="num">{s.dimensions}</td>
                <td>
                  {s.state}
                  {s.activate_when_ready ? ' (activates when ready)' : ''}
                  {!s.active && s.current_until !== null && s.current_until > Date.now()
                    ? ` (kept current for ${Math.ceil((s.current_until - Date.now()) / 60_000)} more min: activating it is instant)`
                    : ''}
                </td>
                <td>
                  <progress max={1} value={pct} aria-label={`${s.id} embedded`} />{' '}
                  {fmtInt(s.progress.embedded)} / {fmtInt(s.progress.total)}
                  {s.progress.failed ? <span class="bad"> · {fmtInt(s.progress.failed)} failed</span> : null}
                </td>
                <td>
                  {s.build ? s.build.phase : '–'}
                  {s.build?.last_error ? <span class="bad"> {s.build.last_error}</span> : null}
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}
