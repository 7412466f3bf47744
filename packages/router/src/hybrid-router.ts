import {
  CairnError,
  type Embedder,
  hasFilters,
  isTermWeighted,
  type KeyedMemory,
  type LexicalCandidate,
  type LexicalLeg,
  type MemorySource,
  type Reranker,
  type ResolvedSearch,
  type RouteLeg,
  type RouteList,
  resolveSearch,
  routeWeightOf,
  type SearchOptions,
  type SearchRequest,
  type SearchResponse,
  searchDefaultsFor,
  tokenize,
  type VectorCandidate,
  type VectorLeg,
} from '@cairn/core';
import { applyRecency, type RecencyPlan } from './apply-recency.js';
import { applyBoosts } from './boosts.js';
import { diversifyHead } from './diversify-head.js';
import { explainEmpty } from './empty-reason.js';
import { type FusedCandidate, fuseCandidates, sortFused } from './fuse-candidates.js';
import { toHit, toListed, toNeighbor, trace } from './hit-shape.js';
import { applyNamedAgent } from './named-agent.js';
import { QueryVectorCache } from './query-vector-cache.js';
import { findRecencyPeers, recencyContenders } from './recency-peers.js';
import { planRecency, queriesOf, recencySettings } from './recency-plan.js';
import { DEFAULT_RELEVANCE_OPTIONS, relevanceOf } from './relevance.js';
import { type RerankPlan, rerankPage } from './rerank-page.js';
import { applySessionSupport } from './session-support.js';
import { completeVectorList } from './vector-completion.js';

export interface HybridRouterComponents {
  lexical: LexicalLeg;
  memories: MemorySource;
  /** The vector leg; null serves lexical-only, flagged degraded. */
  vector: VectorLeg | null;
  /** Embeds queries; must be of the vector leg's embedding space. */
  embedder: Embedder | null;
  /** Multi-route recall over memories' named fields; absent: fields are not searched. */
  routes?: RouteLeg;
  /** Query vectors of a remote embedder, reused across searches. @defaultValue a QueryVectorCache of its defaults */
  queryVectors?: QueryVectorCache;
  /** Defaults for every per-query option. @defaultValue DEFAULT_SEARCH_OPTIONS */
  defaults?: SearchOptions;
  /** Reorders the first hits when a query asks for `rerank: 'model'` (or `'auto'`). @defaultValue none */
  reranker?: Reranker | null;
  /**
   * Whether a graph's (approximate) vector list is completed with the lexical leg's candidates, all scored
   * exactly against the query (see completeVectorList). @defaultValue false
   */
  completeVectorList?: boolean;
}

const elapsed = (t0: number) => Math.round((performance.now() - t0) * 1000) / 1000;

/**
 * Lets the event loop run what is due (other requests' I/O, timers) before the search goes on. A search at
 * a million memories holds the serving thread ~10 ms in all; in one piece, that is 10 ms of lag for
 * everything else the server does. Split at its phases (after the vector leg, after the lexical leg, after
 * fusion), no piece is much longer than a few milliseconds; the search itself waits only for what was
 * already due.
 */
const yieldToLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * Plans and fuses hybrid searches. It knows the legs only by their contracts, so the same router serves
 * the embedded engine and a distributed deployment. Both legs run for every query: lexical synchronously
 * (SQLite), vector asynchronously (embedding may be remote); a leg that cannot answer is reported in
 * `degraded` and the other still serves.
 */
export class HybridRouter {
  private readonly defaults: SearchOptions;
  readonly queryVectors: QueryVectorCache;

  constructor(private readonly c: HybridRouterComponents) {
    this.defaults = c.defaults ?? searchDefaultsFor(c.embedder ?? null, undefined);
    this.queryVectors = c.queryVectors ?? new QueryVectorCache();
    if (c.vector && c.embedder && c.vector.space.dimensions !== c.embedder.dimensions) {
      throw new Error(
        `embedder ${c.embedder.modelId} makes ${c.embedder.dimensions}-d vectors but the vector leg holds ${c.vector.space.id}`,
      );
    }
  }

