// Worker-thread entry: scores one FTS5 term with a read-only connection of the worker's own, so a term
// seen for the first time never holds the serving thread (see TermPostingsCache.prefetch).
import type Database from 'better-sqlite3';
import { withReaderConnection } from './reader-connection.js';
import { StatementCache } from './statement-cache.js';
import { type ScoredMatches, scoreTerm, type TermScoreRequest } from './term-scoring.js';

const statementsOf = new WeakMap<Database.Database, StatementCache>();

export default function scoreTermTask(req: TermScoreRequest & { path: string }): ScoredMatches {
  return withReaderConnection(req.path, (db) => {
    let statements = statementsOf.get(db);
    if (!statements) {
      statements = new StatementCache(db);
      statementsOf.set(db, statements);
    }
    return scoreTerm(statements, req);
  });
}
