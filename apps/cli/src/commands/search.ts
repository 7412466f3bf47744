import { CairnError, parseDecay, parseTimestamp, ROUTE_NAME_PATTERN, type SearchRequest } from '@cairn/core';
import type { CairnEngine } from '@cairn/engine';
import { MemoryService, NamespaceAccess, searchResponseOut, TokenizerThread } from '@cairn/service';
import type { CliEnv } from '../env.js';
import { filtersFromFlags, optionalNumberFlag, requireNamespace } from '../flags.js';
import { readJsonl } from '../jsonl.js';
import { withEngine } from '../open-engine.js';
import { EXIT, writeJson } from '../output.js';
import { renderHits } from '../render.js';

export interface SearchFlags {
  namespace?: string;
  k?: string;
  pool?: string;
  rrfK?: string;
  contextWeight?: string;
  agentBoost?: string;
  sessionMatch?: string;
  sessionSupport?: string;
  routeWeight?: string;
  routeWeights?: string;
  neighbors?: string;
  weights?: string;
  decay?: string;
  now?: string;
  kind?: string[];
  session?: string[];
  agent?: string[];
  tag?: string[];
  since?: string;
  until?: string;
  explain?: 'hits' | 'full';
  mmr?: string;
  queries?: string;
  json?: boolean;
  dataDir?: string;
}

/** `lexical=1,vector=0.5` → weights. */
function parseWeights(v: string): { lexical?: number; vector?: number } {
  const out: { lexical?: number; vector?: number } = {};
  for (const pair of v.split(',')) {
    const [leg, w] = pair.split('=');
    const n = Number(w);
    if ((leg !== 'lexical' && leg !== 'vector') || !Number.isFinite(n)) {
      throw new CairnError('INVALID_INPUT', `--weights takes lexical=N,vector=N, got ${v}`, {
        field: 'weights',
      });
    }
    out[leg] = n;
  }
  return out;
}

/** `facts=1,next_turn=0.3` → per-route weights. */
function parseRouteWeights(v: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const pair of v.split(',')) {
    const [route, w] = pair.split('=');
    const n = Number(w);
    if (!route || !ROUTE_NAME_PATTERN.test(route) || w === undefined || !Number.isFinite(n)) {
      throw new CairnError('INVALID_INPUT', `--route-weights takes field=N,field=N, got ${v}`, {
        field: 'routeWeights',
      });
    }
    out[route] = n;
  }
  return out;
}

export function requestFromFlags(query: string, f: SearchFlags): SearchRequest {
  const namespace = requireNamespace(f.namespace);
  // --now is a point in time, never a window; relative --since/--until count back from it.
  const now =
    f.now === undefined || f.now === ''
      ? undefined
      : parseTimestamp(/^\d+$/.test(f.now) ? Number(f.now) : f.now, 'now');
  const filters = filtersFromFlags(f, now);
  const req: SearchRequest = { namespace, query, filters, explain: f.explain ?? 'hits' };
  // Numbers are checked for being numbers here, naming the flag; their ranges by the engine, as the API's.
  const real = { whole: false };
  const numbers = {
    k: optionalNumberFlag(f.k, 'k'),
    candidatePool: optionalNumberFlag(f.pool, 'pool'),
    rrfK: optionalNumberFlag(f.rrfK, 'rrf-k', real),
    contextWeight: optionalNumberFlag(f.contextWeight, 'context-weight', real),
    agentBoost: optionalNumberFlag(f.agentBoost, 'agent-boost', real),
    sessionMatch: optionalNumberFlag(f.sessionMatch, 'session-match', real),
    sessionSupport: optionalNumberFlag(f.sessionSupport, 'session-support', real),
    routeWeight: optionalNumberFlag(f.routeWeight, 'route-weight', real),
    neighbors: optionalNumberFlag(f.neighbors, 'neighbors'),
    mmrLambda: optionalNumberFlag(f.mmr, 'mmr', real),
  };
  for (const [name, n] of Object.entries(numbers)) if (n !== undefined) req[name as keyof typeof numbers] = n;
  if (f.routeWeights !== undefined) req.routeWeights = parseRouteWeights(f.routeWeights);
  if (f.weights) req.weights = parseWeights(f.weights);
  if (f.decay) req.decay = parseDecay(f.decay);
  if (now !== undefined) req.now = now;
  return req;
}