  async search(request: SearchRequest): Promise<SearchResponse> {
    const t0 = performance.now();
    const opts = resolveSearch(request, this.defaults);
    const degraded: SearchResponse['degraded'] = [];
    const degradedReasons: Record<string, string> = {};
    const blank = tokenize(opts.query).length === 0;
    const offset = request.offset ?? 0;
    // A blank query with filters is a listing (claude-mem's filter-only search): newest first, paged.
    const listing = blank && hasFilters(opts.filters) && this.c.memories.list ? { offset } : null;
    if (offset > 0 && !listing)
      throw new CairnError(
        'INVALID_INPUT',
        'offset pages a listing (a blank query with at least one filter); a search with words returns its best k',
        { field: 'offset' },
      );
    const plan = planRecency(opts);
    const { topicQuery, legQuery } = queriesOf(opts.query, plan.intent);

    // Terms the lexical leg meets for the first time are scored off this thread when the leg can (a
    // server's): asked for first, they are scored while this thread runs the vector leg, and the lexical
    // leg sums them after it. A failed preparation fails the search as the lexical leg would.
    const lexicalOn = opts.weights.lexical > 0 && !blank;
    const tPrep = performance.now();
    // Settles to the failure, if any, so that a rejection waits for the vector leg unobserved.
    const preparing = lexicalOn
      ? this.c.lexical
          .prepare?.({ namespace: opts.namespace, query: legQuery, contextWeight: opts.contextWeight })
          .then(
            () => null,
            (err: unknown) => err,
          )
      : undefined;
    const prepareMs = elapsed(tPrep);

    // Vector leg.
    const tVec = performance.now();
    let vector: VectorCandidate[] = [];
    let vectorExact: boolean | null = null;
    let queryVector: Float32Array | undefined;
    let floor = request.minCosine ?? this.c.embedder?.similarityFloor ?? 0;
    if (opts.weights.vector > 0 && !blank) {
      const { vector: leg, embedder } = this.c;
      if (!leg || !embedder) {
        degraded.push('vector');
        degradedReasons.vector = 'no embedder is configured';
      } else {
        try {
          const qv = await this.embedQuery(embedder, opts.namespace, legQuery);
          queryVector = qv;
          const r = await leg.searchVector({
            namespace: opts.namespace,
            vector: qv!,
            filters: opts.filters,
            limit: opts.candidatePool,
          });
          if (r.status === 'ok') {
            floor = request.minCosine ?? embedder.similarityFloor ?? 0;
            // Ranks are re-dealt after the floor so they stay dense (1, 2, 3…) as RRF expects.
            vector = r.candidates.filter((c) => c.cosine >= floor).map((c, i) => ({ ...c, rank: i + 1 }));
            vectorExact = r.exact;
            if (r.unembedded) {
              degraded.push('vector');
              degradedReasons.vector = `${r.unembedded.missing} of the namespace's ${r.unembedded.live} memories have no vector yet (stored, not embedded): the vector leg searched the rest`;
            }
          } else {
            degraded.push('vector');
            degradedReasons.vector = r.reason;
          }
        } catch (err) {
          degraded.push('vector');
          degradedReasons.vector = `embedder ${embedder.modelId} failed: ${(err as Error).message}`;
        }
      }
    }
    const vectorMs = elapsed(tVec);
    await yieldToLoop();

    // Lexical leg.
    const tLex = performance.now();
    let lexical: LexicalCandidate[] = [];
    let lexicalQuery: string | null = null;
    let droppedTerms: string[] = [];
    let lexicalPlan: SearchResponse['explain']['lexicalPlan'] = null;
    if (lexicalOn) {
      const failed = await preparing;
      if (failed) throw failed;
      const r = this.c.lexical.searchLexical({
        namespace: opts.namespace,
        query: legQuery,
        filters: opts.filters,
        limit: opts.candidatePool,
        contextWeight: opts.contextWeight,
        sessionWeight: opts.sessionMatch,
      });
      lexical = r.candidates;
      lexicalQuery = r.ftsQuery;
      droppedTerms = r.droppedTerms;
      lexicalPlan = r.plan ?? null;
    }
    // The planning done before the vector leg counts as the lexical leg's.
    const lexicalMs = elapsed(tLex) + prepareMs;

    // A graph's list misses some nearest neighbours; the lexical leg's candidates complete it, scored
    // exactly (see completeVectorList). An exact leg's list is complete already.
    let vectorFromLexical: number | null = null;
    const tComplete = performance.now();
    const complete = this.c.completeVectorList ?? false;
    if (complete && vectorExact === false && queryVector && this.c.vector && lexical.length > 0) {
      const done = completeVectorList(
        this.c.vector,
        opts.namespace,
        queryVector,
        vector,
        lexical,
        floor,
        opts.candidatePool,
      );
      vector = done.candidates;
      vectorFromLexical = done.fromLexical;
    }
    const completionMs = elapsed(tComplete);
    await yieldToLoop();

    // Multi-route recall: the namespace's named fields, each searched as a route of its own.
    const routeNames = this.routeNames(opts, blank);
    let routeLists: RouteList[] = [];
    if (routeNames.length > 0) {
      routeLists = this.c.routes!.searchRoutes({
        namespace: opts.namespace,
        query: legQuery,
        ...(queryVector && this.c.vector ? { vector: queryVector, space: this.c.vector.space } : {}),
        minCosine: floor,
        lexical: opts.weights.lexical > 0,
        routes: routeNames,
        filters: opts.filters,
        limit: opts.candidatePool,
      });
    }

    // Fusion: drop dead memories, score, then diversify the top of the list.
    const tFuse = performance.now();
    const keys = [
      ...new Set([
        ...lexical.map((c) => c.key),
        ...vector.map((c) => c.key),
        ...routeLists.flatMap((l) => l.candidates.map((c) => c.key)),
      ]),
    ];
    const live = this.c.memories.scoringByKeys(opts.namespace, keys);
    const fused = fuseCandidates(lexical, vector, live, opts, routeLists);
    applyNamedAgent(fused, topicQuery, opts.agentBoost);
    applySessionSupport(fused, opts.sessionSupport);
    const close = this.recencyPeers(fused, topicQuery, opts, plan);
    const peers = applyRecency(fused, opts, plan, close.peers);
    // Boosts match on tags, meta and text: the candidates' records, read only when the query has boosts.
    const boostRecords =
      opts.boosts.length > 0 && !listing
        ? this.c.memories.liveByKeys(
            opts.namespace,
            fused.map((c) => c.key),
          )
        : null;
    if (boostRecords) applyBoosts(fused, opts.boosts, boostRecords);
    sortFused(fused);
    const rerank = listing ? { plan: null, info: undefined } : this.rerankPlan(opts);
    // A reranked page is cut from the reranker's depth; the rest of the pipeline sees the deeper page.
    const pageK = rerank.plan ? Math.max(opts.k, rerank.plan.depth) : opts.k;
    const diversified = diversifyHead(fused, { ...opts, k: pageK }, this.c.vector, this.c.memories);
    await yieldToLoop();
    const { duplicates, headRecords } = diversified;
    let selected = diversified.selected;
    // Full records only for the page: the pool can be 100 candidates, the page is k. The close calls'
    // records were read already, and most of the page is among them.
    // (With MMR over tags the head's records were read already.)
    const records = new Map<number, KeyedMemory>([
      ...close.records,
      ...(headRecords ?? []),
      ...(boostRecords ?? []),
    ]);
    const missing = selected.map((i) => fused[i]!.key).filter((key) => !records.has(key));
    for (const [key, m] of this.c.memories.liveByKeys(opts.namespace, missing)) records.set(key, m);
    let rerankInfo = rerank.info;
    const reranked = new Map<number, { score: number; fusedRank: number }>();
    if (rerank.plan) {
      // The reranker sees its depth, no more (a page longer than it keeps its fused order below it).
      const keys = selected.slice(0, rerank.plan.depth).map((i) => fused[i]!.key);
      const outcome = await rerankPage(topicQuery, keys, records, rerank.plan, (ks) =>
        this.c.lexical.queryCoverage
          ? this.c.lexical.queryCoverage(opts.namespace, topicQuery, ks)
          : { words: [], matched: new Map() },
      );
      rerankInfo = outcome.info;
      const before = selected;
      if (outcome.scores)
        for (const [pos, i] of outcome.order.entries())
          if (pos < opts.k)
            reranked.set(before[i]!, { score: outcome.scores.get(keys[i]!)!, fusedRank: i + 1 });
      selected = [...outcome.order.map((i) => before[i]!), ...before.slice(keys.length)].slice(0, opts.k);
    }
    const ranked = listing
      ? this.c.memories.list!(opts.namespace, opts.filters, opts.k, listing.offset).map(
          (m) => [toListed(m), m] as const,
        )
      : selected.flatMap((i) => {
          const m = records.get(fused[i]!.key);
          if (!m) return [];
          const hit = toHit(fused[i]!, m);
          const r = reranked.get(i);
          if (r) hit.rerank = r;
          return [[hit, m] as const];
        });
    const hits = ranked.map(([hit, m]) => {
      if (opts.neighbors > 0 && m.session !== null && this.c.memories.sessionNeighbors) {
        const around = this.c.memories.sessionNeighbors(
          opts.namespace,
          { ...m, session: m.session },
          opts.neighbors,
          opts.neighbors,
        );
        hit.neighbors = { before: around.before.map(toNeighbor), after: around.after.map(toNeighbor) };
      }
      return hit;
    });
    const merged = this.c.memories.consolidatedInto?.(
      opts.namespace,
      ranked.map(([, m]) => m.key),
      opts.explain === 'full' ? 20 : 0,
    );
    const superseded: Array<{ id: string; supersededBy: string; cosine: number }> = [];
    if (merged?.size) {
      for (const [i, [, m]] of ranked.entries()) {
        const c = merged.get(m.key);
        if (!c) continue;
        hits[i]!.dupCount = c.dupCount;
        for (const a of c.absorbed) superseded.push({ id: a.id, supersededBy: m.id, cosine: a.cosine });
      }
    }
    const fusionMs = elapsed(tFuse);

    const response: SearchResponse = {
      namespace: opts.namespace,
      query: opts.query,
      hits,
      degraded,
      explain: {
        lexicalQuery,
        droppedTerms,
        lexicalPlan,
        space: this.c.vector && opts.weights.vector > 0 ? this.c.vector.space.id : null,
        vectorExact,
        vectorFromLexical,
        degradedReasons,
        settings: {
          k: opts.k,
          candidatePool: opts.candidatePool,
          weights: opts.weights,
          rrfK: opts.rrfK,
          contextWeight: opts.contextWeight,
          agentBoost: opts.agentBoost,
          sessionMatch: opts.sessionMatch,
          sessionSupport: opts.sessionSupport,
          routeWeight: opts.routeWeight,
          routeWeights: opts.routeWeights,
          routeFusion: opts.routeFusion,
          routes: routeNames,
          neighbors: opts.neighbors,
          kindHalfLives: opts.kindHalfLives,
          halfLifeMs: opts.decay.mode === 'fixed' ? opts.decay.halfLifeMs : null,
          tauMs: opts.decay.mode === 'fixed' ? opts.decay.tauMs : null,
          now: opts.now,
          recency: recencySettings(opts, plan, peers),
          importanceWeight: opts.importanceWeight,
          confidenceWeight: opts.confidenceWeight,
          mmrLambda: opts.mmrLambda,
          mmrTagWeight: opts.mmrTagWeight,
          duplicateThreshold: opts.duplicateThreshold,
          rerank: opts.rerank,
          rerankDepth: opts.rerankDepth,
          boosts: opts.boosts,
          minCosine: request.minCosine ?? this.c.embedder?.similarityFloor ?? 0,
          filters: opts.filters,
          explain: opts.explain,
        },
      },
      tookMs: { lexical: lexicalMs, vector: vectorMs + completionMs, fusion: fusionMs, total: 0 },
    };
    if (listing) response.listing = listing;
    if (rerankInfo) response.rerank = rerankInfo;
    if (opts.explain === 'full') {
      response.explain.candidates = trace(fused, selected, duplicates);
      response.explain.superseded = superseded;
    }
    if (this.c.lexical.queryCoverage && !degraded.includes('lexical') && !blank) {
      const first = selected
        .map((i) => fused[i]!.key)
        .filter((key) => records.has(key))
        .slice(0, DEFAULT_RELEVANCE_OPTIONS.hits);
      const coverage = this.c.lexical.queryCoverage(opts.namespace, topicQuery, first);
      response.relevance = relevanceOf(topicQuery, coverage, first);
    }
    if (
      hits.length === 0 &&
      listing &&
      listing.offset > 0 &&
      this.c.memories.hasMatching(opts.namespace, opts.filters)
    ) {
      response.empty = {
        reason: 'no_match',
        message: `fewer than ${listing.offset + 1} memories pass the filters: the listing ends before offset ${listing.offset}`,
      };
    } else if (hits.length === 0) {
      response.empty = explainEmpty(
        this.c.memories,
        opts.namespace,
        opts.filters,
        blank && !listing,
        () =>
          this.c.lexical.searchLexical({
            namespace: opts.namespace,
            query: opts.query,
            filters: {},
            limit: 1,
          }).candidates.length > 0,
      );
    }
    response.tookMs.total = elapsed(t0);
    return response;
  }

