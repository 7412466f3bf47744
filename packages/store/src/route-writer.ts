import { createHash } from 'node:crypto';
import type Database from 'better-sqlite3';
import type { PendingLexicalIndex } from './pending-lexical-index.js';
import { scopeToken } from './scope-token.js';

/** The FTS token of a route name, confining a route's MATCH inside FTS5 (hex: names hold `_`). */
export function routeToken(route: string): string {
  return `r${createHash('sha256').update(route).digest('hex').slice(0, 12)}`;
}

/**
 * Keeps a memory's named fields (its routes) in `memory_routes`, inside the writer's transaction. A field
 * whose text is unchanged keeps its row, and so its vectors; a changed one gets a new row (a new id), which
 * the embed stage's route cursor picks up.
 */
export class RouteWriter {
  private readonly stored: Database.Statement<[number], { id: number; route: string; text: string }>;
  private readonly insert: Database.Statement;
  private readonly remove: Database.Statement<[number]>;
  private readonly removeAll: Database.Statement<[number]>;

  constructor(
    db: Database.Database,
    /** Where new routes' index entries wait for the end of the batch (the writer's). */
    private readonly lexical: PendingLexicalIndex,
  ) {
    this.stored = db.prepare('SELECT id, route, text FROM memory_routes WHERE key = ?');
    this.insert = db.prepare(
      'INSERT INTO memory_routes (key, namespace, route, text, scope) VALUES (?, ?, ?, ?, ?)',
    );
    this.remove = db.prepare('DELETE FROM memory_routes WHERE id = ?');
    this.removeAll = db.prepare('DELETE FROM memory_routes WHERE key = ?');
  }

  /** Makes the memory's routes exactly `fields`; true when any route was added, changed or removed. */
  write(key: number, namespace: string, fields: Readonly<Record<string, string>>): boolean {
    const names = Object.keys(fields);
    const current = this.stored.all(key);
    if (names.length === 0 && current.length === 0) return false;
    let changed = false;
    const kept = new Set<string>();
    for (const row of current) {
      if (fields[row.route] === row.text) kept.add(row.route);
      else {
        // The removal's trigger takes the route's words out of the index: they must be in it.
        this.lexical.settleRoutes(key);
        this.remove.run(row.id);
        changed = true;
      }
    }
    for (const route of names) {
      if (kept.has(route)) continue;
      const scope = `${scopeToken(namespace)} ${routeToken(route)}`;
      const id = Number(this.insert.run(key, namespace, route, fields[route], scope).lastInsertRowid);
      this.lexical.routeInserted(id, key, fields[route]!, scope);
      changed = true;
    }
    return changed;
  }

  /** A deleted memory says nothing, in any route. */
  drop(key: number): void {
    this.lexical.settleRoutes(key);
    this.removeAll.run(key);
  }
}
