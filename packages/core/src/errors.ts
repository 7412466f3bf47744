/**
 * The one error type of Cairn. Every failure that crosses a package boundary is a CairnError with a
 * stable string code; apps map codes to exit codes, HTTP statuses or MCP errors in one exhaustive switch.
 */
export const CairnErrorCode = {
  /** The caller sent something malformed: bad JSON, a missing or mistyped field, oversized text. */
  INVALID_INPUT: 'INVALID_INPUT',
  /** A memory, anchor or namespace the caller named does not exist; or no route has that path. */
  NOT_FOUND: 'NOT_FOUND',
  /** The path exists but not with that HTTP method: the message and the `Allow` header name the ones it takes. */
  METHOD_NOT_ALLOWED: 'METHOD_NOT_ALLOWED',
  /** A vector's length differs from its embedding space's dimensions. */
  DIMENSION_MISMATCH: 'DIMENSION_MISMATCH',
  /** The caller may not read or write that namespace. */
  FORBIDDEN_NAMESPACE: 'FORBIDDEN_NAMESPACE',
  /** No credentials, or credentials no one issued. */
  UNAUTHORIZED: 'UNAUTHORIZED',
  /** A request body, batch or response budget past a documented limit. */
  PAYLOAD_TOO_LARGE: 'PAYLOAD_TOO_LARGE',
  /** Too many requests from one caller; retry after `data.retryAfterMs`. */
  RATE_LIMITED: 'RATE_LIMITED',
  /** A backend (embedder, vector index, Redis) cannot answer right now; the request may be retried. */
  BACKEND_UNAVAILABLE: 'BACKEND_UNAVAILABLE',
  /** The on-disk data is newer than this build, or damaged beyond automatic repair. */
  STORAGE_ERROR: 'STORAGE_ERROR',
  /** The disk holding the data folder is full: nothing of the write was stored; free space and retry. */
  STORAGE_FULL: 'STORAGE_FULL',
  /**
   * The operation needs the data folder's writer role (embedding and indexing, e.g. a bulk ingest that
   * waits until everything is indexed), and another live process holds it. Run it through that process,
   * or retry once it exits: the role passes to the next process that asks.
   */
  WRITER_ELSEWHERE: 'WRITER_ELSEWHERE',
  /** A bug: an invariant did not hold. */
  INTERNAL: 'INTERNAL',
} as const;

export type CairnErrorCode = (typeof CairnErrorCode)[keyof typeof CairnErrorCode];

export interface CairnErrorData {
  /** The input field at fault, as a dotted path (`tags.3`), when there is one. */
  field?: string;
  [key: string]: unknown;
}

export class CairnError extends Error {
  override readonly name = 'CairnError';

  constructor(
    readonly code: CairnErrorCode,
    message: string,
    readonly data: CairnErrorData = {},
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }

  toJSON(): { code: CairnErrorCode; message: string; field?: string } {
    return this.data.field === undefined
      ? { code: this.code, message: this.message }
      : { code: this.code, message: this.message, field: this.data.field };
  }
}

export function isCairnError(err: unknown): err is CairnError {
  return err instanceof CairnError;
}
