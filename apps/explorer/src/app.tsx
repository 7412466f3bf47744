import { useCallback, useEffect, useState } from 'preact/hooks';
import { ApiKeyForm } from './api-key-form.js';
import { href, useRoute, type View } from './route.js';
import { MemoryView } from './views/memory-view.js';
import { NamespacesView } from './views/namespaces-view.js';
import { OperationsView } from './views/operations-view.js';
import { SearchView } from './views/search-view.js';

const NAV: Array<[View, string]> = [
  ['namespaces', 'Namespaces'],
  ['search', 'Search'],
  ['operations', 'Operations'],
];

/** The shell: the key box, the views' tabs, and `/` to focus the search query from anywhere. */
export function App() {
  const route = useRoute();
  // Bumped when the key changes, so every view reloads with what the new key may see.
  const [keyEpoch, setKeyEpoch] = useState(0);
  const onKeyChange = useCallback(() => setKeyEpoch((n) => n + 1), []);

  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.key !== '/' || e.ctrlKey || e.metaKey || e.altKey) return;
      const t = e.target as HTMLElement | null;
      if (t && (t.isContentEditable || ['INPUT', 'TEXTAREA', 'SELECT'].includes(t.tagName))) return;
      e.preventDefault();
      const query = document.getElementById('query');
      if (query) query.focus();
      // The search view focuses its query when it mounts.
      else location.hash = href('search');
    };
    addEventListener('keydown', onKey);
    return () => removeEventListener('keydown', onKey);
  }, []);

  const view =
    route.view === 'search' ? (
      <SearchView key={keyEpoch} keyEpoch={keyEpoch} params={route.params} />
    ) : route.view === 'memory' ? (
      <MemoryView key={`${keyEpoch}:${route.params}`} params={route.params} />
    ) : route.view === 'operations' ? (
      <OperationsView keyEpoch={keyEpoch} />
    ) : (
      <NamespacesView keyEpoch={keyEpoch} />
    );

  return (
    <>
      <header class="top">
        <a class="brand" href={href('namespaces')}>
          Cairn explorer
        </a>
        <nav aria-label="views">
          {NAV.map(([v, label]) => (
            <a
              key={v}
              href={href(v)}
              class={route.view === v || (v === 'search' && route.view === 'memory') ? 'active' : ''}
              aria-current={route.view === v ? 'page' : undefined}
            >
              {label}
            </a>
          ))}
        </nav>
        <ApiKeyForm onChange={onKeyChange} />
      </header>
      <main id="main">{view}</main>
      <footer class="muted">
        Press <kbd>/</kbd> to search. Every call goes to this server's <code>/v1</code> API with your key; the
        API itself is documented at <a href="../docs">/docs</a>.
      </footer>
    </>
  );
}
