import { z } from 'zod';
import { DEFAULT_DECAY, type DecaySpec, type ResolvedDecay, resolveDecay } from './decay.js';
import { withDefaults } from './defaults.js';
import type { Embedder } from './embedder.js';
import { CairnError } from './errors.js';
import { DEFAULT_INPUT_LIMITS } from './limits.js';
import { NamespaceSchema, ROUTE_NAME_PATTERN, ROUTE_NAME_RULE, zodToCairnError } from './memory.js';
import { DEFAULT_RECENCY_OPTIONS, type RecencyOptions } from './recency-blend.js';
import { parseDuration, parseTimeBound, parseTimestamp } from './time.js';
import { WellFormedString } from './well-formed-string.js';

/** Restricts every leg of a search. Filters are ANDed; list filters match any of their values. */
export interface SearchFilters {
  kinds?: string[];
  sessions?: string[];
  agents?: string[];
  /** A memory matches when it carries at least one of these tags. */
  tags?: string[];
  /** Epoch ms, inclusive. */
  since?: number;
  /** Epoch ms, exclusive. */
  until?: number;
  /** Facts of these slots (`meta.slot`, set by a write with slot and key): search within a slot. */
  slots?: string[];
  /**
   * Epoch ms: only memories valid then (validFrom ≤ asOf < validTo; an open end always passes), so a
   * query sees what was true at that time.
   */
  asOf?: number;
}

/**
 * Upweights (or, below 1, downweights) memories a query cares about: those carrying `tag`, of `kind`, by
 * `agent`, or about `path` (a prefix of `meta.path` or of one of `meta.files`, or a path the text says).
 * A memory matching several boosts gets the product of their factors. At least one matcher is required.
 */
export interface Boost {
  tag?: string;
  kind?: string;
  agent?: string;
  path?: string;
  /** In (0, 10]. */
  factor: number;
}

export interface LegWeights {
  /** @defaultValue 1 (0 turns the leg off) */
  lexical: number;
  /** @defaultValue 1 (0 turns the leg off) */
  vector: number;
}

