import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError } from './api.js';

export interface Polled<T> {
  data: T | null;
  error: ApiError | null;
  /** Epoch ms of the last answer (data or error). */
  at: number | null;
}

/**
 * Calls `load` now and every `intervalMs` while the view is mounted and the tab is visible, one call at a
 * time (a slow server is never stacked with requests). `deps` restart it (a new API key, say).
 */
export function usePoll<T>(load: () => Promise<T>, intervalMs: number, deps: unknown[]): Polled<T> {
  const [state, setState] = useState<Polled<T>>({ data: null, error: null, at: null });
  const loadRef = useRef(load);
  loadRef.current = load;
  useEffect(() => {
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const tick = async () => {
      if (document.visibilityState !== 'hidden') {
        try {
          const data = await loadRef.current();
          if (!stopped) setState({ data, error: null, at: Date.now() });
        } catch (err) {
          if (!stopped) setState((s) => ({ data: s.data, error: asApiError(err), at: Date.now() }));
        }
      }
      if (!stopped) timer = setTimeout(tick, intervalMs);
    };
    setState({ data: null, error: null, at: null });
    void tick();
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }, [intervalMs, ...deps]);
  return state;
}

export function asApiError(err: unknown): ApiError {
  return err instanceof ApiError
    ? err
    : new ApiError(0, 'CLIENT_ERROR', (err as Error).message ?? String(err));
}
