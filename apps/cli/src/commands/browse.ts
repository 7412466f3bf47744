import { text as readStream } from 'node:stream/consumers';
import { DEFAULT_API_LIMITS } from '@cairn/api-contract';
import { CairnError, DEFAULT_INPUT_LIMITS } from '@cairn/core';
import { MemoryService, NamespaceAccess } from '@cairn/service';
import { loadDistributed } from '../distributed.js';
import type { CliEnv } from '../env.js';
import { filtersFromFlags, numberFlag, optionalNumberFlag, requireNamespace } from '../flags.js';
import { connectQueues, withEngine } from '../open-engine.js';
import { warn, writeJson } from '../output.js';
import { renderMemories } from '../render.js';

interface AddFlags {
  namespace?: string;
  kind?: string;
  title?: string;
  session?: string;
  tag?: string[];
  importance?: string;
  id?: string;
  dataDir?: string;
  json?: boolean;
}

/**
 * `cairn add "text"` (or the text on stdin): one memory. Beside a running writer (a `cairn serve`, a
 * `cairn mcp`) it is stored as a follower and the writer embeds it; otherwise it is embedded by the next
 * process that writes the folder.
 */
export async function addCommand(textArg: string | undefined, flags: AddFlags, env: CliEnv): Promise<void> {
  const namespace = requireNamespace(flags.namespace);
  const text = textArg ?? (process.stdin.isTTY ? '' : (await readStream(process.stdin)).trimEnd());
  if (!text.trim())
    throw new CairnError('INVALID_INPUT', 'give the memory as an argument or on stdin', { field: 'text' });
  const memory: Record<string, unknown> = { namespace, text };
  if (flags.kind) memory.kind = flags.kind;
  if (flags.title) memory.title = flags.title;
  if (flags.session) memory.session = flags.session;
  if (flags.tag?.length) memory.tags = flags.tag;
  if (flags.id) memory.id = flags.id;
  const importance = optionalNumberFlag(flags.importance, 'importance', { whole: false });
  if (importance !== undefined) memory.importance = importance;
  // The API's own write path: the same validation and errors, and with REDIS_URL the capture queue.
  const res = await withEngine(
    flags.dataDir,
    env,
    async (engine) => {
      const topology = env.REDIS_URL ? await connectQueues(env) : null;
      const producer = topology
        ? new (await loadDistributed()).CaptureProducer(topology, {
            wait: 'stored',
            // Without a capture worker the write waits: say so, as `cairn ingest` does (it was silent for
            // the whole 300 s).
            onWaiting: (job, ms) =>
              warn(
                `cairn add: capture job ${job} not stored after ${Math.round(ms / 1000)} s: is a capture worker running (cairn worker --stages capture), and is Redis up? Still waiting (up to 300 s).`,
              ),
          })
        : null;
      try {
        return await new MemoryService({ engine, producer }).write(NamespaceAccess.everything(), memory);
      } finally {
        await producer?.close();
        await topology?.close();
      }
    },
    { follow: true },
  );
  const item = res.items[0]!;
  if (flags.json) writeJson({ id: item.id, namespace, status: item.status });
  else process.stdout.write(`${item.status} ${item.id} in ${namespace}\n`);
}

interface ListFlags {
  namespace?: string;
  kind?: string[];
  session?: string[];
  tag?: string[];
  since?: string;
  until?: string;
  limit: string;
  offset: string;
  dataDir?: string;
  json?: boolean;
}

/** `cairn list`: browse a namespace newest first, with filters and no query. */
export async function listCommand(flags: ListFlags, env: CliEnv): Promise<void> {
  const namespace = requireNamespace(flags.namespace);
  const filters = filtersFromFlags(flags);
  const limit = numberFlag(flags.limit, 'limit', { min: 1, max: 10_000 });
  // The API's limit on a listing's offset (a deeper page is a slower scan), so both refuse the same.
  const offset = numberFlag(flags.offset, 'offset', { min: 0, max: DEFAULT_INPUT_LIMITS.maxListingOffset });
  const memories = await withEngine(
    flags.dataDir,
    env,
    async (e) => e.list(namespace, filters, limit, offset),
    {
      follow: true,
      existing: true,
    },
  );
  if (flags.json) writeJson({ namespace, memories: memories.map(({ key: _k, ...m }) => m) });
  else if (memories.length === 0) process.stdout.write(`no memories in ${namespace} pass these filters\n`);
  else process.stdout.write(renderMemories(memories));
}

interface ContextFlags {
  namespace?: string;
  query?: string;
  maxTokens: string;
  dataDir?: string;
  json?: boolean;
}

/** `cairn context`: the session-start pack an agent gets from mem_context, within a token budget. */
export async function contextCommand(flags: ContextFlags, env: CliEnv): Promise<void> {
  const namespace = requireNamespace(flags.namespace);
  const maxTokens = numberFlag(flags.maxTokens, 'max-tokens', { min: 1, max: DEFAULT_API_LIMITS.maxTokens });
  const pack = await withEngine(
    flags.dataDir,
    env,
    async (engine) =>
      new MemoryService({ engine }).context(NamespaceAccess.everything(), {
        namespace,
        ...(flags.query ? { query: flags.query } : {}),
        max_tokens: maxTokens,
      }),
    { follow: true, existing: true },
  );
  if (flags.json) writeJson(pack);
  else if (pack.included.length === 0)
    // An empty line said nothing of why: a namespace with no summaries yet, nor anything matching --query.
    warn(
      `nothing to pack for ${namespace}: no summaries yet${flags.query ? `, and nothing found for "${flags.query}"` : ' (add --query to pack what is relevant to a question)'}`,
    );
  else process.stdout.write(`${pack.text}\n`);
}
