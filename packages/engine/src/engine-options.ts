import type { Embedder, PrunePolicy, Reranker, SearchOptions } from '@cairn/core';
import type { KeyCatalogOptions, LexicalOptions, SessionContextOptions, VectorStorage } from '@cairn/store';
import type { HnswParams } from '@cairn/vector';
import type { ConsolidationOptions } from './consolidator.js';

export type EngineLog = (
  level: 'debug' | 'info' | 'warn' | 'error',
  msg: string,
  data?: Record<string, unknown>,
) => void;

export interface EngineOptions {
  /** The data folder: `cairn.db` (SQLite) and `vectors/` (index files). */
  dataDir: string;
  /**
   * The embedder. `undefined` uses the built-in HashingEmbedder; `null` runs lexical-only (every search is
   * flagged `degraded: ['vector']`). @defaultValue HashingEmbedder
   */
  embedder?: Embedder | null;
  /**
   * When `embedder` is not given: the embedder of the first embedding space, as a spec (`hash`,
   * `ollama:nomic-embed-text`, `openai:text-embedding-3-small`). Once a space exists, the active space's
   * recorded spec wins: the choice is made once per data folder, and changed only by a reindex.
   * @defaultValue 'hash'
   */
  embedderSpec?: string;
  /** Where remote embedders read CAIRN_OLLAMA_URL, CAIRN_OPENAI_* from. @defaultValue process.env */
  env?: Record<string, string | undefined>;
  /**
   * `'embedded'`: this process embeds and indexes what it stores (the default, no Redis). `'external'`:
   * a distributed deployment's workers do that; this process only reads, never writes index files, and
   * picks up new vectors, index generations and a newly activated space every `refreshIntervalMs`.
   * @defaultValue 'embedded'
   */
  pipeline?: 'embedded' | 'external';
  /**
   * When another live process already writes this data folder as an embedded engine: `'fail'` refuses to
   * open (STORAGE_ERROR naming it); `'read'` opens as a reader, like `pipeline: 'external'`, and refuses
   * writes with that reason. @defaultValue 'fail'
   */
  ifWriterRunning?: 'fail' | 'read';
  /** How often an `'external'` engine catches up with the workers (ms). @defaultValue 1_000 */
  refreshIntervalMs?: number;
  /**
   * Where the WAL checkpoints of this process's connection run: `'background'`, on a thread with a
   * connection of its own, so no commit on the serving thread stops to copy the log into the database file
   * (20–30 ms at 100k memories, every few batches of a bulk write); `'inline'`, inside the commit that grows
   * the log past 1,000 pages, as SQLite does by default. @defaultValue 'background' in a long-lived process
   * (`refreshIntervalMs` > 0); else 'inline' until the process's first bulk write (an `ingest` of at least
   * {@link BULK_WRITE_MEMORIES} memories, or a reindex it runs), then 'background': a one-shot command that writes one memory
   * would pay more to start the thread than it saves, while a bulk ingest's inline checkpoints copy the
   * same randomly placed index pages into the database file again every few batches, on its only thread
   */
  checkpoints?: 'background' | 'inline';
  /**
   * Vectors the embedded loop stores per transaction, with a turn of the event loop between, so a search
   * waits for one slice at most. A one-shot command serves no searches meanwhile, and slices cost its
   * bulk writes about 10% end to end (bench/RESULTS.md, 2026-11-27). @defaultValue 64 in a long-lived
   * process (`refreshIntervalMs` > 0), else the whole batch
   */
  storeSlice?: number;
  /**
   * Reorders the first hits of searches that ask for it (`rerank: 'model'`, or `'auto'`, the default,
   * whenever one is set): a cross-encoder behind a TEI- or Cohere-style endpoint (HttpReranker).
   * @defaultValue none
   */
  reranker?: Reranker | null;
  /**
   * Whether a graph's vector list is completed by the lexical leg's candidates, scored exactly (see the
   * router's completeVectorList): recall@10 against exact 0.81 → 0.92 at 100k with hashed vectors, for
   * 0.2–0.3 ms a search in process. Off by default because the pages it would change are few: the built-in
   * embedder's vector leg weighs 0.02 in fusion, and a dense model's graph already finds its exact top 10
   * (bench/RESULTS.md, 2026-11-29). @defaultValue false
   */
  completeVectorList?: boolean;
  /** Defaults for per-query search options. @defaultValue DEFAULT_SEARCH_OPTIONS */
  search?: Partial<SearchOptions>;
  lexical?: Partial<LexicalOptions>;
  /**
   * The in-memory catalog of each memory's search fields (`false`: every filter and liveness check asks
   * SQLite). A process that asks one question does better without it: loading it costs 0.2–0.4 s per 100k
   * memories, more than it saves that one search. @defaultValue the store's (on)
   */
  catalog?: Partial<KeyCatalogOptions> | false;
  /**
   * Contextual indexing: which kinds are also indexed by the memory before them in their session, and how
   * much of it. Applies to memories written from now on. @defaultValue DEFAULT_SESSION_CONTEXT_OPTIONS
   * (turns; 1,000 characters)
   */
  context?: Partial<SessionContextOptions>;
  hnsw?: Partial<HnswParams>;
  /**
   * Native threads one vector graph build or merge inserts with (in the compute pool, below the serving
   * thread's priority), and a consolidation batch's neighbour searches run on. @defaultValue
   * os.availableParallelism()
   */
  buildThreads?: number;
  /**
   * How the embedding spaces this process creates keep their vectors in SQLite (the first space of a new
   * data folder, a reindex's new space): `f32`, or `i8` at a quarter of the bytes (no measured quality cost
   * with the built-in embedder; bench/RESULTS.md). A space keeps the storage it was created with.
   * @defaultValue 'f32'
   */
  vectorStorage?: VectorStorage;
  /**
   * The consolidation job (near-duplicates marked as superseded by the newer memory, undoable), run by the
   * data folder's writer every `intervalMs`; `false` turns the schedule off (a caller can still run it).
   * @defaultValue DEFAULT_CONSOLIDATION_OPTIONS (cosine ≥ 0.95, every 5 minutes)
   */
  consolidation?: Partial<ConsolidationOptions> | false;
  /**
   * Pruning policies the writer applies every `intervalMs` (see PrunePolicy: a cap per slot or kind, with
   * what it protects by age and access count). @defaultValue none; intervalMs 3_600_000 (hourly)
   */
  prune?: { policies: readonly PrunePolicy[]; intervalMs?: number };
  /**
   * Count how often searches return each memory (`access_count`, `last_accessed`), which pruning policies
   * protect by. Written in the background every 2 s. @defaultValue true
   */
  trackAccess?: boolean;
  /** Namespaces with at most this many vectors use exact search. @defaultValue 5_000 */
  exactThreshold?: number;
  /** Searches wait for a vector index being built instead of serving lexical-only. @defaultValue false */
  waitForIndex?: boolean;
  /**
   * What a search does on finding a namespace with no usable vector index file (see the vector package's
   * `unbuiltSearch`): `'build'` builds the graph first (a long-lived writer: it then keeps it), `'exact'`
   * reads the stored vectors and searches them exactly at once, leaving the graph to a writer that stays
   * up; `drain` still builds and saves every graph. A one-question `cairn search` uses `'exact'`: at a million
   * memories a build held the first answer for 390 s. @defaultValue 'build'
   */
  unbuiltSearch?: 'build' | 'exact';
  /**
   * Audit a namespace's saved graph in the background once a search has mapped it (see the vector
   * package's `auditOnLoad`); a one-question `cairn search` turns it off: the audit never serves its answer.
   * @defaultValue true
   */
  auditOnLoad?: boolean;
  /** Build HNSW graphs on piscina worker threads. @defaultValue true */
  useWorkerThreads?: boolean;
  /**
   * Where the lexical leg scores a term it sees for the first time (FTS5's bm25 of up to 10,000 matches,
   * 10–17 ms for a common word at a million memories, bench/RESULTS.md): `'worker'`, on a thread with a
   * read connection of its own, so the event loop keeps serving other requests meanwhile; `'inline'`, on
   * the calling thread. Results are the same either way. @defaultValue 'worker' in a long-lived process
   * (`refreshIntervalMs` > 0) with `useWorkerThreads`, else 'inline' (a one-shot command would pay more to
   * start the thread than it saves)
   */
  termScoring?: 'worker' | 'inline';
  /**
   * Where a long-lived writer embeds what is written, with the built-in embedder (a remote one waits on
   * the network, not the CPU): `'worker'`, whole passes (read, embed, store the vectors) on an embed lane,
   * a thread of its own with a connection of its own, kept for the engine's life, the event loop only
   * adding the stored vectors to the index; `'inline'`, on the calling thread. Under 300 writes/s the lane
   * made the serving thread's event-loop delay per scrape 40–45% shorter (bench/RESULTS.md, "An embed
   * lane"). Always 'inline' with an `embedder` given here (it runs as given), without `useWorkerThreads`,
   * and in one-shot commands (their pool is busy building the graph, and nothing waits on their thread).
   * @defaultValue 'worker' in a long-lived process (`refreshIntervalMs` > 0) with `useWorkerThreads`
   */
  embedWrites?: 'worker' | 'inline';
  /** Memories per embedder call. @defaultValue 256 */
  embedBatchSize?: number;
  /**
   * After a reindex switches spaces, how long (ms) the previous space keeps receiving vectors of new
   * writes, so that activating it again is instant instead of another reindex; 0 lets it fall behind at
   * once. Dual writes cost a second embedding of every write while it lasts. @defaultValue 3_600_000 (1 h)
   */
  previousSpaceGraceMs?: number;
  /**
   * Check this often (ms) that each loaded index holds every stored vector (an audit that repairs holes),
   * then merge the vector deltas worth a new graph generation (a thirty-second of their graph, or deletes
   * worth rewriting it for: see `VectorIndexManager.persistDue`); 0 disables the timer. drain() and close()
   * merge every delta. An `'external'` engine only audits. @defaultValue 30_000
   */
  persistIntervalMs?: number;
  /**
   * Check cairn.db's integrity (SQLite's quick_check) once, on a worker thread, after opening: a damaged
   * file otherwise answers some searches wrongly and fails others. Until it finishes, requests are served;
   * once it finds damage, every operation fails with STORAGE_ERROR and readiness fails. SQLite damage
   * errors met at any time have the same effect. @defaultValue 'background' for a long-lived engine
   * (`refreshIntervalMs` > 0), 'off' for a one-shot one
   */
  integrityCheck?: 'background' | 'off';
  log?: EngineLog;
}

