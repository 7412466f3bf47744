import { useEffect, useState } from 'preact/hooks';

// Views live in the URL's hash (#/search?ns=…), so the server serves one index.html for every view, the
// back button works, and a view can be linked or reloaded.

export type View = 'namespaces' | 'search' | 'memory' | 'operations';

export interface Route {
  view: View;
  params: URLSearchParams;
}

const VIEWS: Record<string, View> = {
  '': 'namespaces',
  namespaces: 'namespaces',
  search: 'search',
  memory: 'memory',
  ops: 'operations',
};

const PATHS: Record<View, string> = {
  namespaces: 'namespaces',
  search: 'search',
  memory: 'memory',
  operations: 'ops',
};

export function parseRoute(hash: string): Route {
  const body = hash.replace(/^#\/?/, '');
  const q = body.indexOf('?');
  const path = q < 0 ? body : body.slice(0, q);
  const params = new URLSearchParams(q < 0 ? '' : body.slice(q + 1));
  return { view: VIEWS[path] ?? 'namespaces', params };
}

/** The hash of a view with its parameters (empty ones left out). */
export function href(view: View, params: Record<string, string | undefined> = {}): string {
  const qs = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v) qs.set(k, v);
  const s = qs.toString();
  return `#/${PATHS[view]}${s ? `?${s}` : ''}`;
}

export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(location.hash));
  useEffect(() => {
    const onChange = () => setRoute(parseRoute(location.hash));
    addEventListener('hashchange', onChange);
    return () => removeEventListener('hashchange', onChange);
  }, []);
  return route;
}