/** Tunables of hybrid search. Every field has a default in DEFAULT_SEARCH_OPTIONS. */
export interface SearchOptions {
  /** Hits returned. @defaultValue 5 */
  k: number;
  /** Candidates each leg contributes to fusion. @defaultValue 50 */
  candidatePool: number;
  /** RRF weights per leg. @defaultValue `{ lexical: 1, vector: 1 }` */
  weights: LegWeights;
  /** RRF damping constant; 60 is the value of Cormack et al. 2009. @defaultValue 60 */
  rrfK: number;
  /**
   * Weight, relative to a memory's own words (1), of the session context a turn is also indexed by (the
   * memory before it). 0 matches turns by their own words only. Chosen on the LoCoMo dev conversations by
   * leaving one out at a time (bench/RESULTS.md). @defaultValue 0.5
   */
  contextWeight: number;
  /**
   * How much a memory gains when the query names its agent ("what did Caroline paint?"): its legs' RRF is
   * multiplied by 1 + agentBoost. 0 turns it off. Chosen by leaving one LoCoMo dev conversation out at a
   * time (bench/RESULTS.md). @defaultValue 0.25
   */
  agentBoost: number;
  /**
   * Session match, in the lexical leg: a memory's bm25 gains this share of its session's score as a
   * document (the sum over the query's words of the best match any memory of the session makes), so a
   * session that between its memories says most of the query lifts the ones that say part of it. 0 turns
   * it off. Chosen by leaving one LoCoMo dev conversation out at a time (bench/RESULTS.md).
   * @defaultValue 0.5
   */
  sessionMatch: number;
  /**
   * Session support, in fusion: a candidate gains this share of the relevance of the best other candidate
   * of its session (a session where several memories match is likely the one asked about). An option: no
   * fold of the leave-one-conversation-out on LoCoMo picked it beside session match. @defaultValue 0
   */
  sessionSupport: number;
  /**
   * Multi-route recall: the RRF weight of each named-field route relative to its leg (a lexical route
   * weighs `weights.lexical × routeWeight`, a vector route `weights.vector × routeWeight`). 0 turns the
   * routes off. Four of five folds of leave-one-conversation-out on LoCoMo (turns given facts, next and
   * previous fields) picked 0.25 with `best` fusion (bench/RESULTS.md). @defaultValue 0.25
   */
  routeWeight: number;
  /** Per-route overrides of `routeWeight`, by field name (`{ facts: 1, next_turn: 0.3 }`). @defaultValue `{}` */
  routeWeights: Record<string, number>;
  /**
   * How a memory's routes combine within a leg: `best`, its best weighted rank over its routes (its own
   * text included), so a field lifts a memory only where it ranks it better than its own words do; `sum`,
   * every route's RRF term added. @defaultValue 'best'
   */
  routeFusion: 'best' | 'sum';
  /**
   * Live memories of the same session returned before and after each hit, attached to it as `neighbors`
   * (not as extra hits): the question a turn answers, and what followed. Superseded and deleted memories
   * are skipped, as in search. 0 attaches none. @defaultValue 0
   */
  neighbors: number;
  /**
   * How age enters the score. `'auto'`: relevance first, age breaks ties and close calls, and reaches
   * further when the query has temporal intent; `'off'`; or a half-life / tau multiplied in with no floor.
   * @defaultValue `'auto'`
   */
  decay: DecaySpec;
  /**
   * Per-kind half-lives (ms), so that a session summary ages differently from a fact: with a fixed decay
   * a listed kind uses its own half-life instead of the search's (`'off'`: it does not age); with
   * `'auto'`, a listed kind's curve `exp(−age·ln2 / halfLife)` multiplies in on top of the tie-break, so
   * only the kinds named age that way. Decay `'off'` turns every curve off. @defaultValue `{}`
   */
  kindHalfLives: Record<string, number | 'off'>;
  /**
   * The `'auto'` decay's settings: how many ranks at the top of a leg age may overturn, without and with
   * temporal intent, and how close to the best a candidate must be for age to count.
   * @defaultValue DEFAULT_RECENCY_OPTIONS
   */
  recency: RecencyOptions;
  /** How far importance (0–1) moves the score: factor = 1 + w·(2·importance − 1). @defaultValue 0.3 */
  importanceWeight: number;
  /**
   * How far a memory's stated confidence (0–1) lowers its score: factor = 1 − w·(1 − confidence); a
   * memory without one is not touched. @defaultValue 0.3 (the same reach as importance)
   */
  confidenceWeight: number;
  /** MMR trade-off; 1 keeps pure relevance order. @defaultValue 1 */
  mmrLambda: number;
  /**
   * With MMR on (`mmrLambda` < 1), redundancy is `max(cosine, w · tag Jaccard)` (Memsense): memories
   * under the same tags make room for others. 0: cosine alone. @defaultValue 0.35
   */
  mmrTagWeight: number;
  /** Drop a hit whose cosine to a better hit is at least this (near-duplicate suppression). @defaultValue 0.97 */
  duplicateThreshold: number;
  /**
   * Reranking of the first `rerankDepth` hits: `'model'`, by the configured reranker (a cross-encoder
   * behind a TEI- or Cohere-style `/rerank`); `'deterministic'`, by how much of the query (idf-weighted,
   * names weighted up) each memory says, the fused order breaking ties; `'off'`; `'auto'`, the model when
   * one is configured, else off. @defaultValue 'auto'
   */
  rerank: 'auto' | 'off' | 'deterministic' | 'model';
  /** Hits the reranker sees (the page is cut from them). @defaultValue 20 */
  rerankDepth: number;
  /** A model reranker slower than this is given up on: the fused order stands, and says so. @defaultValue 2_000 */
  rerankTimeoutMs: number;
  /** Per-query boosts by tag, kind, agent or path (see Boost). @defaultValue [] */
  boosts: readonly Boost[];
}

