import { appendFileSync, existsSync, mkdirSync, realpathSync, renameSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { DEFAULT_API_LIMITS } from '@cairn/api-contract';
import { CairnError } from '@cairn/core';
import type { CliEnv } from '../env.js';
import { numberFlag } from '../flags.js';
import {
  type HookTargetFlags,
  hookDataDir,
  hookNamespace,
  openHookBackend,
  projectFolder,
} from '../hooks/backend.js';
import { DEFAULT_HOOK_MAX_TOKENS, DEFAULT_HOOK_TIMEOUT_S } from '../hooks/defaults.js';
import { deliver, deliveryOf, isTransient, reasonOf, sendOutbox, startSession } from '../hooks/delivery.js';
import { HookOutbox, type OutboxBatch, type OutboxEntry } from '../hooks/outbox.js';
import {
  HOOK_EVENTS,
  type HookEvent,
  type HookPayload,
  hookEventOf,
  parsePayload,
} from '../hooks/payload.js';
import {
  cairnHandlers,
  type HookEntry,
  readSettings,
  type Scope,
  settingsPath,
  withCairnHooks,
  withoutCairnHooks,
  writeSettings,
} from '../hooks/settings.js';
import { writeJson } from '../output.js';
import { projectNamespace } from '../project-namespace.js';

/** `--timeout` of a hook: seconds, more than 0 and at most 600 (Claude Code's own limit is set above it). */
const TIMEOUT_FLAG = { whole: false, min: 0, minExclusive: true, max: 600 };
/** `--max-tokens` of the SessionStart hook: the API's own bounds of a budget. */
const MAX_TOKENS_FLAG = { min: 1, max: DEFAULT_API_LIMITS.maxTokens };

/** Claude Code's own limit on the command is the hook's plus this, so Cairn's cut always comes first. */
const SETTINGS_TIMEOUT_MARGIN_S = 5;
/** A payload past this (a huge tool response) is not read whole: the hook gives up on it. */
const MAX_PAYLOAD_BYTES = 32 * 1024 * 1024;
/** hooks.log is renamed to hooks.log.1 past this size, so it never grows without bound. */
const MAX_LOG_BYTES = 1024 * 1024;

export interface HooksRunFlags extends HookTargetFlags {
  /** SessionStart: the context pack's token budget. @defaultValue 1500 */
  maxTokens: string;
  /** SessionStart: what the session is about, for memories relevant to it beside the summaries. */
  query?: string;
  /** Seconds before the hook gives up, logs why and exits 0. @defaultValue 5 */
  timeout: string;
}

/** Within this much of its deadline, a failed call is the hook running out of time. */
const GIVE_UP_SLACK_MS = 100;

/**
 * `cairn hooks run [event]`: one Claude Code hook, its payload on stdin. SessionStart prints the project's
 * context pack (Claude Code adds a hook's stdout to the session's context); PostToolUse and
 * PostToolUseFailure store the tool call as an observation; Stop and SessionEnd store the session summary.
 *
 * It never fails the agent's turn: whatever goes wrong (no payload, an unreachable API, a damaged folder,
 * the time limit), it logs one line why on stderr (and in hooks.log: the data folder's, or with an API the
 * user's state folder's) and exits 0. What an API that did not answer could not take waits in the user's
 * outbox (see HookOutbox), and the next hook that reaches it sends it.
 */
export async function hooksRunCommand(
  eventArg: string | undefined,
  flags: HooksRunFlags,
  env: CliEnv,
): Promise<void> {
  // A hook never fails the agent's turn: a bad number is said in the log (once it is set up) and its
  // default used. `hooks install` refuses them, so only a hand-edited settings file has one.
  const badFlags: string[] = [];
  const orDefault = (parse: () => number, fallback: number) => {
    try {
      return parse();
    } catch (err) {
      badFlags.push(`${(err as Error).message}; using ${fallback}`);
      return fallback;
    }
  };
  const timeoutS = orDefault(
    () => numberFlag(flags.timeout, 'timeout', TIMEOUT_FLAG),
    DEFAULT_HOOK_TIMEOUT_S,
  );
  const maxTokens = orDefault(
    () => numberFlag(flags.maxTokens, 'max-tokens', MAX_TOKENS_FLAG),
    DEFAULT_HOOK_MAX_TOKENS,
  );
  const budgetMs = timeoutS * 1_000;
  const started = Date.now();
  const remaining = () => Math.max(budgetMs - (Date.now() - started), 0);
  let event: string = eventArg ?? 'hook';
  let session: string | undefined;
  let logDir: string | null = null;
  let stage = 'reading the payload';
  // Claude Code may close our stdout early; a write error must not become an uncaught exception.
  process.stdout.on('error', () => {});
  const log = (reason: string) => {
    const line = `cairn hooks: ${event}: ${reason}`;
    process.stderr.write(`${line}\n`);
    if (logDir)
      appendLog(logDir, `${new Date().toISOString()} ${session ? `session=${session} ` : ''}${line}`);
  };
  // Talking to an API, what it could not take waits in the user's outbox, and hooks.log sits beside it.
  const outbox = apiConfigured(flags, env) ? HookOutbox.forUser(env.raw) : null;
  // hooks.log sits in the data folder the hook writes, when that folder exists (a log never creates one).
  const logFolder = (base: string) => {
    if (outbox) return outbox.dir;
    const dir = hookDataDir(flags, base, env);
    return existsSync(dir) ? dir : null;
  };
  logDir = logFolder(projectFolder(undefined, env));
  for (const bad of badFlags) log(bad);
  /** What this hook is delivering to the API: kept in the outbox should the API not take it. */
  let pending: OutboxEntry | null = null;
  /** The outbox entries this hook is sending: what is left goes back should it stop part-way. */
  let sending: { batch: OutboxBatch; next: number } | null = null;
  const keepPending = () => {
    if (!outbox || !pending) return '';
    const entry = pending;
    pending = null;
    try {
      const waiting = outbox.add(entry);
      return waiting === null
        ? '; the outbox is full (16 MiB), so this one is dropped'
        : `; kept in ${outbox.dir}/hooks-outbox.jsonl (${waiting} waiting), sent by the next hook that reaches the API`;
    } catch (err) {
      return `; not kept either (${(err as Error).message})`;
    }
  };
  const stopSending = () => {
    if (!sending) return;
    sending.batch.done(sending.batch.entries.slice(sending.next));
    sending = null;
  };
  const giveUp = () => {
    stopSending();
    log(`gave up after ${budgetMs / 1_000}s while ${stage}; the agent goes on without it${keepPending()}`);
  };
  const deadline = setTimeout(() => {
    giveUp();
    process.exit(0);
  }, budgetMs);
  try {
    const payload = parsePayload(await readStdin());
    const named = hookEventOf(payload.hook_event_name ?? eventArg ?? '');
    if (named === null)
      throw new Error(
        `not an event Cairn handles: ${payload.hook_event_name ?? eventArg ?? '(none)'}; it handles ${Object.keys(HOOK_EVENTS).join(', ')}`,
      );
    event = named;
    session = payload.session_id;
    const base = projectFolder(payload.cwd, env);
    logDir = logFolder(base);
    const namespace = hookNamespace(flags, base, env);
    stage = env.REDIS_URL || apiConfigured(flags, env) ? 'connecting' : 'opening the data folder';
    const backend = await openHookBackend(flags, base, env, {
      read: named === 'SessionStart',
      timeoutMs: remaining(),
    });
    logDir = backend.dataDir ?? logDir;
    try {
      stage = `talking to ${backend.where}`;
      /** This hook's own summary payload, delivered: an older one of its session in the outbox is stale. */
      let live: { payload: HookPayload; namespace: string; base: string } | null = null;
      if (named === 'SessionStart')
        await startSession(backend.api, { namespace, maxTokens, query: flags.query });
      else {
        const delivery = deliveryOf(named, payload, { namespace, base });
        if (delivery && 'payload' in delivery) live = { payload: delivery.payload, namespace, base };
        if (delivery) {
          pending = {
            api: backend.where,
            at: new Date().toISOString(),
            event: named,
            namespace,
            base,
            ...delivery,
          };
          await deliver(delivery, backend.api, { namespace, base });
          pending = null;
        }
      }
      // The API answers: what waited for it goes now, within this hook's time.
      if (outbox) {
        stage = 'sending the outbox';
        const batch = outbox.take(backend.where);
        sending = { batch, next: 0 };
        const sent = await sendOutbox(sending, backend.api, remaining, log, live);
        stopSending();
        if (sent > 0) log(`sent ${sent} outbox entries kept while the API did not answer`);
      }
    } finally {
      stage = 'closing the data folder';
      await backend.close();
    }
  } catch (err) {
    // The client's time limit is the budget left when it was opened, so a silent server may end the call
    // a moment before the deadline's timer does: that is the hook giving up, and it says so the same way.
    if (remaining() < GIVE_UP_SLACK_MS) giveUp();
    else {
      stopSending();
      log(`${reasonOf(err)}${isTransient(err) ? keepPending() : ''}`);
    }
  } finally {
    clearTimeout(deadline);
  }
  // Done: leave now rather than when the last socket or worker thread lets go.
  await new Promise<void>((r) => process.stdout.write('', () => r()));
  process.exit(0);
}

function apiConfigured(flags: HookTargetFlags, env: CliEnv): boolean {
  return flags.dataDir === undefined && Boolean(flags.api ?? env.CAIRN_API_URL);
}

async function readStdin(): Promise<string> {
  if (process.stdin.isTTY)
    throw new Error('reads the JSON payload Claude Code sends on stdin; run it from a Claude Code hook');
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of process.stdin) {
    const b = chunk as Buffer;
    size += b.length;
    if (size > MAX_PAYLOAD_BYTES)
      throw new Error(`the payload is over ${MAX_PAYLOAD_BYTES >> 20} MiB; skipped`);
    chunks.push(b);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function appendLog(dir: string, line: string): void {
  try {
    // The data folder exists (checked by the caller); the user's state folder may not yet. The log names
    // tool calls: the user's only.
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const file = join(dir, 'hooks.log');
    if (existsSync(file) && statSync(file).size > MAX_LOG_BYTES) renameSync(file, `${file}.1`);
    appendFileSync(file, `${line}\n`, { mode: 0o600 });
  } catch {
    // The log is a convenience: stderr has the line already.
  }
}

/** What `install` writes into the commands; an API key never goes into a settings file. */
export interface HooksInstallFlags extends Omit<HookTargetFlags, 'apiKey'> {
  scope: Scope;
  /** How Claude Code starts cairn. @defaultValue this node and this CLI's main.js, by absolute path */
  command?: string;
  /** Passed to the SessionStart hook. @defaultValue 1500 */
  maxTokens: string;
  /** Passed to every hook; Claude Code's own limit is set 5 s above it. @defaultValue 5 */
  timeout: string;
  /**
   * The tool-call hooks run in the background (Claude Code's `async: true`), so no tool call waits for a
   * capture; a summary may then miss the last few calls. @defaultValue false (Claude Code before async
   * hooks would not know the field)
   */
  async?: boolean;
  json?: boolean;
}

/** A word for a POSIX shell: Claude Code runs a hook's command through one. */
function shellWord(s: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}

/** How a hook command starts this CLI: by absolute paths, since a hook's PATH may not be the shell's. */
function cairnInvocation(flags: HooksInstallFlags): string {
  if (flags.command?.trim()) return flags.command.trim();
  const main = process.argv[1];
  if (!main)
    throw new CairnError('INVALID_INPUT', 'cannot tell where this CLI is: pass --command', {
      field: 'command',
    });
  let path = resolve(main);
  try {
    path = realpathSync(path);
  } catch {
    // Keep the resolved path.
  }
  return `${shellWord(process.execPath)} ${shellWord(path)}`;
}

/** The hook commands for a settings file: each event's `… hooks run <event>` with the install's options. */
export function hookEntries(flags: HooksInstallFlags, env: CliEnv): HookEntry[] {
  const timeout = numberFlag(flags.timeout, 'timeout', TIMEOUT_FLAG);
  const maxTokens = numberFlag(flags.maxTokens, 'max-tokens', MAX_TOKENS_FLAG);
  if (flags.dataDir !== undefined && flags.api !== undefined)
    throw new CairnError('INVALID_INPUT', 'give --data-dir (embedded) or --api (remote), not both', {
      field: 'api',
    });
  const opts: string[] = [];
  // Where the memories go is decided now, as this shell would decide it, and written down: the hook runs
  // in Claude Code's environment, which may not have this shell's CAIRN_DATA_DIR or CAIRN_API_URL.
  const api = flags.api ?? (flags.dataDir === undefined ? env.raw.CAIRN_API_URL || undefined : undefined);
  if (api) opts.push('--api', shellWord(api));
  else {
    const dataDir = flags.dataDir ?? (env.raw.CAIRN_DATA_DIR || undefined);
    if (dataDir) opts.push('--data-dir', shellWord(resolve(dataDir)));
  }
  const prefix = flags.namespacePrefix ?? env.CAIRN_NAMESPACE_PREFIX;
  // Checked now, as every hook would check it: a name the hooks cannot write would fail each of them,
  // silently (a hook never fails the turn), from the first tool call on.
  projectNamespace(flags.namespace, prefix, process.cwd());
  if (flags.namespace !== undefined) opts.push('--namespace', shellWord(flags.namespace));
  if (prefix && flags.namespace === undefined) opts.push('--namespace-prefix', shellWord(prefix));
  if (timeout !== DEFAULT_HOOK_TIMEOUT_S) opts.push('--timeout', String(timeout));
  const cairn = cairnInvocation(flags);
  return (Object.entries(HOOK_EVENTS) as Array<[HookEvent, string]>).map(([event, name]) => ({
    event,
    command: [
      cairn,
      'hooks',
      'run',
      name,
      ...opts,
      ...(event === 'SessionStart' && maxTokens !== DEFAULT_HOOK_MAX_TOKENS
        ? ['--max-tokens', String(maxTokens)]
        : []),
    ].join(' '),
    timeout: Math.ceil(timeout) + SETTINGS_TIMEOUT_MARGIN_S,
    ...(flags.async && (event === 'PostToolUse' || event === 'PostToolUseFailure') ? { async: true } : {}),
  }));
}

/** `cairn hooks install`: Cairn's hook entries in Claude Code's settings, merged with what is there. */
export async function hooksInstallCommand(flags: HooksInstallFlags, env: CliEnv): Promise<void> {
  const path = settingsPath(flags.scope);
  const entries = hookEntries(flags, env);
  const before = readSettings(path);
  const after = withCairnHooks(before, entries);
  const changed = JSON.stringify(before) !== JSON.stringify(after);
  if (changed) writeSettings(path, after);
  const events = entries.map((e) => e.event);
  if (flags.json)
    writeJson({ settings: path, scope: flags.scope, changed, events, hooks: cairnHandlers(after) });
  else
    process.stdout.write(
      changed
        ? `installed Cairn's Claude Code hooks (${events.join(', ')}) in ${path}\n`
        : `Cairn's Claude Code hooks are already installed in ${path}; nothing changed\n`,
    );
}

export interface HooksUninstallFlags {
  scope: Scope;
  json?: boolean;
}

/** `cairn hooks uninstall`: removes exactly Cairn's handlers; everything else in the file stays. */
export async function hooksUninstallCommand(flags: HooksUninstallFlags, _env: CliEnv): Promise<void> {
  const path = settingsPath(flags.scope);
  if (!existsSync(path)) {
    if (flags.json) writeJson({ settings: path, scope: flags.scope, changed: false, removed: 0 });
    else process.stdout.write(`no ${path}: nothing to uninstall\n`);
    return;
  }
  const { settings, removed } = withoutCairnHooks(readSettings(path));
  if (removed > 0) writeSettings(path, settings);
  if (flags.json) writeJson({ settings: path, scope: flags.scope, changed: removed > 0, removed });
  else
    process.stdout.write(
      removed > 0
        ? `removed ${removed} Cairn hook${removed === 1 ? '' : 's'} from ${path}\n`
        : `no Cairn hooks in ${path}; nothing changed\n`,
    );
}
