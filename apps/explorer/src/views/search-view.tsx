import type { SearchResponseOut } from '@cairn/api-contract';
import { useEffect, useRef, useState } from 'preact/hooks';
import { type ApiError, api } from '../api.js';
import { ErrorBox } from '../error-box.js';
import { href } from '../route.js';
import { buildSearchRequest, EMPTY_FORM, pageSize, type SearchForm } from '../search-request.js';
import { asApiError } from '../use-poll.js';
import { SearchFormFields } from './search-form.js';
import { SearchResults } from './search-results.js';

interface Outcome {
  /** The API key generation it was made with: another key must not see this one's results. */
  keyEpoch: number;
  form: SearchForm;
  res: SearchResponseOut | null;
  error: ApiError | null;
}

// The last search outlives the view, so coming back from a record or a timeline finds it as it was.
let last: Outcome | null = null;

/** Filters that make a blank query a listing of the whole namespace, newest first. */
const BROWSE: Partial<SearchForm> = { query: '', since: '1970-01-01', offset: 0 };

/**
 * Search: the form, the compact index with each hit's explanation, and the trace. Every search is one
 * POST /v1/search with the key typed above; listings (a blank query with a filter) are paged by offset,
 * so no view ever loads a whole namespace.
 */
export function SearchView({ params, keyEpoch }: { params: URLSearchParams; keyEpoch: number }) {
  if (last && last.keyEpoch !== keyEpoch) last = null;
  const [form, setForm] = useState<SearchForm>(() => last?.form ?? EMPTY_FORM);
  const [outcome, setOutcome] = useState<Outcome | null>(last);
  const [busy, setBusy] = useState(false);
  const [namespaces, setNamespaces] = useState<string[]>([]);
  const seq = useRef(0);

  const run = async (f: SearchForm) => {
    const mine = ++seq.current;
    setBusy(true);
    let next: Outcome;
    try {
      next = { keyEpoch, form: f, res: await api.search(buildSearchRequest(f)), error: null };
    } catch (err) {
      next = { keyEpoch, form: f, res: null, error: asApiError(err) };
    }
    // A slower, older search must not overwrite a newer one's answer.
    if (mine !== seq.current) return;
    last = next;
    setOutcome(next);
    setBusy(false);
  };

  // The namespaces this key may read, for the namespace box; the first one when none is chosen yet.
  useEffect(() => {
    let live = true;
    api
      .stats()
      .then((s) => {
        if (!live) return;
        const names = Object.keys(s.namespaces).sort();
        setNamespaces(names);
        setForm((f) => (f.namespace || !names[0] ? f : { ...f, namespace: names[0] }));
      })
      .catch(() => {
        // The search itself will show the error (a bad key, say) when the user runs it.
      });
    return () => {
      live = false;
    };
  }, []);

  // #/search?ns=…[&browse=1], from the namespaces view: choose it, and list it newest first when asked.
  // Only the namespace changes otherwise: what the user has typed since stays.
  const formNow = useRef(form);
  formNow.current = form;
  const ns = params.get('ns');
  const browse = params.get('browse') === '1';
  useEffect(() => {
    if (!ns) return;
    if (browse) {
      const f = { ...formNow.current, namespace: ns, ...BROWSE };
      setForm(f);
      void run(f);
      // The listing was asked for once: drop `browse` from this history entry, so coming Back here from a
      // record restores the last search (a query typed since, the page reached) instead of listing again.
      history.replaceState(history.state, '', href('search', { ns }));
    } else setForm((f) => ({ ...f, namespace: ns }));
  }, [ns, browse]);

  const query = useRef<HTMLFormElement>(null);
  useEffect(() => {
    query.current?.querySelector<HTMLInputElement>('#query')?.focus();
  }, []);

  const set = (patch: Partial<SearchForm>) => setForm((f) => ({ ...f, ...patch }));
  const submit = (e: Event) => {
    e.preventDefault();
    void run(form);
  };
  const page = (offset: number) => {
    const f = { ...(outcome?.form ?? form), offset };
    setForm(f);
    void run(f);
  };

  return (
    <section aria-labelledby="search-title">
      <h1 id="search-title" class="visually-hidden">
        Search
      </h1>
      <form class="search-form" ref={query} onSubmit={submit} aria-label="search">
        <SearchFormFields form={form} namespaces={namespaces} set={set} busy={busy} />
      </form>
      {outcome?.error ? <ErrorBox error={outcome.error} context="POST /v1/search" /> : null}
      {outcome?.res ? <SearchResults res={outcome.res} k={pageSize(outcome.form)} onPage={page} /> : null}
    </section>
  );
}
