import { availableParallelism } from 'node:os';
import { type EmbeddingSpace, withDefaults } from '@cairn/core';
import { DEFAULT_HNSW_PARAMS, type HnswParams, type IndexBuilder } from './hnsw-params.js';
import type { EmbeddingSource, KeyFilter, LogFn } from './sources.js';
import { inProcessIndexBuilder } from './usearch-index.js';

/** Options of a {@link VectorIndexManager}: one embedding space's vector leg. */
export interface VectorIndexOptions {
  /** Folder for index files (one subfolder per embedding space). */
  dir: string;
  space: EmbeddingSpace;
  embeddings: EmbeddingSource;
  keys: KeyFilter;
  /** Builds and merges HNSW files; pass a worker-pool builder to keep them off the serving thread. @defaultValue in-process */
  builder?: IndexBuilder;
  /** Namespaces with at most this many vectors are searched exactly, with no graph. @defaultValue 5_000 */
  exactThreshold?: number;
  /**
   * New vectors of an HNSW namespace wait in an exact "delta" that every search also scans; at this size
   * the delta is merged into a new graph file on the builder. @defaultValue 4_096
   */
  mergeThreshold?: number;
  /** On load, more than this many vectors newer than the saved file trigger a full rebuild. @defaultValue 50_000 */
  maxCatchUp?: number;
  /**
   * A writer that applies this many new vectors to a namespace whose index is not loaded, and that holds
   * more than `exactThreshold` vectors (so it needs a graph), loads or builds that index at once, in the
   * background, one namespace at a time. A bulk ingest then builds its graph on the builder while it
   * stores, and merges the rest as it comes, instead of building the whole graph after the last write
   * (bench/RESULTS.md, "Ingest through the CLI, end to end": 135.5 → 79.3 s at 106,000 memories, 768-d).
   * Small namespaces stay unloaded until searched. `Infinity` turns this off. @defaultValue mergeThreshold
   */
  loadAfterWrites?: number;
  /**
   * Vectors of graph namespaces kept in memory after being read from SQLite for near-duplicate checks,
   * MMR and exact scans of a filter's few memories (the graph holds only quantised copies). The head of a
   * popular result is read again and again; a new vector for a key replaces the cached one when applied.
   * About `4 × dimensions` bytes each. @defaultValue 8_192
   */
  vectorCacheEntries?: number;
  /**
   * When a namespace's index is being (re)built, `true` makes searches wait for it and `false` makes them
   * answer `unavailable` at once so the router serves lexical-only, flagged degraded. @defaultValue false
   */
  waitForBuild?: boolean;
  /**
   * What a search does on finding a namespace too large for exact search with no usable graph file (never
   * built, deleted, damaged, or too far behind it): `'build'` builds the graph, and the search waits for it
   * or answers `unavailable` (see `waitForBuild`); `'exact'` reads the namespace's stored vectors into an
   * exact matrix and answers from it at once, as a reader does, leaving the graph to a writer that stays up
   * ({@link VectorIndexManager.warm}, and so an engine's drain, still builds it; writes to the stand-in do
   * not). For one-shot commands: at a million memories a build held the first answer for 390 s, where the
   * exact load took 13 s and its answer is exact (bench/RESULTS.md, "One-shot `cairn search` at a million
   * memories").
   * @defaultValue 'build'
   */
  unbuiltSearch?: 'build' | 'exact';
  /**
   * Whether a graph file mapped by a search is then audited in the background: its stored keys read and
   * looked up in the graph on the builder, and what it lacks added (an index worker's lost job leaves such
   * holes). `false` for a process that asks one question and exits: the audit never serves its answer (the
   * search does not wait for it), and it cost a one-shot `cairn search` at 100k memories about a quarter
   * of its wall time (a pool thread started for the look-up, and the close waiting for it). Periodic audits
   * (`VectorIndexManager.audit`) and every other process still repair. @defaultValue true
   */
  auditOnLoad?: boolean;
  /**
   * `'writer'` owns the index files: it builds, merges and deletes them. `'reader'` never writes a file: it
   * maps the files a writer (a `cairn worker` holding the shard) publishes, scans newer vectors exactly,
   * and picks up new generations and vectors on {@link VectorIndexManager.refresh}. Exactly one writer
   * per namespace may run at a time. @defaultValue 'writer'
   */
  role?: 'writer' | 'reader';
  hnsw?: Partial<HnswParams>;
  /**
   * Native threads one build or merge inserts with. Builds run on the builder: the compute pool, whose
   * threads run below the serving thread's priority where the pool can lower it (Linux), and usearch's
   * insert threads inherit it, so builds take the cores the serving thread leaves idle. With one thread a
   * 100k graph held one core for about a minute while the other idled (bench/RESULTS.md, "Graph builds on
   * every core"). A background job's batch of neighbour searches in a graph file (the consolidation's
   * near-duplicate pass) runs on as many. @defaultValue os.availableParallelism()
   */
  buildThreads?: number;
  log?: LogFn;
}

/** The options with every default filled in. */
export type ResolvedVectorIndexOptions = Required<Omit<VectorIndexOptions, 'hnsw' | 'log'>> & {
  hnsw: HnswParams;
  log: LogFn;
};

export function resolveVectorIndexOptions(opts: VectorIndexOptions): ResolvedVectorIndexOptions {
  return {
    ...withDefaults(
      {
        builder: inProcessIndexBuilder,
        exactThreshold: 5_000,
        mergeThreshold: 4_096,
        maxCatchUp: 50_000,
        loadAfterWrites: opts.mergeThreshold ?? 4_096,
        vectorCacheEntries: 8_192,
        waitForBuild: false,
        unbuiltSearch: 'build' as 'build' | 'exact',
        auditOnLoad: true,
        role: 'writer' as 'writer' | 'reader',
        buildThreads: availableParallelism(),
      },
      opts,
    ),
    dir: opts.dir,
    space: opts.space,
    embeddings: opts.embeddings,
    keys: opts.keys,
    hnsw: withDefaults(DEFAULT_HNSW_PARAMS, opts.hnsw),
    log: opts.log ?? (() => {}),
  };
}
