import type Database from 'better-sqlite3';

/**
 * Prepared statements keyed by SQL text. Filters change the SQL's shape, so statements cannot all be
 * prepared up front, but preparing costs tens of microseconds per query: a bounded cache keeps that off
 * the hot path. At the bound the cache is dropped whole (shapes are few; this is rare).
 */
export class StatementCache {
  private readonly cache = new Map<string, Database.Statement>();

  constructor(
    private readonly db: Database.Database,
    private readonly limit = 256,
  ) {}

  get(sql: string): Database.Statement {
    let stmt = this.cache.get(sql);
    if (!stmt) {
      stmt = this.db.prepare(sql);
      if (this.cache.size >= this.limit) this.cache.clear();
      this.cache.set(sql, stmt);
    }
    return stmt;
  }

  /**
   * Runs `read` in one read transaction (a single WAL snapshot), or in the caller's when one is open: for
   * statements whose answers must agree with each other while another thread or process writes.
   */
  snapshot<T>(read: () => T): T {
    if (this.db.inTransaction) return read();
    this.get('BEGIN').run();
    try {
      return read();
    } finally {
      // An error that ended the transaction already (SQLite rolls back on some) must not be masked.
      if (this.db.inTransaction) this.get('COMMIT').run();
    }
  }
}
