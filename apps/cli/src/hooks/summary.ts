import { basename } from 'node:path';
import type { MemoryRecordOut, MemoryWrite } from '@cairn/api-contract';
import { clip, EDIT_TOOLS, HOOK_AGENT, HOOK_TAG } from './observation.js';
import type { HookPayload } from './payload.js';
import type { TranscriptExcerpt } from './transcript.js';

const MAX_PROMPT_CHARS = 400;
const MAX_REPLY_CHARS = 800;
const MAX_LISTED_FILES = 15;
const MAX_LISTED_FAILURES = 3;

/** The one summary of a session: every Stop rewrites it in place, SessionEnd writes the last version. */
export function summaryId(session: string): string {
  return `cc:${session}:summary`;
}

const list = (items: string[], max: number) =>
  items.length <= max ? items.join(', ') : `${items.slice(0, max).join(', ')} and ${items.length - max} more`;

/**
 * The session summary: what was asked, which tools ran (and which failed), which files were changed and
 * read, and the last reply, from this session's observations and a bounded excerpt of its transcript.
 * Null when the session did nothing worth a summary yet.
 */
export function summaryOf(
  payload: HookPayload,
  observations: readonly MemoryRecordOut[],
  transcript: TranscriptExcerpt,
  opts: { namespace: string; base: string },
): MemoryWrite | null {
  const session = payload.session_id;
  if (!session) return null;
  const reply = payload.last_assistant_message?.trim() || transcript.lastReply;
  if (observations.length === 0 && !transcript.firstPrompt && !reply) return null;
  // Oldest first, so files are listed in the order the session touched them.
  const obs = [...observations].sort((a, b) => a.ts - b.ts);
  const tools = new Map<string, { n: number; failed: number }>();
  const changed: string[] = [];
  const read: string[] = [];
  const failures: string[] = [];
  for (const o of obs) {
    const tool = typeof o.meta.tool === 'string' ? o.meta.tool : 'tool';
    const ok = o.meta.ok !== false;
    const t = tools.get(tool) ?? { n: 0, failed: 0 };
    t.n++;
    if (!ok) t.failed++;
    tools.set(tool, t);
    const files = Array.isArray(o.meta.files)
      ? o.meta.files.filter((f): f is string => typeof f === 'string')
      : [];
    for (const f of files) {
      const into = EDIT_TOOLS.has(tool) && ok ? changed : read;
      if (!into.includes(f)) into.push(f);
    }
    if (!ok)
      failures.push(
        `${o.title ?? tool}${typeof o.meta.error === 'string' ? `: ${clip(o.meta.error, 160)}` : ''}`,
      );
  }
  const readOnly = read.filter((f) => !changed.includes(f));
  const project = basename(opts.base) || opts.base;
  const ended = payload.hook_event_name === 'SessionEnd';
  const lines = [
    `Claude Code session ${session} in ${project}${ended ? ` (ended${payload.reason ? `: ${payload.reason}` : ''})` : ''}.`,
  ];
  if (transcript.firstPrompt) lines.push(`Asked: ${clip(transcript.firstPrompt, MAX_PROMPT_CHARS)}`);
  if (tools.size)
    lines.push(
      `Tools: ${[...tools]
        .sort((a, b) => b[1].n - a[1].n)
        .map(([name, t]) => `${name} ×${t.n}${t.failed ? ` (${t.failed} failed)` : ''}`)
        .join(', ')}`,
    );
  if (changed.length) lines.push(`Files changed: ${list(changed, MAX_LISTED_FILES)}`);
  if (readOnly.length) lines.push(`Files looked at: ${list(readOnly, MAX_LISTED_FILES)}`);
  if (failures.length)
    lines.push(
      `Failures: ${failures.slice(-MAX_LISTED_FAILURES).join('; ')}${failures.length > MAX_LISTED_FAILURES ? ` (${failures.length} in all)` : ''}`,
    );
  if (reply) lines.push(`Last reply: ${clip(reply, MAX_REPLY_CHARS, false)}`);
  const about = transcript.firstPrompt
    ? clip(transcript.firstPrompt, 100)
    : changed.length
      ? `changed ${list(changed, 3)}`
      : `${obs.length} tool calls`;
  return {
    namespace: opts.namespace,
    id: summaryId(session),
    kind: 'summary',
    title: clip(`Session summary: ${about}`, 160),
    text: lines.join('\n'),
    session,
    agent: HOOK_AGENT,
    ts: Date.now(),
    tags: [HOOK_TAG, 'session-summary'],
    importance: 0.7,
    meta: {
      source: 'claude-code-hook',
      hook: payload.hook_event_name ?? 'Stop',
      tools: Object.fromEntries([...tools].map(([name, t]) => [name, t.n])),
      files_changed: changed.slice(0, 50),
      failures: failures.length,
      observations: obs.length,
      ...(ended && payload.reason ? { reason: payload.reason } : {}),
    },
  };
}