  /**
   * What reranking this search gets: `'auto'` means the model when one is configured. Asking for the
   * model without one answers unreranked and says so, rather than failing the search.
   */
  private rerankPlan(opts: ResolvedSearch): {
    plan: RerankPlan | null;
    info: SearchResponse['rerank'];
  } {
    const reranker = this.c.reranker ?? null;
    const mode = opts.rerank === 'auto' ? (reranker ? 'model' : 'off') : opts.rerank;
    if (mode === 'off') return { plan: null, info: undefined };
    if (mode === 'model' && !reranker)
      return {
        plan: null,
        info: {
          by: 'none',
          applied: false,
          reason: 'no reranker is configured (CAIRN_RERANKER); fused order kept',
          depth: 0,
          tookMs: 0,
        },
      };
    return {
      plan: { mode, depth: opts.rerankDepth, timeoutMs: opts.rerankTimeoutMs, reranker },
      info: undefined,
    };
  }

  /** The named-field routes worth searching: those the namespace has, with a weight above 0. */
  private routeNames(opts: ResolvedSearch, blank: boolean): string[] {
    if (!this.c.routes || blank) return [];
    if (opts.weights.lexical <= 0 && opts.weights.vector <= 0) return [];
    return this.c.routes.routesOf(opts.namespace).filter((r) => routeWeightOf(opts, r) > 0);
  }