/** The flags of `search` that are not per-query options: the only ones a batch (`--queries`) takes. */
const BATCH_FLAGS = new Set(['queries', 'json', 'dataDir']);

/**
 * A batch reads every query and all its options from its file's lines, each a whole request naming its own
 * namespace. A query argument or a per-query flag beside it was ignored without a word; it is refused
 * instead, rather than made a default for the lines that leave it out: a flag that applied to some lines
 * and not others would be harder to predict than a line that says it all, and `jq` writes one easily.
 */
function refuseQueryBesideBatch(query: string | undefined, flags: SearchFlags): void {
  const extra = Object.entries(flags)
    .filter(([name, value]) => value !== undefined && !BATCH_FLAGS.has(name))
    .map(([name]) => `--${name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`);
  if (query !== undefined) extra.unshift(`the query ${JSON.stringify(query)}`);
  if (extra.length === 0) return;
  const named = extra.length === 1 ? extra[0] : `${extra.slice(0, -1).join(', ')} and ${extra.at(-1)}`;
  throw new CairnError(
    'INVALID_INPUT',
    `--queries reads each query and its options from the file, one request per line with its own ` +
      `namespace: drop ${named}, or put them in the lines`,
    { field: 'queries' },
  );
}

export async function searchCommand(
  query: string | undefined,
  flags: SearchFlags,
  env: CliEnv,
): Promise<void> {
  if (flags.queries !== undefined) {
    refuseQueryBesideBatch(query, flags);
    await withEngine(flags.dataDir, env, (engine) => batchSearch(engine, flags.queries!), {
      follow: true,
      existing: true,
    });
    return;
  }
  if (query === undefined)
    throw new CairnError('INVALID_INPUT', 'give a query, or --queries <file.jsonl>', { field: 'query' });
  const req = requestFromFlags(query, flags);
  // The JSON answer carries each hit's token count: the tokenizer loads on the other core meanwhile.
  const tokenizer = flags.json ? TokenizerThread.start() : null;
  const res = await withEngine(
    flags.dataDir,
    env,
    async (engine) => {
      const r = await engine.search(req);
      await tokenizer?.primeSearch(r);
      return r;
    },
    { follow: true, existing: true, oneQuery: true },
  ).finally(() => tokenizer?.close());
  // The same JSON as the HTTP API's /v1/search answers (hits with their explanation under `explain`).
  if (flags.json) writeJson(searchResponseOut(res, { explain: req.explain ?? 'hits' }));
  else process.stdout.write(renderHits(res));
}

/**
 * One JSON line per input query, in input order; a bad line yields an error line, not an abort. Each line is
 * validated and answered by the same service code as the HTTP API's /v1/search, so the same request gets the
 * same answer, or the same error, on both faces. Every answer carries `line`, the query's line in the file,
 * and `id` only when the query gave one: a line number standing in for a missing id could not be told from
 * an id of that number.
 */
async function batchSearch(engine: CairnEngine, file: string): Promise<void> {
  const service = new MemoryService({ engine });
  const everything = NamespaceAccess.everything();
  let failed = 0;
  for await (const l of readJsonl(file)) {
    const raw = (l.value ?? {}) as Record<string, unknown>;
    const { id, ...rest } = raw;
    const which = id === undefined ? { line: l.line } : { id, line: l.line };
    try {
      if (l.error !== undefined) throw new CairnError('INVALID_INPUT', `line ${l.line}: ${l.error}`);
      writeJson({ ...which, ...(await service.search(everything, rest)) });
    } catch (err) {
      failed++;
      const e = err instanceof CairnError ? err : new CairnError('INTERNAL', (err as Error).message);
      writeJson({ ...which, error: e.toJSON() });
    }
  }
  if (failed > 0) process.exitCode = EXIT.partial;
}