/** Whether the engine serves for long (a server, an MCP session) rather than one command's work. */
export function isLongLived(opts: Pick<EngineOptions, 'refreshIntervalMs'>): boolean {
  return (opts.refreshIntervalMs ?? 1_000) > 0;
}

/**
 * Memories in one `ingest` call that make it a bulk write: a one-shot engine moves its WAL checkpoints to
 * a thread of their own from then on (see `checkpoints`). `cairn ingest` writes 1,000 a call; `cairn add`
 * and an agent's writes, one to a few.
 */
export const BULK_WRITE_MEMORIES = 256;

/**
 * Where the WAL checkpoints run from the start (see `checkpoints`); 'on-bulk-write' when the option is unset
 * in a one-shot engine: inline until its first bulk write.
 */
export function checkpointsOf(
  opts: Pick<EngineOptions, 'refreshIntervalMs' | 'checkpoints'>,
): 'background' | 'inline' | 'on-bulk-write' {
  return opts.checkpoints ?? (isLongLived(opts) ? 'background' : 'on-bulk-write');
}

/** The embedded loop's slice (see `storeSlice`). */
export function storeSliceOf(opts: Pick<EngineOptions, 'refreshIntervalMs' | 'storeSlice'>): number {
  return opts.storeSlice ?? (isLongLived(opts) ? 64 : Number.POSITIVE_INFINITY);
}

/** Where the writer's embed passes run (see `embedWrites`). */
export function embedWritesOf(
  opts: Pick<EngineOptions, 'refreshIntervalMs' | 'embedWrites' | 'useWorkerThreads' | 'embedder'>,
): 'worker' | 'inline' {
  // An embedder given in the options is run as given, no thread starts without useWorkerThreads, and a
  // one-shot command has no searches to keep answering (its pool is busy building the graph).
  if (opts.embedder !== undefined || opts.useWorkerThreads === false || !isLongLived(opts)) return 'inline';
  return opts.embedWrites ?? 'worker';
}

/** Where the lexical leg scores new terms (see `termScoring`). */
export function termScoringOf(
  opts: Pick<EngineOptions, 'refreshIntervalMs' | 'termScoring' | 'useWorkerThreads'>,
): 'worker' | 'inline' {
  return opts.termScoring ?? (isLongLived(opts) && (opts.useWorkerThreads ?? true) ? 'worker' : 'inline');
}
