import type { GetResponse, IndexEntry, TimelineResponse } from '@cairn/api-contract';
import { useEffect, useState } from 'preact/hooks';
import { type ApiError, api } from '../api.js';
import { ErrorBox } from '../error-box.js';
import { fmtDate, fmtInt } from '../format.js';
import { href } from '../route.js';
import { asApiError } from '../use-poll.js';
import { RecordCard } from './record-card.js';

type Loaded<T> = { data: T; error: null } | { data: null; error: ApiError } | null;

async function load<T>(p: Promise<T>): Promise<Loaded<T>> {
  try {
    return { data: await p, error: null };
  } catch (err) {
    return { data: null, error: asApiError(err) };
  }
}

/**
 * One memory: the timeline around it (GET /v1/timeline, its session in time order, or the namespace's
 * when it has none) and its full record (POST /v1/memories/get), side by side on a wide screen. Both are
 * asked for with the key typed above; a memory the key may not read answers its error here.
 */
export function MemoryView({ params }: { params: URLSearchParams }) {
  const namespace = params.get('ns') ?? '';
  const id = params.get('id') ?? '';
  const [side, setSide] = useState(5);
  const [timeline, setTimeline] = useState<Loaded<TimelineResponse>>(null);
  const [record, setRecord] = useState<Loaded<GetResponse>>(null);

  useEffect(() => {
    if (!namespace || !id) return;
    let live = true;
    void load(api.get(namespace, [id])).then((r) => live && setRecord(r));
    return () => {
      live = false;
    };
  }, [namespace, id]);
  useEffect(() => {
    if (!namespace || !id) return;
    let live = true;
    void load(api.timeline(namespace, id, side, side)).then((r) => live && setTimeline(r));
    return () => {
      live = false;
    };
  }, [namespace, id, side]);

  if (!namespace || !id)
    return <p class="empty">Open a memory from a search hit, a timeline or the trace table.</p>;

  const entry = (e: IndexEntry, anchor = false) => (
    <li key={e.id} class={anchor ? 'tl-entry anchor' : 'tl-entry'} data-testid="timeline-entry">
      <span class="tl-date">{fmtDate(e.date)}</span>
      <span class={`kind kind-${e.kind}`}>{e.kind}</span>{' '}
      {anchor ? (
        <b aria-current="true">
          <bdi>{e.title}</bdi>
        </b>
      ) : (
        <a href={href('memory', { ns: namespace, id: e.id })}>
          <bdi>{e.title}</bdi>
        </a>
      )}
      <span class="muted"> · {fmtInt(e.tokens)} tokens</span>
    </li>
  );
  const t = timeline?.data;
  return (
    <section aria-labelledby="memory-title" class="memory">
      <div class="section-head">
        <h1 id="memory-title">
          Memory <code>{id}</code>
        </h1>
        <p class="muted">
          in <code>{namespace}</code> · <a href="#/search">back to search</a>
        </p>
      </div>
      <div class="memory-grid">
        <div class="panel" data-testid="timeline">
          <h2>Timeline {t ? <span class="muted">({t.scope})</span> : null}</h2>
          {timeline?.error ? <ErrorBox error={timeline.error} context="GET /v1/timeline" /> : null}
          {t ? (
            <>
              <ol class="timeline">
                {t.before.map((e) => entry(e))}
                {entry(t.anchor, true)}
                {t.after.map((e) => entry(e))}
              </ol>
              <p class="muted small">
                {t.before.length} before, {t.after.length} after · {fmtInt(t.tokens.used)} tokens
                {t.tokens.omitted ? ` · ${t.tokens.omitted} left out by the budget` : ''}
              </p>
              <button type="button" onClick={() => setSide((n) => Math.min(n * 2, 50))} disabled={side >= 50}>
                show more around it
              </button>
            </>
          ) : timeline === null ? (
            <p class="muted">loading…</p>
          ) : null}
        </div>
        <div class="panel" data-testid="record">
          <h2>Full record</h2>
          {record?.error ? <ErrorBox error={record.error} context="POST /v1/memories/get" /> : null}
          {record?.data ? (
            record.data.memories[0] ? (
              <RecordCard record={record.data.memories[0]} tokensUsed={record.data.tokens.used} />
            ) : (
              <p class="empty">
                No live memory <code>{id}</code> in this namespace (deleted, or never written).
              </p>
            )
          ) : record === null ? (
            <p class="muted">loading…</p>
          ) : null}
        </div>
      </div>
    </section>
  );
}
