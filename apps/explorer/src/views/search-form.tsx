import type { SearchForm } from '../search-request.js';

type TextField = Exclude<keyof SearchForm, 'explain' | 'offset'>;

const FILTERS: Array<[TextField, string, string]> = [
  ['kinds', 'kinds', 'turn, fact, …'],
  ['sessions', 'sessions', 's1, s2'],
  ['agents', 'agents', 'claude-code'],
  ['tags', 'tags', 'any of: bug, infra'],
  ['since', 'since', '2026-10-01, 7d or epoch ms'],
  ['until', 'until', '2026-10-31 or 1d'],
];

const DECAYS: Array<[string, string]> = [
  ['auto', 'auto (age breaks close calls)'],
  ['off', 'off'],
  ['1d', 'half-life 1 day'],
  ['7d', 'half-life 7 days'],
  ['30d', 'half-life 30 days'],
  ['90d', 'half-life 90 days'],
  ['365d', 'half-life 1 year'],
];

/**
 * The search form's controls. One <form>: Enter in any field searches. Filters and per-query options
 * are in disclosure sections; a blank one keeps the server's default.
 */
export function SearchFormFields({
  form,
  namespaces,
  set,
  busy,
}: {
  form: SearchForm;
  namespaces: string[];
  set: (patch: Partial<SearchForm>) => void;
  busy: boolean;
}) {
  const text = (field: TextField, label: string, placeholder = '', numeric = false) => {
    const common = {
      id: field,
      name: field,
      placeholder,
      value: form[field],
      onInput: (e: Event) => set({ [field]: (e.currentTarget as HTMLInputElement).value, offset: 0 }),
    };
    return (
      <div class="field" key={field}>
        <label for={field}>{label}</label>
        {/* Weights are fractions: any step, or the browser would refuse 0.02 before the server sees it. */}
        {numeric ? <input type="number" step="any" {...common} /> : <input type="text" {...common} />}
      </div>
    );
  };
  const activeFilters = FILTERS.filter(([f]) => form[f].trim() !== '').length;
  return (
    <>
      <div class="search-main">
        <label class="field ns-field">
          <span>namespace</span>
          <input
            id="namespace"
            name="namespace"
            list="namespace-list"
            required
            autocomplete="off"
            value={form.namespace}
            onInput={(e) => set({ namespace: e.currentTarget.value, offset: 0 })}
          />
          <datalist id="namespace-list">
            {namespaces.map((ns) => (
              <option key={ns} value={ns} />
            ))}
          </datalist>
        </label>
        <label class="field query-field">
          <span>
            query <kbd>/</kbd>
          </span>
          <input
            id="query"
            name="query"
            type="search"
            autocomplete="off"
            placeholder="why did the auth middleware crash?  (blank + a filter: list newest first)"
            value={form.query}
            onInput={(e) => set({ query: e.currentTarget.value, offset: 0 })}
          />
        </label>
        <label class="field small-field">
          <span>k</span>
          <input
            id="k"
            name="k"
            type="number"
            min={1}
            value={form.k}
            onInput={(e) => set({ k: e.currentTarget.value, offset: 0 })}
          />
        </label>
        <label class="field small-field">
          <span>explain</span>
          <select
            id="explain"
            name="explain"
            value={form.explain}
            onChange={(e) => set({ explain: e.currentTarget.value === 'full' ? 'full' : 'hits' })}
          >
            <option value="hits">hits</option>
            <option value="full">full trace</option>
          </select>
        </label>
        <button type="submit" class="primary" disabled={busy} data-testid="search-button">
          {busy ? 'Searching…' : 'Search'}
        </button>
      </div>
      <div class="search-more">
        {/* Open while a filter is set, so a filter in force (a listing's, say) is never out of sight. */}
        <details open={activeFilters > 0}>
          <summary>Filters{activeFilters > 0 ? ` (${activeFilters} set)` : ''}</summary>
          <div class="field-grid">{FILTERS.map(([f, label, ph]) => text(f, label, ph))}</div>
        </details>
        <details>
          <summary>Ranking options</summary>
          <div class="field-grid">
            {text('lexical', 'lexical weight', 'server default', true)}
            {text('vector', 'vector weight', 'server default', true)}
            <label class="field">
              <span>decay</span>
              <select
                id="decay"
                name="decay"
                value={form.decay}
                onChange={(e) => set({ decay: e.currentTarget.value })}
              >
                {DECAYS.map(([v, label]) => (
                  <option key={v} value={v}>
                    {label}
                  </option>
                ))}
              </select>
            </label>
            <label class="field">
              <span>rerank</span>
              <select
                id="rerank"
                name="rerank"
                value={form.rerank}
                onChange={(e) => set({ rerank: e.currentTarget.value })}
              >
                <option value="auto">auto (server default)</option>
                <option value="off">off: the fused order</option>
                <option value="deterministic">deterministic (query coverage)</option>
                <option value="model">model (the configured reranker)</option>
              </select>
            </label>
          </div>
        </details>
      </div>
    </>
  );
}
