// Worker-thread entry: scores one FTS5 term with a read-only connection of the worker's own, so a term
// seen for the first time never holds the serving thread (see TermPostingsCache.prefetch).
import type Database from 'better-sqlite3';
import { openDatabase } from './open-database.js';
import { type ScoredMatches, type TermScoreRequest, termScoreSql, toScoredMatches } from './term-scoring.js';

/** One connection per database file, kept for the thread's life (a pool's thread exits when idle). */
const connections = new Map<string, Database.Database>();

export default function scoreTermTask(req: TermScoreRequest & { path: string }): ScoredMatches {
  let db = connections.get(req.path);
  if (!db) {
    db = openDatabase(req.path, { readonly: true });
    // The term's pages come through the memory map and the OS page cache; SQLite's own cache (64 MiB for
    // the serving connection) would only add to the process's memory.
    db.pragma('cache_size = -8192');
    connections.set(req.path, db);
  }
  try {
    // better-sqlite3 caches nothing itself; a statement per call costs ~20 µs beside milliseconds of scoring.
    const rows = db.prepare(termScoreSql(req.bm25)).raw().all(req.match, req.maxKey, req.maxPerTerm) as Array<
      [number, number]
    >;
    return toScoredMatches(rows);
  } catch (err) {
    // A connection that failed (the file replaced, damaged, gone) is not kept: the next term opens anew.
    connections.delete(req.path);
    db.close();
    throw err;
  }
}
