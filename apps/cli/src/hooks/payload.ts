import { z } from 'zod';

/**
 * The hook events Cairn handles, by Claude Code's name, with the kebab-case name `cairn hooks run` takes.
 * PostToolUse fires after a tool call succeeded, PostToolUseFailure after one failed; Stop after every
 * reply of the main agent; SessionEnd once, when the session closes (/clear, logout, exit).
 */
export const HOOK_EVENTS = {
  SessionStart: 'session-start',
  PostToolUse: 'post-tool-use',
  PostToolUseFailure: 'post-tool-use-failure',
  Stop: 'stop',
  SessionEnd: 'session-end',
} as const;

export type HookEvent = keyof typeof HOOK_EVENTS;

export const HOOK_EVENT_NAMES = Object.keys(HOOK_EVENTS) as HookEvent[];

/** `post-tool-use`, `PostToolUse` or `posttooluse` → `PostToolUse`; null for an event Cairn does not handle. */
export function hookEventOf(name: string): HookEvent | null {
  const key = name.replace(/[-_\s]/g, '').toLowerCase();
  return HOOK_EVENT_NAMES.find((e) => e.toLowerCase() === key) ?? null;
}

const text = z.string().optional().catch(undefined);

/**
 * What Claude Code sends on a command hook's stdin. Every event has session_id, transcript_path, cwd and
 * hook_event_name; the tool events add tool_name, tool_input, tool_use_id and tool_response (PostToolUse)
 * or error and is_interrupt (PostToolUseFailure); Stop has stop_hook_active (and, in newer versions,
 * last_assistant_message); SessionEnd has reason; SessionStart has source. Fields are read leniently: a
 * missing or odd one is treated as absent, since a hook must never fail on a payload from a newer version.
 */
export const HookPayloadSchema = z.looseObject({
  session_id: text,
  transcript_path: text,
  cwd: text,
  hook_event_name: text,
  permission_mode: text,
  tool_name: text,
  tool_input: z.unknown().optional(),
  tool_response: z.unknown().optional(),
  tool_use_id: text,
  error: z.unknown().optional(),
  error_message: z.unknown().optional(),
  is_interrupt: z.boolean().optional().catch(undefined),
  stop_hook_active: z.boolean().optional().catch(undefined),
  last_assistant_message: text,
  reason: text,
  source: text,
});

export type HookPayload = z.infer<typeof HookPayloadSchema>;

/** Parses stdin's JSON; throws with a short reason (the caller logs it and exits 0). */
export function parsePayload(raw: string): HookPayload {
  if (!raw.trim()) throw new Error('no hook payload on stdin (Claude Code sends one JSON object)');
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch (err) {
    throw new Error(`the payload on stdin is not JSON: ${(err as Error).message}`);
  }
  const parsed = HookPayloadSchema.safeParse(json);
  if (!parsed.success) throw new Error('the payload on stdin is not a JSON object');
  return parsed.data;
}