export const DEFAULT_SEARCH_OPTIONS: Readonly<SearchOptions> = Object.freeze({
  k: 5,
  candidatePool: 50,
  weights: Object.freeze({ lexical: 1, vector: 1 }),
  rrfK: 60,
  contextWeight: 0.5,
  agentBoost: 0.25,
  sessionMatch: 0.5,
  sessionSupport: 0,
  routeWeight: 0.25,
  routeWeights: Object.freeze({}) as Record<string, number>,
  routeFusion: 'best',
  neighbors: 0,
  decay: DEFAULT_DECAY,
  kindHalfLives: Object.freeze({}) as Record<string, number | 'off'>,
  recency: DEFAULT_RECENCY_OPTIONS,
  importanceWeight: 0.3,
  confidenceWeight: 0.3,
  mmrLambda: 1,
  mmrTagWeight: 0.35,
  duplicateThreshold: 0.97,
  rerank: 'auto',
  rerankDepth: 20,
  rerankTimeoutMs: 2_000,
  boosts: Object.freeze([]) as readonly Boost[],
});

/** `none`: hits without their per-leg explanation; `hits` (default): with it; `full`: plus every candidate. */
export type ExplainLevel = 'none' | 'hits' | 'full';

export interface SearchRequest extends Partial<Omit<SearchOptions, 'weights' | 'recency'>> {
  namespace: string;
  query: string;
  weights?: Partial<LegWeights>;
  recency?: Partial<RecencyOptions>;
  filters?: SearchFilters;
  /** Overrides "now" for recency (epoch ms); for replaying history and benchmarks. */
  now?: number;
  /** `full` adds the whole candidate table. @defaultValue 'hits' */
  explain?: ExplainLevel;
  /** Vector candidates below this cosine are not fused. @defaultValue the embedder's similarityFloor */
  minCosine?: number;
  /**
   * Pages a listing: a blank query (no searchable words) with at least one filter answers the memories
   * passing the filters, newest first, and `offset` skips that many. A query with words refuses it: a
   * search returns its best `k`. @defaultValue 0
   */
  offset?: number;
  /**
   * A hard recency window, like claude-mem's 90 days: memories older than this before `now` are left out
   * (it tightens `filters.since`). A duration: `"90d"`, `"12h"`, or ms. @defaultValue off
   */
  maxAge?: string | number;
}

export interface ResolvedSearch extends Omit<SearchOptions, 'decay'> {
  namespace: string;
  query: string;
  filters: SearchFilters;
  now: number;
  decay: ResolvedDecay;
  explain: ExplainLevel;
}

const L = DEFAULT_INPUT_LIMITS;
const stringList = z.array(WellFormedString.min(1).max(256)).max(64);
const timeLike = z.union([z.number(), WellFormedString]);

export const SearchFiltersSchema = z.strictObject({
  kinds: stringList.optional(),
  sessions: stringList.optional(),
  agents: stringList.optional(),
  tags: stringList.optional(),
  since: timeLike.optional(),
  until: timeLike.optional(),
  slots: stringList.optional(),
  asOf: timeLike.optional(),
});

/** `"auto"`, `"off"`, a duration string (`"30d"`, the half-life), or an object with halfLifeMs or tauMs. */
export const DecaySchema = z.union([
  z.literal('auto'),
  z.literal('off'),
  WellFormedString,
  z.strictObject({ halfLifeMs: z.number().positive() }),
  z.strictObject({ tauMs: z.number().positive() }),
]);