  /** The close calls age may reorder ('auto' mode only; see recency-peers.ts), and their records. */
  private recencyPeers(
    fused: readonly FusedCandidate[],
    query: string,
    opts: ResolvedSearch,
    plan: RecencyPlan,
  ): { peers: Set<number>; records: ReadonlyMap<number, KeyedMemory> } {
    if (opts.decay.mode !== 'auto' || plan.weight === 0 || fused.length < 2)
      return { peers: new Set(), records: new Map() };
    const depth = plan.peerDepth;
    const keys = recencyContenders(fused, depth, plan.weight).map((c) => c.key);
    const records = this.c.memories.liveByKeys(opts.namespace, keys);
    const lexical = this.c.lexical;
    const idf = (words: readonly string[]) =>
      lexical.termIdf ? lexical.termIdf(opts.namespace, words) : new Map<string, number>();
    return {
      peers: findRecencyPeers(fused, query, records, idf, {
        margin: plan.peerMargin,
        depth,
        weight: plan.weight,
      }),
      records,
    };
  }

  /**
   * A term-weighted embedder gets each query word's idf in the namespace, so rare words steer the query
   * vector and words found everywhere (a speaker's name, "error") barely move it.
   */
  private async embedQuery(embedder: Embedder, namespace: string, query: string): Promise<Float32Array> {
    if (isTermWeighted(embedder) && this.c.lexical.termIdf) {
      const idf = this.c.lexical.termIdf(namespace, embedder.weightableTerms(query));
      return embedder.embedWeighted(query, idf);
    }
    return this.queryVectors.embed(embedder, `${embedder.modelId}/${embedder.dimensions}`, query);
  }
}
