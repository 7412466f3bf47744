// Worker-thread entry: scores one FTS5 term with a read-only connection of the worker's own, so a term
// seen for the first time never holds the serving thread (see TermPostingsCache.prefetch).
import { withReaderConnection } from './reader-connection.js';
import { type ScoredMatches, type TermScoreRequest, termScoreSql, toScoredMatches } from './term-scoring.js';

export default function scoreTermTask(req: TermScoreRequest & { path: string }): ScoredMatches {
  return withReaderConnection(req.path, (db) =>
    // better-sqlite3 caches nothing itself; a statement per call costs ~20 µs beside milliseconds of scoring.
    toScoredMatches(
      db.prepare(termScoreSql(req.bm25)).raw().all(req.match, req.maxKey, req.maxPerTerm) as Array<
        [number, number]
      >,
    ),
  );
}