/** The wire shape of a search request (CLI query files, HTTP). */
export const SearchRequestSchema = z.strictObject({
  namespace: NamespaceSchema,
  query: WellFormedString.max(L.maxQueryChars, `query must be at most ${L.maxQueryChars} characters`),
  k: z.number().min(1).max(L.maxK, `k must be at most ${L.maxK}`).int().optional(),
  candidatePool: z
    .number()
    .min(1)
    .max(L.maxCandidatePool, `candidatePool must be at most ${L.maxCandidatePool}`)
    .int()
    .optional(),
  weights: z
    .strictObject({
      lexical: z.number().min(0).max(100).optional(),
      vector: z.number().min(0).max(100).optional(),
    })
    .optional(),
  rrfK: z.number().min(0).max(10_000).optional(),
  contextWeight: z.number().min(0).max(10).optional(),
  agentBoost: z.number().min(0).max(10).optional(),
  sessionMatch: z.number().min(0).max(10).optional(),
  sessionSupport: z.number().min(0).max(1).optional(),
  routeWeight: z.number().min(0).max(100).optional(),
  routeWeights: z
    .record(WellFormedString.regex(ROUTE_NAME_PATTERN, ROUTE_NAME_RULE), z.number().min(0).max(100))
    .optional(),
  routeFusion: z.enum(['best', 'sum']).optional(),
  neighbors: z.number().min(0).max(L.maxNeighbors).int().optional(),
  decay: DecaySchema.optional(),
  kindHalfLives: z
    .record(
      WellFormedString.min(1).max(64),
      z.union([z.literal('off'), WellFormedString.min(1), z.number().positive()]),
    )
    .refine((r) => Object.keys(r).length <= 32, 'at most 32 kinds')
    .optional(),
  recency: z
    .strictObject({
      tieBreak: z.number().min(0).max(1_000).optional(),
      intent: z.number().min(0).max(1_000).optional(),
      peerMargin: z.number().min(0).max(1).optional(),
      peerDepth: z.number().min(0).max(10_000).int().optional(),
    })
    .optional(),
  importanceWeight: z.number().min(0).max(1).optional(),
  confidenceWeight: z.number().min(0).max(1).optional(),
  mmrLambda: z.number().min(0).max(1).optional(),
  mmrTagWeight: z.number().min(0).max(1).optional(),
  duplicateThreshold: z.number().min(0).max(2).optional(),
  rerank: z.enum(['auto', 'off', 'deterministic', 'model']).optional(),
  rerankDepth: z.number().min(1).max(200).int().optional(),
  rerankTimeoutMs: z.number().min(1).max(60_000).int().optional(),
  boosts: z
    .array(
      z
        .strictObject({
          tag: WellFormedString.min(1).max(64).optional(),
          kind: WellFormedString.min(1).max(64).optional(),
          agent: WellFormedString.min(1).max(256).optional(),
          path: WellFormedString.min(1).max(512).optional(),
          factor: z.number().gt(0, 'factor must be above 0').max(10),
        })
        .refine(
          (b) => b.tag !== undefined || b.kind !== undefined || b.agent !== undefined || b.path !== undefined,
          {
            message: 'a boost names a tag, kind, agent or path',
          },
        ),
    )
    .max(16)
    .optional(),
  now: timeLike.optional(),
  filters: SearchFiltersSchema.optional(),
  explain: z.enum(['none', 'hits', 'full']).optional(),
  minCosine: z.number().min(-1).max(1).optional(),
  offset: z
    .number()
    .min(0)
    .max(L.maxListingOffset, `offset must be at most ${L.maxListingOffset}`)
    .int()
    .optional(),
  /**
   * A hard recency window, like claude-mem's 90 days: memories older than this before now are left out
   * (it tightens `filters.since`). A duration: `"90d"`, `"12h"`, or ms. Off unless given.
   */
  maxAge: z.union([WellFormedString, z.number().positive()]).optional(),
});

export type SearchRequestWire = z.input<typeof SearchRequestSchema>;

/** Parses a wire request (from JSON) into a SearchRequest, naming the field at fault on error. */
export function parseSearchRequest(input: unknown, context?: string): SearchRequest {
  const parsed = SearchRequestSchema.safeParse(input);
  if (!parsed.success) throw zodToCairnError(parsed.error, context);
  const { decay, now, filters, kindHalfLives, ...rest } = parsed.data;
  const req: SearchRequest = { ...rest };
  if (decay !== undefined) req.decay = parseDecay(decay);
  if (kindHalfLives !== undefined)
    // fromEntries defines own properties: a kind named __proto__ is a key, never the object's prototype.
    req.kindHalfLives = Object.fromEntries(
      Object.entries(kindHalfLives).map(([kind, v]) => [
        kind,
        v === 'off' ? 'off' : parseDuration(v, `kindHalfLives.${kind}`),
      ]),
    );
  if (now !== undefined) req.now = parseTimestamp(now, 'now');
  // Relative windows ("90d") count back from the request's now (maxAge too, in resolveSearch).
  if (filters !== undefined) req.filters = parseFilters(filters, req.now ?? Date.now());
  return req;
}

export function parseDecay(value: z.infer<typeof DecaySchema>): DecaySpec {
  if (value === 'off' || value === 'auto') return value;
  if (typeof value === 'string') return { halfLifeMs: parseDuration(value, 'decay') };
  return value;
}

