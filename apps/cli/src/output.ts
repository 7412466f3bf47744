import { CairnError, type CairnErrorCode } from '@cairn/core';

/**
 * stdout carries only results (JSON with --json); logs (see logger.ts), progress and warnings go to
 * stderr, so `cairn search --json | jq` always parses.
 */
export function writeJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value)}\n`);
}

/** Writes a line to stderr, its unprintable characters escaped (a message may repeat input: see printable). */
export function warn(message: string): void {
  process.stderr.write(`${printable(message)}\n`);
}

/**
 * Control characters (C0 but tab and newline, DEL, C1) and lone surrogates, to be written as `\u001b`: what
 * a terminal would act on (an escape sequence that recolours, retitles or clears the screen; a carriage
 * return that overwrites the line) or cannot show. JSON.parse quotes the line it failed on, and a refusal
 * names the unknown field it met, so a crafted file could otherwise drive the terminal of whoever ingests
 * it. With the `u` flag a surrogate pair is one code point, so the surrogate range matches lone ones only.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
const UNPRINTABLE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\ud800-\udfff]/gu;

/** `text` with every unprintable character escaped, safe to print to a terminal. */
export function printable(text: string): string {
  return text.replace(UNPRINTABLE, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
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
    case 'METHOD_NOT_ALLOWED':
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
