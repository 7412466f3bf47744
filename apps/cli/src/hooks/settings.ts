import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { CairnError } from '@cairn/core';
import { writeWhole } from '../whole-file.js';
import { HOOK_EVENTS, type HookEvent } from './payload.js';

/**
 * Claude Code's settings file holds hooks as `hooks → event name → [{ matcher?, hooks: [{ type: "command",
 * command, timeout }] }]`. Cairn owns exactly the command handlers that run `… hooks run <event>`; install
 * replaces those (so it is idempotent and picks up a moved checkout), uninstall removes them, and every
 * other key, event, matcher group and handler is left as it was.
 */

export type Scope = 'user' | 'project' | 'local';

/** Events whose matcher is a tool name: Cairn's group matches every tool. Others take no matcher. */
const TOOL_EVENTS = new Set<HookEvent>(['PostToolUse', 'PostToolUseFailure']);

/** A command handler is Cairn's when it runs `hooks run <one of Cairn's events>`. */
const CAIRN_COMMAND = new RegExp(
  `(?:^|\\s)hooks\\s+run\\s+(?:${Object.values(HOOK_EVENTS).join('|')})(?:\\s|$)`,
);

export function isCairnHandler(handler: unknown): boolean {
  const h = handler as { type?: unknown; command?: unknown } | null;
  return (
    !!h &&
    typeof h === 'object' &&
    h.type === 'command' &&
    typeof h.command === 'string' &&
    CAIRN_COMMAND.test(h.command)
  );
}

/** The settings file of a scope: ~/.claude/settings.json, or the repository's .claude/settings(.local).json. */
export function settingsPath(scope: Scope, cwd = process.cwd()): string {
  if (scope === 'user') return join(homedir(), '.claude', 'settings.json');
  return join(repositoryRoot(cwd), '.claude', scope === 'local' ? 'settings.local.json' : 'settings.json');
}

/** The git work tree's top folder, else `cwd` itself (a project that is not in git). */
export function repositoryRoot(cwd: string): string {
  try {
    const top = execFileSync('git', ['rev-parse', '--show-toplevel'], {
      cwd,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
      timeout: 5_000,
    }).trim();
    return top || cwd;
  } catch {
    return cwd;
  }
}

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => v !== null && typeof v === 'object' && !Array.isArray(v);

export function readSettings(path: string): Json {
  if (!existsSync(path)) return {};
  const raw = readFileSync(path, 'utf8');
  if (!raw.trim()) return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch (err) {
    throw new CairnError(
      'INVALID_INPUT',
      `${path} is not valid JSON (${(err as Error).message}); fix it first, nothing was changed`,
      { field: 'settings' },
    );
  }
  if (!isObject(parsed))
    throw new CairnError('INVALID_INPUT', `${path} does not hold a JSON object; nothing was changed`, {
      field: 'settings',
    });
  if (parsed.hooks !== undefined && !isObject(parsed.hooks))
    throw new CairnError('INVALID_INPUT', `"hooks" in ${path} is not an object; nothing was changed`, {
      field: 'settings',
    });
  return parsed;
}

/**
 * Written whole or not at all (see writeWhole): a crash never leaves half a file, and a settings.json that
 * is a link into the user's dotfiles stays a link (it was replaced by a regular file).
 */
export function writeSettings(path: string, settings: Json): void {
  mkdirSync(dirname(path), { recursive: true });
  writeWhole(path, `${JSON.stringify(settings, null, 2)}\n`);
}

/** Every event's groups without Cairn's handlers; a group left with no handler goes, and so does an empty event. */
export function withoutCairnHooks(settings: Json): { settings: Json; removed: number } {
  if (!isObject(settings.hooks)) return { settings, removed: 0 };
  let removed = 0;
  const hooks: Json = {};
  for (const [event, groups] of Object.entries(settings.hooks)) {
    if (!Array.isArray(groups)) {
      hooks[event] = groups;
      continue;
    }
    const kept: unknown[] = [];
    for (const group of groups) {
      if (!isObject(group) || !Array.isArray(group.hooks)) {
        kept.push(group);
        continue;
      }
      const handlers = group.hooks.filter((h) => !isCairnHandler(h));
      removed += group.hooks.length - handlers.length;
      if (handlers.length === group.hooks.length) kept.push(group);
      else if (handlers.length > 0) kept.push({ ...group, hooks: handlers });
    }
    if (kept.length > 0) hooks[event] = kept;
  }
  const out: Json = { ...settings, hooks };
  if (Object.keys(hooks).length === 0) delete out.hooks;
  return { settings: out, removed };
}

export interface HookEntry {
  event: HookEvent;
  command: string;
  /** Seconds Claude Code lets the command run before cancelling it. */
  timeout: number;
  /** Claude Code runs it in the background: the agent does not wait for it (its output is ignored). */
  async?: boolean;
}

/** Cairn's handlers in place of any earlier ones, each event's group appended after the user's own. */
export function withCairnHooks(settings: Json, entries: readonly HookEntry[]): Json {
  const base = withoutCairnHooks(settings).settings;
  const hooks: Json = isObject(base.hooks) ? { ...base.hooks } : {};
  for (const e of entries) {
    const groups = Array.isArray(hooks[e.event]) ? [...(hooks[e.event] as unknown[])] : [];
    groups.push({
      ...(TOOL_EVENTS.has(e.event) ? { matcher: '*' } : {}),
      hooks: [
        { type: 'command', command: e.command, timeout: e.timeout, ...(e.async ? { async: true } : {}) },
      ],
    });
    hooks[e.event] = groups;
  }
  return { ...base, hooks };
}

/** Cairn's handlers in a settings object, by event (what `hooks install` wrote there). */
export function cairnHandlers(settings: Json): Array<{ event: string; command: string }> {
  const out: Array<{ event: string; command: string }> = [];
  if (!isObject(settings.hooks)) return out;
  for (const [event, groups] of Object.entries(settings.hooks)) {
    if (!Array.isArray(groups)) continue;
    for (const g of groups)
      if (isObject(g) && Array.isArray(g.hooks))
        for (const h of g.hooks)
          if (isCairnHandler(h)) out.push({ event, command: (h as { command: string }).command });
  }
  return out;
}
