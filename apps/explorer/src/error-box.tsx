import type { ApiError } from './api.js';

/** An API error as the server gave it: HTTP status, code, message and the field at fault. */
export function ErrorBox({ error, context }: { error: ApiError; context?: string }) {
  const hint =
    error.status === 401
      ? 'This server needs an API key: type it in the key box above.'
      : error.status === 403
        ? 'Your API key may not read this (a namespace it was not given, or an operator route that needs a * key).'
        : error.status === 0
          ? 'The server did not answer; it may have stopped.'
          : null;
  return (
    <div class="error" role="alert" data-testid="error">
      <strong>
        {context ? `${context}: ` : ''}
        {error.status > 0 ? `HTTP ${error.status} ` : ''}
        {error.code}
      </strong>
      <span> {error.message}</span>
      {error.field ? <span class="muted"> (field: {error.field})</span> : null}
      {hint ? <div class="muted">{hint}</div> : null}
    </div>
  );
}
