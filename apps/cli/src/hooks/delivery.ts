import type { MemoryApi, MemoryRecordOut, MemoryWrite } from '@cairn/api-contract';
import { CairnError } from '@cairn/core';
import { HOOK_AGENT, observationOf } from './observation.js';
import type { OutboxBatch } from './outbox.js';
import type { HookEvent, HookPayload } from './payload.js';
import { redactDeep } from './redact.js';
import { summaryOf } from './summary.js';
import { readTranscript } from './transcript.js';

// What a hook hands to Cairn and how: the context pack at a session's start, a tool call's observation, a
// session's summary, and the outbox's entries once the API answers again (`cairn hooks run` decides when).

/** Observations a session summary is made from (the newest ones, when a session has more). */
const SUMMARY_OBSERVATIONS = 100;
/** Outbox entries are sent only while at least this much of the hook's time is left. */
const OUTBOX_SEND_RESERVE_MS = 500;

/** SessionStart: prints the project's context pack (Claude Code adds a hook's stdout to the session). */
export async function startSession(
  api: MemoryApi,
  o: { namespace: string; maxTokens: number; query?: string | undefined },
): Promise<void> {
  const pack = await api.context({
    namespace: o.namespace,
    max_tokens: o.maxTokens,
    ...(o.query ? { query: o.query } : {}),
  });
  // An empty namespace gives an empty pack: print nothing rather than an empty heading.
  if (pack.included.length > 0 && pack.text.trim()) process.stdout.write(`${pack.text}\n`);
}

/** What a write event hands to Cairn, redacted: a tool call's observation, or a summary's payload. */
export type Delivery = { memory: MemoryWrite } | { payload: HookPayload };

/**
 * PostToolUse and PostToolUseFailure: the tool call as an observation (null for Cairn's own MCP tools:
 * how the agent reads and saves memories, only noise). Stop and SessionEnd: the payload the session
 * summary is made from, with the server's observations, when delivered.
 */
export function deliveryOf(
  event: Exclude<HookEvent, 'SessionStart'>,
  payload: HookPayload,
  o: { namespace: string; base: string },
): Delivery | null {
  switch (event) {
    case 'PostToolUse':
    case 'PostToolUseFailure':
      if (/^mcp__cairn__/.test(payload.tool_name ?? '')) return null;
      // Redacted before the observation clips its texts: clipped first, a key cut in half no longer matched
      // its pattern and its first half was stored.
      return {
        memory: redactDeep(
          observationOf(redactDeep(payload), {
            namespace: o.namespace,
            base: o.base,
            failed: event === 'PostToolUseFailure',
          }),
        ),
      };
    case 'Stop':
    case 'SessionEnd':
      if (!payload.session_id) throw new Error('the payload has no session_id: no session to summarise');
      return { payload: redactDeep(payload) };
    default: {
      const unreachable: never = event;
      return unreachable;
    }
  }
}

/** Writes a delivery: the memory, or the session summary made now from the session's observations. */
export async function deliver(
  d: Delivery,
  api: MemoryApi,
  o: { namespace: string; base: string },
): Promise<void> {
  if ('memory' in d) return store(api, d.memory);
  const summary = summaryOf(
    d.payload,
    await sessionObservations(api, o.namespace, d.payload.session_id!),
    redactDeep(readTranscript(d.payload.transcript_path)),
    { namespace: o.namespace, base: o.base },
  );
  if (summary) await store(api, summary);
}

/** A failure the API may not have next time: it did not answer, or asked to wait. */
export function isTransient(err: unknown): boolean {
  return err instanceof CairnError && (err.code === 'BACKEND_UNAVAILABLE' || err.code === 'RATE_LIMITED');
}

/**
 * Sends outbox entries, oldest first, while time is left: stops at the first the API cannot take now (the
 * rest wait for the next hook); drops, with a log line, one it refuses for good (a namespace the key may
 * not write). Returns how many were sent.
 */
export async function sendOutbox(
  sending: { batch: OutboxBatch; next: number },
  api: MemoryApi,
  remaining: () => number,
  log: (reason: string) => void,
  live: { payload: HookPayload; namespace: string; base: string } | null,
): Promise<number> {
  let sent = 0;
  const { entries } = sending.batch;
  // A session has one summary (its id is the session's): only its newest payload may write it. An older
  // Stop sent after this hook's own summary would put back a stale reply and drop "(ended: …)".
  const newest = new Map<string, number>();
  entries.forEach((e, i) => {
    if (e.payload?.session_id) newest.set(`${e.namespace}\0${e.payload.session_id}`, i);
  });
  const liveKey = live?.payload.session_id ? `${live.namespace}\0${live.payload.session_id}` : null;
  let liveTouched = false;
  while (sending.next < entries.length && remaining() > OUTBOX_SEND_RESERVE_MS) {
    const e = entries[sending.next]!;
    const key = `${e.namespace}\0${e.payload?.session_id ?? e.memory?.session ?? ''}`;
    if (key === liveKey) liveTouched = true;
    if (e.payload && (key === liveKey || newest.get(key) !== sending.next)) {
      sending.next++;
      continue;
    }
    try {
      await deliver(e.memory ? { memory: e.memory } : { payload: e.payload! }, api, e);
      sent++;
    } catch (err) {
      if (!refusedForGood(err)) break;
      log(`an outbox entry (${e.event} of ${e.at}) was refused and dropped: ${reasonOf(err)}`);
    }
    sending.next++;
  }
  // What waited for this session went in after this hook's summary: make it again, with them.
  if (live && liveTouched && remaining() > OUTBOX_SEND_RESERVE_MS)
    await deliver({ payload: live.payload }, api, live);
  return sent;
}

/**
 * An outbox entry the API will never take (this key may not write its namespace, or the entry itself is
 * invalid): dropped. Anything else (a full disk, a damaged store, a bug, a key being rotated) stops the send,
 * and the entries wait for the next hook.
 */
function refusedForGood(err: unknown): boolean {
  return (
    err instanceof CairnError &&
    (err.code === 'FORBIDDEN_NAMESPACE' || err.code === 'INVALID_INPUT' || err.code === 'PAYLOAD_TOO_LARGE')
  );
}

/** Stores one memory with every secret taken out of it (text, title, tags and meta alike). */
async function store(api: MemoryApi, memory: MemoryWrite): Promise<void> {
  await api.write({ ...redactDeep(memory), wait: 'stored' });
}

/** The observations the hooks stored for this session (the newest SUMMARY_OBSERVATIONS of them). */
async function sessionObservations(
  api: MemoryApi,
  namespace: string,
  session: string,
): Promise<MemoryRecordOut[]> {
  // A blank query with filters is a listing: the memories passing them, newest first.
  const listing = await api.search({
    namespace,
    query: '',
    k: SUMMARY_OBSERVATIONS,
    explain: 'none',
    filters: { sessions: [session], kinds: ['observation'], agents: [HOOK_AGENT] },
  });
  if (listing.hits.length === 0) return [];
  const got = await api.get({ namespace, ids: listing.hits.map((h) => h.id) });
  return got.memories;
}

export function reasonOf(err: unknown): string {
  if (err instanceof CairnError) return `${err.message} [${err.code}]`;
  return err instanceof Error ? err.message : String(err);
}
