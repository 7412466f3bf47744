import type { RouteLeg, RouteList, SearchFilters } from '@cairn/core';
import type Database from 'better-sqlite3';
import { allowedKeys } from './filter-sql.js';
import { DEFAULT_FTS_QUERY_OPTIONS, planFtsQuery, renderFtsQuery } from './fts-query.js';
import type { KeyCatalog } from './key-catalog.js';
import { RouteVectors } from './route-vectors.js';
import { routeToken } from './route-writer.js';
import { scopeToken } from './scope-token.js';
import type { StatementCache } from './statement-cache.js';

export interface RouteSearchOptions {
  /**
   * Matches of a route's query scored by bm25 at most: the newest this many, so a common word over a large
   * namespace costs a bounded scan, as in the lexical leg's `recent` plan. @defaultValue 4_000
   */
  scoreBudget: number;
  /**
   * Candidates read from a route before the namespace's filters and liveness are checked, as a multiple
   * of the page asked for (a filtered search reads this many times more). @defaultValue 4
   */
  overFetch: number;
}

export const DEFAULT_ROUTE_SEARCH_OPTIONS: Readonly<RouteSearchOptions> = Object.freeze({
  scoreBudget: 4_000,
  overFetch: 4,
});

/**
 * Multi-route recall over memories' named fields (`memory_routes`): a route's lexical list is FTS5's bm25
 * over that field's rows of the namespace, its vector list an exact scan of the field's vectors in the
 * space (route-vectors.ts). Both name parent memories, checked against the namespace, liveness and the
 * filters before they are ranked, so no route can return what the main legs could not.
 */
export class RouteSearch implements RouteLeg {
  private readonly vectors: RouteVectors;
  private readonly nextName: Database.Statement<[string, string], string>;

  constructor(
    db: Database.Database,
    private readonly statements: StatementCache,
    private readonly catalog: KeyCatalog | null,
    private readonly opts: RouteSearchOptions = DEFAULT_ROUTE_SEARCH_OPTIONS,
  ) {
    this.vectors = new RouteVectors(db);
    this.nextName = db
      .prepare('SELECT route FROM memory_routes WHERE namespace = ? AND route > ? ORDER BY route LIMIT 1')
      .pluck() as Database.Statement<[string, string], string>;
  }

  /**
   * Route names of a namespace, read fresh on every search (a field removed anywhere stops being listed):
   * one probe of the (namespace, route) index per name and one more, a few microseconds, so a namespace
   * without fields pays one probe.
   */
  routesOf(namespace: string): string[] {
    const names: string[] = [];
    for (let last = ''; names.length < 1_000; ) {
      const next = this.nextName.get(namespace, last);
      if (next === undefined) break;
      names.push(next);
      last = next;
    }
    return names;
  }

  searchRoutes(req: Parameters<RouteLeg['searchRoutes']>[0]): RouteList[] {
    const out: RouteList[] = [];
    const filtered = Object.keys(req.filters).length > 0;
    const read = req.limit * this.opts.overFetch * (filtered ? this.opts.overFetch : 1);
    const terms = planFtsQuery(req.query, DEFAULT_FTS_QUERY_OPTIONS).terms;
    for (const route of req.routes) {
      const match = renderFtsQuery(terms, scopeToken(req.namespace), [`scope : "${routeToken(route)}"`]);
      if (match && req.lexical !== false) {
        const keys = this.statements
          .get(
            `SELECT r.key FROM (
               SELECT rowid, bm25(routes_fts, 1, 0) AS score FROM routes_fts WHERE routes_fts MATCH ?
               ORDER BY rowid DESC LIMIT ${this.opts.scoreBudget}
             ) f JOIN memory_routes r ON r.id = f.rowid
             WHERE r.namespace = ? AND r.route = ?
             ORDER BY f.score LIMIT ?`,
          )
          .pluck()
          .all(match, req.namespace, route, read) as number[];
        out.push(this.ranked(route, 'lexical', keys, req));
      }
      if (req.vector && req.space) {
        const near = this.vectors.nearest(
          req.space,
          req.namespace,
          route,
          req.vector,
          read,
          req.minCosine ?? -1,
        );
        out.push(this.ranked(route, 'vector', near, req));
      }
    }
    return out;
  }

  /** Drops the route vectors held in memory (a space was dropped, or the store closes). */
  clear(): void {
    this.vectors.clear();
  }

  private ranked(
    route: string,
    leg: RouteList['leg'],
    keys: readonly number[],
    req: { namespace: string; filters: SearchFilters; limit: number },
  ): RouteList {
    const allowed =
      this.catalog?.allowed(req.namespace, keys, req.filters) ??
      allowedKeys(this.statements, req.namespace, keys, req.filters);
    const candidates: RouteList['candidates'] = [];
    for (const key of keys) {
      if (!allowed.has(key)) continue;
      candidates.push({ key, rank: candidates.length + 1 });
      if (candidates.length >= req.limit) break;
    }
    return { route, leg, candidates };
  }
}
