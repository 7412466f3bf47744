import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { ComputePool } from '@cairn/compute';
import {
  CATALOG_CHUNK_TASK,
  type CatalogChunk,
  type MemoryStore,
  type ScoredMatches,
  TERM_SCORE_TASK,
} from '@cairn/store';
import type { EngineLog } from './engine-options.js';

/**
 * Threads that score new terms. A query's new common words are asked for at once, so with two threads
 * they are scored side by side while the serving thread waits: a path such as
 * "app/workers/read-item.md" holds five words of 3,000–10,000 matches each, ~10 ms apiece at 100k.
 */
const SCORING_THREADS = Math.min(2, availableParallelism());

/**
 * Gives the store's lexical leg threads to score new common terms on (see the engine's `termScoring`):
 * a pool of its own, at the serving thread's priority, since a search waits on it while the
 * build pool may hold its thread for minutes with a graph. Kept alive across a quiet spell: restarting it
 * costs the next new term a thread, a module load and a connection. The caller closes the pool, after
 * taking the scorer back (`useTermScorer(null)`).
 */
export function startTermScoring(
  store: MemoryStore,
  dataDir: string,
  log: EngineLog,
  closing: () => boolean,
): ComputePool {
  const pool = new ComputePool({
    maxThreads: SCORING_THREADS,
    niceIncrement: 0,
    idleTimeoutMs: 600_000,
  });
  const path = join(dataDir, 'cairn.db');
  // Each thread starts now, loads the task and opens its connection, scoring a word no memory holds:
  // otherwise the first new common word a search meets waits ~100 ms for that (the slowest queries of a new
  // server's first pass, once the other words come from the saved postings). The pool's close waits for
  // them: a thread destroyed while it loads its task module takes the process down (a V8 fatal error, seen
  // when an engine was closed right after opening).
  for (let i = 0; i < SCORING_THREADS; i++) {
    void pool
      .run(TERM_SCORE_TASK, {
        match: '"cairn_warm_up"',
        bm25: 'bm25(memories_fts)',
        maxKey: 0,
        maxPerTerm: 1,
        path,
      })
      .catch(() => undefined);
  }
  let warned = false;
  store.lexical.useTermScorer((req) =>
    pool.run<ScoredMatches>(TERM_SCORE_TASK, { ...req, path }).catch((err: Error) => {
      // Each failed term is scored inline instead: correct, only slower. Said once, not per term.
      if (!warned && !closing()) {
        warned = true;
        log('warn', 'term scoring thread failed; new terms are scored on the serving thread', {
          error: err.message,
        });
      }
      throw err;
    }),
  );
  // The key catalog's first load reads its rows on these threads too: a chunk at a time, queued with the
  // terms, so a search's new word waits for one chunk (~60 ms at a million memories) at most.
  store.useCatalogReader((req) => pool.run<CatalogChunk>(CATALOG_CHUNK_TASK, { ...req, path }));
  return pool;
}
