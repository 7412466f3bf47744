import type { MemoryRecordOut } from '@cairn/api-contract';
import { Fragment } from 'preact';
import { fmtDate, fmtInt } from '../format.js';
import { href } from '../route.js';

/** A full record as POST /v1/memories/get returns it, every field shown, the text as written. */
export function RecordCard({ record: r, tokensUsed }: { record: MemoryRecordOut; tokensUsed: number }) {
  const fields = Object.entries(r.fields ?? {});
  const meta = Object.keys(r.meta ?? {}).length > 0 ? JSON.stringify(r.meta, null, 2) : null;
  // Absent on a server older than the confidence field: shown only when the API sends it.
  const confidence = (r as { confidence?: number | null }).confidence;
  return (
    <article class="record">
      {r.title ? (
        <h3>
          <bdi>{r.title}</bdi>
        </h3>
      ) : null}
      <p class="record-tokens" data-testid="record-tokens">
        <b>{fmtInt(r.tokens)}</b> tokens (this answer used {fmtInt(tokensUsed)})
      </p>
      <pre class="record-text" data-testid="record-text">
        {r.text}
      </pre>
      <dl class="record-fields">
        <dt>kind</dt>
        <dd>{r.kind}</dd>
        <dt>date</dt>
        <dd>{fmtDate(r.date)}</dd>
        <dt>session</dt>
        <dd>{r.session ?? '–'}</dd>
        <dt>agent</dt>
        <dd>{r.agent ?? '–'}</dd>
        <dt>tags</dt>
        <dd>{r.tags.length ? r.tags.join(', ') : '–'}</dd>
        <dt>importance</dt>
        <dd>{r.importance}</dd>
        {confidence !== undefined ? (
          <>
            <dt>confidence</dt>
            <dd>{confidence ?? 'not stated'}</dd>
          </>
        ) : null}
        <dt>accessed</dt>
        <dd>
          {fmtInt(r.accessCount)} times
          {r.lastAccessed ? `, last ${fmtDate(r.lastAccessed)}` : ''}
        </dd>
        {r.supersededBy ? (
          <>
            <dt>superseded by</dt>
            <dd>
              <a href={href('memory', { ns: r.namespace, id: r.supersededBy })}>
                <code>{r.supersededBy}</code>
              </a>
            </dd>
          </>
        ) : null}
        {fields.map(([name, value]) => (
          <Fragment key={name}>
            <dt>field {name}</dt>
            <dd>{value}</dd>
          </Fragment>
        ))}
      </dl>
      {meta ? (
        <>
          <h4>meta</h4>
          <pre class="record-meta">{meta}</pre>
        </>
      ) : null}
    </article>
  );
}
