import { createHash } from 'node:crypto';
import { isAbsolute, relative } from 'node:path';
import type { MemoryWrite } from '@cairn/api-contract';
import type { HookPayload } from './payload.js';

/** The `agent` of every memory the hooks store. */
export const HOOK_AGENT = 'claude-code';
/** Tags every hook memory carries, so `--tag claude-code` finds them all. */
export const HOOK_TAG = 'claude-code';

/** Tools that only look: their observations rank below edits and commands. */
const READ_ONLY_TOOLS = new Set(['Read', 'Grep', 'Glob', 'LS', 'NotebookRead', 'WebSearch', 'WebFetch']);
/** Tools that change files. */
export const EDIT_TOOLS = new Set(['Edit', 'MultiEdit', 'Write', 'NotebookEdit']);

/** Keys of a tool's input that name a file or folder it worked on. */
const PATH_KEYS = ['file_path', 'notebook_path', 'path', 'filePath', 'filename', 'file'];

const MAX_INPUT_CHARS = 300;
const MAX_OUTCOME_CHARS = 300;
const MAX_FILES = 20;

export interface Outcome {
  ok: boolean;
  /** Why it failed (short), when it did. */
  error?: string;
}

/** At most `n` characters, on one line when `oneLine`, with an ellipsis where it was cut. */
export function clip(s: string, n: number, oneLine = true): string {
  const t = oneLine ? s.replace(/\s+/g, ' ').trim() : s.trim();
  return t.length <= n ? t : `${t.slice(0, n - 1)}…`;
}

const obj = (v: unknown): Record<string, unknown> =>
  v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
const str = (v: unknown): string | undefined => (typeof v === 'string' && v.trim() ? v : undefined);

/** A path as the project knows it: relative to the project folder when inside it. */
export function projectPath(p: string, base: string): string {
  if (!isAbsolute(p)) return p;
  const rel = relative(base, p);
  return rel && !rel.startsWith('..') && !isAbsolute(rel) ? rel : p;
}

/** The files and folders a tool call names in its input (`file_path`, `path`, `edits[].file_path`, …). */
export function filesOf(toolInput: unknown, base: string): string[] {
  const input = obj(toolInput);
  const out: string[] = [];
  const add = (v: unknown) => {
    const s = str(v);
    if (s && !out.includes(projectPath(s, base))) out.push(projectPath(s, base));
  };
  for (const k of PATH_KEYS) add(input[k]);
  for (const k of ['paths', 'files', 'file_paths'])
    if (Array.isArray(input[k])) for (const v of input[k]) add(v);
  if (Array.isArray(input.edits)) for (const e of input.edits) add(obj(e).file_path ?? obj(e).path);
  return out.slice(0, MAX_FILES);
}

/** What the tool was asked, short: the command, the pattern, the URL; never an edit's contents. */
export function inputSummary(tool: string, toolInput: unknown): string {
  const input = obj(toolInput);
  const parts: string[] = [];
  const put = (label: string, v: unknown) => {
    const s = str(v);
    if (s) parts.push(`${label}${clip(s, MAX_INPUT_CHARS)}`);
  };
  switch (tool) {
    case 'Bash':
      put('$ ', input.command);
      put('— ', input.description);
      break;
    case 'Grep':
    case 'Glob':
      put('pattern ', input.pattern);
      put('in ', input.path);
      put('glob ', input.glob);
      break;
    case 'WebFetch':
      put('', input.url);
      break;
    case 'WebSearch':
      put('', input.query);
      break;
    case 'Task':
    case 'Agent':
      put('', input.description);
      put('agent ', input.subagent_type);
      break;
    case 'Edit':
    case 'MultiEdit':
    case 'Write':
    case 'NotebookEdit':
    case 'Read': {
      const edits = Array.isArray(input.edits) ? input.edits.length : 0;
      if (edits) parts.push(`${edits} edits`);
      const content = str(input.content) ?? str(input.new_source);
      if (content) parts.push(`${content.split('\n').length} lines`);
      if (input.replace_all === true) parts.push('replace all');
      if (typeof input.offset === 'number') parts.push(`from line ${input.offset}`);
      if (typeof input.limit === 'number') parts.push(`${input.limit} lines`);
      break;
    }
    case 'TodoWrite':
      if (Array.isArray(input.todos)) parts.push(`${input.todos.length} todos`);
      break;
    default: {
      // An MCP tool or one added later: its input as compact JSON, each string cut short.
      const json = JSON.stringify(input, (_k, v) => (typeof v === 'string' ? clip(v, 80) : v));
      if (json && json !== '{}') parts.push(clip(json, MAX_INPUT_CHARS));
    }
  }
  return parts.join(' ');
}

