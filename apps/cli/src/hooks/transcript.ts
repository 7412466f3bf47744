import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

/**
 * Claude Code's transcript is a JSONL file that grows for the whole session (megabytes in a long one): the
 * hooks read a bounded slice of it, never the whole file. The first user prompt sits in the first lines and
 * the last reply in the last ones.
 */
const HEAD_BYTES = 256 * 1024;
const TAIL_BYTES = 512 * 1024;

export interface TranscriptExcerpt {
  /** The first thing the user asked in the session (its text only). */
  firstPrompt: string | null;
  /** The text of the last assistant message that had any. */
  lastReply: string | null;
}

function readSlice(path: string, from: 'head' | 'tail', bytes: number): string[] {
  const fd = openSync(path, 'r');
  try {
    const size = fstatSync(fd).size;
    const length = Math.min(size, bytes);
    const start = from === 'head' ? 0 : size - length;
    const buf = Buffer.alloc(length);
    const n = readSync(fd, buf, 0, length, start);
    const lines = buf.subarray(0, n).toString('utf8').split('\n');
    // A slice cut mid-line: drop the partial line at the cut.
    if (from === 'tail' && start > 0) lines.shift();
    if (from === 'head' && length < size) lines.pop();
    return lines;
  } finally {
    closeSync(fd);
  }
}

type Line = { type?: unknown; isMeta?: unknown; isSidechain?: unknown; message?: { content?: unknown } };

function parse(line: string): Line | null {
  if (!line.trim()) return null;
  try {
    const v = JSON.parse(line) as unknown;
    return v !== null && typeof v === 'object' ? (v as Line) : null;
  } catch {
    return null;
  }
}

/** The text blocks of a message (a string content is one block); tool uses and results are not text. */
function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((b) => (b && typeof b === 'object' && b.type === 'text' && typeof b.text === 'string' ? b.text : ''))
    .filter(Boolean)
    .join('\n');
}

/** Text Claude Code itself puts in the user's turn (slash-command echoes, caveats, reminders). */
const INJECTED = /^\s*(?:<command-|<local-command|<system-reminder>|Caveat:|\[Request interrupted)/;

/** `~/x` as the user's home; other paths as they are. */
export function expandHome(p: string): string {
  return p === '~' || p.startsWith('~/') ? join(homedir(), p.slice(1)) : p;
}

/** Reads the first prompt and the last reply; a missing or unreadable transcript gives nulls. */
export function readTranscript(path: string | undefined): TranscriptExcerpt {
  const out: TranscriptExcerpt = { firstPrompt: null, lastReply: null };
  if (!path) return out;
  const file = expandHome(path);
  try {
    for (const line of readSlice(file, 'head', HEAD_BYTES)) {
      const l = parse(line);
      if (l?.type !== 'user' || l.isMeta === true || l.isSidechain === true) continue;
      const text = textOf(l.message?.content).trim();
      if (text && !INJECTED.test(text)) {
        out.firstPrompt = text;
        break;
      }
    }
    const tail = readSlice(file, 'tail', TAIL_BYTES);
    for (let i = tail.length - 1; i >= 0; i--) {
      const l = parse(tail[i]!);
      if (l?.type !== 'assistant' || l.isSidechain === true) continue;
      const text = textOf(l.message?.content).trim();
      if (text) {
        out.lastReply = text;
        break;
      }
    }
  } catch {
    // No transcript (yet), or not readable: the summary is made of the observations alone.
  }
  return out;
}