function parseFilters(f: z.infer<typeof SearchFiltersSchema>, now: number): SearchFilters {
  const out: SearchFilters = {};
  if (f.kinds) out.kinds = f.kinds;
  if (f.sessions) out.sessions = f.sessions;
  if (f.agents) out.agents = f.agents;
  if (f.tags) out.tags = f.tags;
  if (f.since !== undefined) out.since = parseTimeBound(f.since, 'filters.since', now);
  if (f.until !== undefined) out.until = parseTimeBound(f.until, 'filters.until', now);
  if (f.slots) out.slots = f.slots;
  if (f.asOf !== undefined) out.asOf = parseTimeBound(f.asOf, 'filters.asOf', now);
  return out;
}

export function hasFilters(f: SearchFilters): boolean {
  return Boolean(
    f.kinds?.length ||
      f.sessions?.length ||
      f.agents?.length ||
      f.tags?.length ||
      f.since !== undefined ||
      f.until !== undefined ||
      f.slots?.length ||
      f.asOf !== undefined,
  );
}

/**
 * The search defaults a router serves with: the configured ones, and, unless the configuration sets the
 * leg weights itself, the embedder's own vector weight (a hashing embedder is a backstop, a learned model a
 * full leg; see Embedder.fusionWeight).
 */
export function searchDefaultsFor(
  embedder: Pick<Embedder, 'fusionWeight'> | null,
  configured: Partial<SearchOptions> | undefined,
): SearchOptions {
  const opts = withDefaults(DEFAULT_SEARCH_OPTIONS, configured);
  if (configured?.weights?.vector !== undefined || embedder?.fusionWeight === undefined) return opts;
  return { ...opts, weights: { ...opts.weights, vector: embedder.fusionWeight } };
}

/** The RRF weight of a named-field route relative to its leg. */
export function routeWeightOf(
  opts: Pick<SearchOptions, 'routeWeight' | 'routeWeights'>,
  route: string,
): number {
  return Object.hasOwn(opts.routeWeights, route) ? opts.routeWeights[route]! : opts.routeWeight;
}