/** Whether the call succeeded: PostToolUseFailure always failed; a PostToolUse response may say it did. */
export function outcomeOf(payload: HookPayload, failed: boolean): Outcome {
  const errorText = (v: unknown) =>
    typeof v === 'string' ? v : v === undefined ? undefined : JSON.stringify(v);
  if (failed) {
    const why =
      errorText(payload.error) ??
      errorText(payload.error_message) ??
      (payload.is_interrupt ? 'interrupted' : '');
    return { ok: false, error: clip(why || 'failed', MAX_OUTCOME_CHARS) };
  }
  const r = obj(payload.tool_response);
  const exit = r.exit_code ?? r.exitCode ?? r.returnCode;
  if (r.is_error === true || r.isError === true || r.success === false || r.interrupted === true) {
    const why =
      str(r.error) ?? str(r.stderr) ?? str(r.message) ?? (r.interrupted === true ? 'interrupted' : 'failed');
    return { ok: false, error: clip(why, MAX_OUTCOME_CHARS) };
  }
  if (typeof exit === 'number' && exit !== 0)
    return {
      ok: false,
      error: clip(`exit ${exit}${str(r.stderr) ? `: ${str(r.stderr)}` : ''}`, MAX_OUTCOME_CHARS),
    };
  if (str(r.error)) return { ok: false, error: clip(str(r.error)!, MAX_OUTCOME_CHARS) };
  return { ok: true };
}

/** A stable id, so a repeated delivery of the same tool call updates one memory instead of adding another. */
export function observationId(payload: HookPayload): string {
  const session = payload.session_id ?? 'nosession';
  const call =
    payload.tool_use_id ??
    createHash('sha256')
      .update(JSON.stringify([payload.tool_name, payload.tool_input, payload.hook_event_name]))
      .digest('hex')
      .slice(0, 24);
  return `cc:${session}:${call}`;
}

/**
 * One tool call as an observation: a title that reads well in an index (`Edit src/auth.ts`,
 * `Bash: npm test (failed)`), a few lines of text (tool, files, input, outcome), and the same facts in
 * `meta` for the session summary. Secrets are removed by the caller, after this.
 */
export function observationOf(
  payload: HookPayload,
  opts: { namespace: string; base: string; failed: boolean },
) {
  const tool = payload.tool_name ?? 'unknown tool';
  const files = filesOf(payload.tool_input, opts.base);
  const input = inputSummary(tool, payload.tool_input);
  const outcome = outcomeOf(payload, opts.failed);
  const target = files[0] ?? (input ? clip(input.replace(/^\$ /, ''), 80) : '');
  const title = clip(
    `${tool}${target ? `${files[0] ? ' ' : ': '}${target}` : ''}${outcome.ok ? '' : ' (failed)'}`,
    160,
  );
  const lines = [`Claude Code used ${tool}${outcome.ok ? '' : ', which failed'}.`];
  if (files.length) lines.push(`Files: ${files.join(', ')}`);
  if (input) lines.push(`Input: ${input}`);
  lines.push(outcome.ok ? 'Outcome: ok' : `Outcome: error: ${outcome.error}`);
  const memory: MemoryWrite = {
    namespace: opts.namespace,
    id: observationId(payload),
    kind: 'observation',
    title,
    text: lines.join('\n'),
    agent: HOOK_AGENT,
    ts: Date.now(),
    tags: [HOOK_TAG, `tool:${clip(tool, 58)}`, ...(outcome.ok ? [] : ['failed'])],
    importance: !outcome.ok ? 0.6 : READ_ONLY_TOOLS.has(tool) ? 0.2 : EDIT_TOOLS.has(tool) ? 0.5 : 0.4,
    meta: {
      source: 'claude-code-hook',
      hook: payload.hook_event_name ?? (opts.failed ? 'PostToolUseFailure' : 'PostToolUse'),
      tool,
      files,
      ok: outcome.ok,
      ...(outcome.error ? { error: outcome.error } : {}),
      ...(payload.tool_use_id ? { tool_use_id: payload.tool_use_id } : {}),
    },
  };
  if (payload.session_id) memory.session = payload.session_id;
  return memory;
}
