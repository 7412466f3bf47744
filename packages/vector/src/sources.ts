import type { SearchFilters } from '@cairn/core';

/** What the vector leg reads from the record store. @cairn/store's MemoryStore satisfies both. */
export interface EmbeddingSource {
  /**
   * Stored vectors of a namespace in the order they were written, after `afterWriteSeq`. Each vector
   * must be an own copy. Write order, not the memories' change order: an index that has read up to a
   * write_seq has read every vector committed before it, whichever order workers stored them in.
   */
  iterate(
    spaceId: string,
    namespace: string,
    afterWriteSeq?: number,
  ): Iterable<{ key: number; writeSeq: number; vector: Float32Array }>;
  /** How many of the namespace's vectors were written after `writeSeq`. */
  countWrittenAfter(spaceId: string, namespace: string, writeSeq: number): number;
  /**
   * How many of those were rewrites: vectors of memories that already had one at or before `writeSeq` (a
   * graph saved at that watermark holds them, and a load replaces them rather than adding them).
   */
  countRewrittenAfter(spaceId: string, namespace: string, writeSeq: number): number;
  /**
   * Every key of the namespace with a stored vector (what an index audit checks it holds), or only those
   * written after `afterWriteSeq`, a page at a time in write order; each page is read when asked for, so
   * the caller can yield between pages.
   */
  keyPages(spaceId: string, namespace: string, pageSize?: number, afterWriteSeq?: number): Iterable<number[]>;
  byKeys(spaceId: string, namespace: string, keys: readonly number[]): Map<number, Float32Array>;
  count(spaceId: string, namespace: string): number;
  /** `count`, stopping at `limit` (a namespace of a million vectors is counted in ~0.2 s). */
  countUpTo?(spaceId: string, namespace: string, limit: number): number;
  /**
   * The namespace's highest write_seq in the space (0 for none): it moves with every vector stored or
   * replaced, so an audit can tell that nothing was stored since it last found the index whole.
   */
  maxWriteSeq?(spaceId: string, namespace: string): number;
  /**
   * The namespace's live memories, and how many of them have a current vector in the space (kept counts:
   * one indexed read), for saying when a search's vector leg covered only part of them.
   */
  coverage?(spaceId: string, namespace: string): { live: number; current: number };
  /**
   * Where a worker thread can read the namespace's vectors itself, for a graph build that never reads them
   * on the calling thread: a module whose default export takes `args` plus `{ limit, dimensions }` (see
   * `OffThreadRead`). Null or absent: the build is given the vectors, read here.
   */
  offThreadReader?(
    spaceId: string,
    namespace: string,
  ): { module: string; args: Record<string, unknown> } | null;
  /**
   * Where a worker thread can read the keys `keyPages` gives itself, for an index audit that looks them up
   * in a graph file there: a module whose default export takes `args` and returns the keys as a
   * Float64Array. Null or absent: the audit reads them here, a page per turn.
   */
  offThreadKeyReader?(
    spaceId: string,
    namespace: string,
    afterWriteSeq?: number,
  ): { module: string; args: Record<string, unknown> } | null;
}

export interface KeyFilter {
  /** The subset of `keys` that are live memories of `namespace` passing `filters`. */
  allowedKeys(namespace: string, keys: readonly number[], filters: SearchFilters): Set<number>;
  /** Keys of live memories in `namespace` passing `filters`, at most `limit`. */
  keysMatching(namespace: string, filters: SearchFilters, limit: number): number[];
  /**
   * The estimated share of the namespace's live memories that pass `filters` (0–1), or null when it
   * cannot be estimated cheaply; sizes filtered graph searches.
   */
  passRate?(namespace: string, filters: SearchFilters): number | null;
  /**
   * For dead keys among `keys` that the consolidation job merged into a live memory of `namespace`: that
   * memory's key. A merged copy's vector is its absorber's (same text) or within the merge threshold of it,
   * so a search that meets the copy has found the absorber.
   */
  absorbersOf?(namespace: string, keys: readonly number[]): Map<number, number>;
  /** The store's highest change number (meta_seq): every write and delete of a memory takes a new one. */
  metaSeq?(): number;
  /**
   * Memories still deleted whose tombstone is in (after, through] of meta_seq, of one namespace when given.
   * With `metaSeq`, how an index hears of deletes made by any process, whether it was loaded then or not.
   */
  deletedBetween?(
    afterMetaSeq: number,
    throughMetaSeq: number,
    namespace?: string,
  ): Array<{ namespace: string; key: number }>;
}

/** Structured log lines; apps wire pino or similar. */
export type LogFn = (
  level: 'debug' | 'info' | 'warn' | 'error',
  msg: string,
  data?: Record<string, unknown>,
) => void;
