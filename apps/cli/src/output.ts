import { CairnError, type CairnErrorCode } from '@cairn/core';

/**
 * stdout carries only results (JSON with --json); logs (see logger.ts), progress and warnings go to
 * stderr, so `cairn search --json | jq` always parses.
 */
export function writeJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value)}\n`);
}

export function warn(message: string): void {
  process.stderr.write(`${message}\n`);
}

/**
 * Exit codes: 0 ok, 1 internal/backend failure, 2 bad input or not found, 3 some ingest lines rejected, 130
 * interrupted (Ctrl-C; the shell's own code for SIGINT).
 */
export const EXIT = { ok: 0, failure: 1, usage: 2, partial: 3, interrupted: 130 } as const;

export function exitCodeFor(code: CairnErrorCode): number {
  switch (code) {
    case 'INVALID_INPUT':
    case 'NOT_FOUND':
    case 'DIMENSION_MISMATCH':
    case 'FORBIDDEN_NAMESPACE':
    case 'UNAUTHORIZED':
    case 'PAYLOAD_TOO_LARGE':
      return EXIT.usage;
    case 'RATE_LIMITED':
    case 'WRITER_ELSEWHERE':
    case 'BACKEND_UNAVAILABLE':
    case 'STORAGE_ERROR':
    case 'STORAGE_FULL':
    case 'INTERNAL':
      return EXIT.failure;
    default: {
      const unreachable: never = code;
      return unreachable;
    }
  }
}

/** Reports an error on stderr (and as JSON on stdout with --json) and sets the exit code. */
export function fail(err: unknown, json: boolean): void {
  const e =
    err instanceof CairnError
      ? err
      : new CairnError('INTERNAL', err instanceof Error ? err.message : String(err), {}, { cause: err });
  if (json) writeJson({ error: e.toJSON() });
  warn(`cairn: error [${e.code}]: ${e.message}`);
  process.exitCode = exitCodeFor(e.code);
}