/** Fills defaults and validates once; the router works only with resolved options. */
export function resolveSearch(
  req: SearchRequest,
  defaults: SearchOptions = DEFAULT_SEARCH_OPTIONS,
): ResolvedSearch {
  const opts = withDefaults(defaults, req as Partial<SearchOptions>);
  const weights = withDefaults(defaults.weights, req.weights);
  const recency = withDefaults(defaults.recency, req.recency);
  // Per-route weights add to the configured ones, as leg weights do, rather than replacing them all.
  const routeWeights = { ...defaults.routeWeights, ...req.routeWeights };
  const kindHalfLives = { ...defaults.kindHalfLives, ...req.kindHalfLives };
  const bad = (field: string, message: string) =>
    new CairnError('INVALID_INPUT', `${field}: ${message}`, { field });
  if (!Number.isInteger(opts.k) || opts.k < 1 || opts.k > L.maxK)
    throw bad('k', `must be an integer in [1, ${L.maxK}]`);
  if (
    !Number.isInteger(opts.candidatePool) ||
    opts.candidatePool < 1 ||
    opts.candidatePool > L.maxCandidatePool
  ) {
    throw bad('candidatePool', `must be an integer in [1, ${L.maxCandidatePool}]`);
  }
  if (!(weights.lexical >= 0) || !(weights.vector >= 0)) throw bad('weights', 'must be >= 0');
  // Both legs off ranks nothing (routes weigh by their leg's weight too): an answer of "no match" would say
  // the memories are not there. A blank query lists without ranking, so it may carry any weights.
  if (
    weights.lexical === 0 &&
    weights.vector === 0 &&
    typeof req.query === 'string' &&
    req.query.trim() !== ''
  )
    throw bad('weights', 'lexical and vector cannot both be 0: no leg would rank anything');
  if (!(opts.rrfK >= 0)) throw bad('rrfK', 'must be >= 0');
  if (!(opts.contextWeight >= 0)) throw bad('contextWeight', 'must be >= 0');
  if (!(opts.agentBoost >= 0 && opts.agentBoost <= 10)) throw bad('agentBoost', 'must be in [0, 10]');
  if (!(opts.sessionMatch >= 0 && opts.sessionMatch <= 10)) throw bad('sessionMatch', 'must be in [0, 10]');
  if (!(opts.sessionSupport >= 0 && opts.sessionSupport <= 1))
    throw bad('sessionSupport', 'must be in [0, 1]');
  if (!(opts.routeWeight >= 0 && opts.routeWeight <= 100)) throw bad('routeWeight', 'must be in [0, 100]');
  for (const [route, w] of Object.entries(routeWeights)) {
    if (!(w >= 0 && w <= 100)) throw bad('routeWeights', `${route}: must be in [0, 100]`);
  }
  for (const [kind, h] of Object.entries(kindHalfLives)) {
    if (h !== 'off' && !(h > 0 && Number.isFinite(h)))
      throw bad(`kindHalfLives.${kind}`, "must be a positive number of ms or 'off'");
  }
  if (!Number.isInteger(opts.neighbors) || opts.neighbors < 0 || opts.neighbors > L.maxNeighbors)
    throw bad('neighbors', `must be an integer in [0, ${L.maxNeighbors}]`);
  if (!(recency.tieBreak >= 0) || !(recency.intent >= 0)) throw bad('recency', 'reaches must be >= 0');
  if (!(recency.peerMargin >= 0 && recency.peerMargin <= 1))
    throw bad('recency', 'peerMargin must be in [0, 1]');
  if (!Number.isInteger(recency.peerDepth) || recency.peerDepth < 0)
    throw bad('recency', 'peerDepth must be an integer >= 0');
  if (!(opts.mmrTagWeight >= 0 && opts.mmrTagWeight <= 1)) throw bad('mmrTagWeight', 'must be in [0, 1]');
  if (!(opts.confidenceWeight >= 0 && opts.confidenceWeight <= 1))
    throw bad('confidenceWeight', 'must be in [0, 1]');
  if (!['auto', 'off', 'deterministic', 'model'].includes(opts.rerank))
    throw bad('rerank', "must be 'auto', 'off', 'deterministic' or 'model'");
  if (!Number.isInteger(opts.rerankDepth) || opts.rerankDepth < 1 || opts.rerankDepth > 200)
    throw bad('rerankDepth', 'must be an integer in [1, 200]');
  if (!(opts.rerankTimeoutMs > 0)) throw bad('rerankTimeoutMs', 'must be > 0');
  for (const [i, b] of opts.boosts.entries()) {
    if (!(b.factor > 0 && b.factor <= 10)) throw bad(`boosts.${i}.factor`, 'must be in (0, 10]');
    if (b.tag === undefined && b.kind === undefined && b.agent === undefined && b.path === undefined)
      throw bad(`boosts.${i}`, 'a boost names a tag, kind, agent or path');
  }
  if (typeof req.query !== 'string') throw bad('query', 'must be a string');
  if (req.query.length > L.maxQueryChars) throw bad('query', `must be at most ${L.maxQueryChars} characters`);
  if (
    req.offset !== undefined &&
    !(Number.isInteger(req.offset) && req.offset >= 0 && req.offset <= L.maxListingOffset)
  )
    throw bad('offset', `must be an integer in [0, ${L.maxListingOffset}]`);
  const ns = NamespaceSchema.safeParse(req.namespace);
  if (!ns.success) throw zodToCairnError(ns.error, undefined, 'namespace');
  const now = req.now ?? Date.now();
  let filters = req.filters ?? {};
  if (req.maxAge !== undefined) {
    const since = now - parseDuration(req.maxAge, 'maxAge');
    filters = { ...filters, since: Math.max(since, filters.since ?? 0) };
  }
  return {
    ...opts,
    weights,
    recency,
    routeWeights,
    kindHalfLives,
    namespace: req.namespace,
    query: req.query,
    filters,
    now,
    decay: resolveDecay(opts.decay),
    explain: req.explain ?? 'hits',
    // The pool must be at least k, or fusion could not fill the page.
    candidatePool: Math.max(opts.candidatePool, opts.k),
  };
}
