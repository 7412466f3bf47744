import { createReadStream, statSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { CairnError } from '@cairn/core';
import { printable } from './output.js';

export interface JsonlLine {
  /** 1-based line number in the file. */
  line: number;
  value?: unknown;
  /** Set when the line is not valid JSON. */
  error?: string;
}

/** Lines longer than this are refused without parsing: no memory's JSON can be this large. */
export const MAX_LINE_BYTES = 1_048_576;

export function fileSize(path: string): number | null {
  if (path === '-') return null;
  let stat: ReturnType<typeof statSync>;
  try {
    stat = statSync(path);
  } catch (err) {
    throw new CairnError(
      'NOT_FOUND',
      `cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
      {
        field: 'file',
      },
    );
  }
  if (stat.isDirectory())
    throw new CairnError('INVALID_INPUT', `${path} is a folder: give a JSONL file (or - for stdin)`, {
      field: 'file',
    });
  return stat.size;
}

/** Streams a JSONL file (or stdin for "-"), skipping blank lines, reporting bytes read for progress. */
export async function* readJsonl(
  path: string,
  onBytes?: (bytes: number) => void,
  /** Aborted, reading stops at once (lines already read are still given), even while the input is idle. */
  signal?: AbortSignal,
): AsyncGenerator<JsonlLine> {
  if (path !== '-') fileSize(path);
  const input = path === '-' ? process.stdin : createReadStream(path, { encoding: 'utf8' });
  const rl = createInterface({ input, crlfDelay: Number.POSITIVE_INFINITY });
  const stop = () => rl.close();
  signal?.addEventListener('abort', stop, { once: true });
  let line = 0;
  try {
    yield* lines();
  } finally {
    // A reader that stops early (an interrupted ingest): closing the interface leaves its input open, and
    // an open stdin kept the process alive after the command was done.
    signal?.removeEventListener('abort', stop);
    rl.close();
    input.destroy();
  }

  async function* lines(): AsyncGenerator<JsonlLine> {
    for await (let text of rl) {
      line++;
      onBytes?.(Buffer.byteLength(text) + 1);
      // A byte-order mark (editors on Windows write one) is not part of the first line's JSON.
      if (line === 1 && text.charCodeAt(0) === 0xfeff) text = text.slice(1);
      if (text.trim() === '') continue;
      if (text.length > MAX_LINE_BYTES) {
        yield { line, error: `line is longer than ${MAX_LINE_BYTES} bytes` };
        continue;
      }
      try {
        yield { line, value: JSON.parse(text) };
      } catch (err) {
        yield { line, error: `malformed JSON (${printable((err as Error).message)})` };
      }
    }
  }
}
