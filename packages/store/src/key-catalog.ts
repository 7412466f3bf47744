import type { ScoringFields, SearchFilters } from '@cairn/core';
import {
  type CatalogChunkReader,
  CATALOG_COLUMNS as COLUMNS,
  catalogChunkOf,
  type CatalogRow as Row,
} from './catalog-chunk.js';
import { CatalogColumns, type CompiledFilter } from './catalog-columns.js';
import { highestKey } from './highest-key.js';
import type { StatementCache } from './statement-cache.js';

/** Rows a sync applies per block when it reads them here. */
const SYNC_BLOCK = 5_000;

/** Tunables of the key catalog. */
export interface KeyCatalogOptions {
  /**
   * The catalog holds at most this many keys (about 50 bytes each, plus the ids); a store whose keys go
   * past it turns the catalog off and answers every filter from SQLite. @defaultValue 20_000_000
   */
  maxKeys: number;
  /**
   * A store with more keys than this is loaded in chunks even when nobody called `warm`: the first `sync`
   * starts the load and SQLite answers meanwhile. A one-shot `cairn search` on a million memories then
   * answers in a fraction of a second instead of reading every row first (~2.4 s). @defaultValue 100_000
   */
  loadAtOnceUpTo: number;
  /**
   * A loaded catalog more than this many changed rows behind (a bulk import by this process or another)
   * catches up in chunks, as a load does, answering from SQLite meanwhile: applying 106,000 rows at once
   * held the first search after an import for 0.27 s, and ~10× that at a million. @defaultValue 20_000
   */
  catchUpAtOnceUpTo: number;
  /**
   * Rows per chunk of a load read by a chunk reader's thread (see `useChunkReader`): ~60 ms of reading there
   * at a million memories, ~2 ms of copying here. @defaultValue 20_000
   */
  readerChunk: number;
}

export const DEFAULT_KEY_CATALOG_OPTIONS: Readonly<KeyCatalogOptions> = Object.freeze({
  maxKeys: 20_000_000,
  loadAtOnceUpTo: 100_000,
  catchUpAtOnceUpTo: 20_000,
  readerChunk: 20_000,
});

/**
 * What every search asks of each candidate, held in memory by key: its namespace, whether it is live, its
 * time and importance, and the facets filters test (kind, session, agent, tags). Each leg checks hundreds
 * of candidates per query; asking SQLite cost ~20% of a search at 100k memories, while a typed-array read
 * costs nanoseconds, and it lets a filter be tested against every lexical match instead of a few winners.
 *
 * The columns themselves are `CatalogColumns`; this class keeps them current and says when they serve.
 *
 * Freshness: each writer statement stamps the rows it changes with a new `meta_seq` (inserts, rewrites,
 * metadata updates, supersession, deletion), so every call first compares the store's highest stamp with
 * the one seen (an indexed max) and reads just the rows stamped since. Answers therefore always reflect
 * every committed write, from this connection or another process.
 */
export class KeyCatalog {
  private readonly opts: KeyCatalogOptions;
  private readonly columns = new CatalogColumns();
  /** Highest `meta_seq` applied; -1 before the first load. */
  private seq = -1;
  private off = false;
  /**
   * A load (see `warm`) or a catch-up in progress: where the next chunk starts (a key for a load; a
   * (meta_seq, key) pair for a catch-up, so a chunk boundary stays exact even where rows share a stamp);
   * SQLite answers until it is done.
   */
  private loading: {
    kind: 'load' | 'catch-up';
    head: number;
    after: number;
    afterStamp: number;
    chunk: number;
    done: Promise<void>;
    /** Chunks come from `reader` (another thread); `sync` then leaves the load to it. */
    offThread: boolean;
  } | null = null;
  private stopped = false;
  private reader: CatalogChunkReader | null = null;
  /** Rows applied from a chunk reader's thread (see `useChunkReader`). */
  rowsFromReader = 0;

  constructor(
    private readonly statements: StatementCache,
    opts: Partial<KeyCatalogOptions> = {},
  ) {
    this.opts = { ...DEFAULT_KEY_CATALOG_OPTIONS, ...opts };
  }

  /** Whether the store outgrew `maxKeys`, which turned the catalog off for good. */
  get outgrown(): boolean {
    return this.off;
  }

  /**
   * Whether the catalog serves (false once the store outgrew `maxKeys`, and while `warm` is loading it);
   * brings it up to date first. Without `warm`, the first call loads every row at once (~0.4 s per 100k
   * memories on a small machine: the rows are read whole).
   */
  sync(): boolean {
    if (this.loading) {
      if (!this.loading.offThread) this.step();
      if (this.loading) return false;
    }
    if (this.off) return false;
    const head =
      (this.statements.get('SELECT max(meta_seq) FROM memories').pluck().get() as number | null) ?? 0;
    if (head === this.seq) return true;
    if (this.seq < 0 && !this.stopped && highestKey(this.statements) > this.opts.loadAtOnceUpTo) {
      // Large: load in chunks (each later sync also loads one), answering from SQLite until done.
      void this.warm();
      return false;
    }
    if (!this.fits()) return false;
    if (this.seq >= 0 && !this.stopped && this.behindBy(this.opts.catchUpAtOnceUpTo + 1)) {
      // Chunks no larger than what is applied at once.
      this.start('catch-up', head, Math.min(5_000, this.opts.catchUpAtOnceUpTo));
      return false;
    }
    const rows =
      this.seq < 0
        ? this.statements.get(`SELECT ${COLUMNS} FROM memories`).raw().iterate()
        : this.statements.get(`SELECT ${COLUMNS} FROM memories WHERE meta_seq > ?`).raw().iterate(this.seq);
    // Streamed in blocks: a load at once reads up to `loadAtOnceUpTo` rows.
    const block: Row[] = [];
    for (const r of rows as Iterable<Row>) {
      block.push(r);
      if (block.length === SYNC_BLOCK) {
        this.columns.apply(catalogChunkOf(block));
        block.length = 0;
      }
    }
    this.columns.apply(catalogChunkOf(block));
    this.seq = head;
    return true;
  }

  /**
   * Loads the catalog in chunks of keys, yielding to the event loop between them, so a serving process
   * does not stall its first searches; they are answered from SQLite meanwhile. Each `sync` during the
   * load also loads one chunk, so a caller that never yields to the event loop (searches awaited back to
   * back) still sees it finish. Rows changed during the load carry a `meta_seq` above the one read first,
   * so the first `sync` after it applies them.
   */
  warm(chunk = 5_000): Promise<void> {
    if (this.loading) return this.loading.done;
    if (this.seq >= 0 || this.off) return Promise.resolve();
    const head =
      (this.statements.get('SELECT max(meta_seq) FROM memories').pluck().get() as number | null) ?? 0;
    if (!this.fits()) return Promise.resolve();
    return this.start('load', head, chunk);
  }

  /**
   * Has a load read its rows on another thread (a worker with its own read connection; see
   * `catalog-chunk-task.ts`), the serving thread only copying each chunk's columns into the arrays: at a
   * million memories the rows cost ~3 s to read, which in chunks here held each search of a new server's
   * first seconds for tens of milliseconds. Null: loads read here.
   */
  useChunkReader(reader: CatalogChunkReader | null): void {
    this.reader = reader;
  }

  /**
   * Starts a load or a catch-up. Here, a chunk per event-loop turn (and one per `sync`); a load with a chunk
   * reader, a chunk per answer from its thread, going on here from where it got if the reader fails.
   */
  private start(kind: 'load' | 'catch-up', head: number, chunk: number): Promise<void> {
    const reader = kind === 'load' ? this.reader : null;
    const load = {
      kind,
      head,
      after: 0,
      afterStamp: this.seq,
      chunk: reader ? this.opts.readerChunk : chunk,
      done: Promise.resolve(),
      offThread: reader !== null,
    };
    this.loading = load;
    load.done = (async () => {
      while (load.offThread && this.loading === load && !this.stopped) {
        // A reader taken back (its pool closing) is asked nothing more: the rest is read here.
        if (this.reader !== reader) {
          load.offThread = false;
          load.chunk = chunk;
          break;
        }
        try {
          const rows = await reader!({ afterKey: load.after, limit: load.chunk });
          if (this.loading !== load || this.stopped) return;
          this.columns.apply(rows);
          this.rowsFromReader += rows.keys.length;
          this.advance(load, rows.keys.length, rows.keys.at(-1), rows.stamp.at(-1));
        } catch {
          // A thread that failed (gone, the file replaced): the rest is read here, as without a reader.
          load.offThread = false;
          load.chunk = chunk;
        }
      }
      while (this.loading === load && !this.stopped) {
        this.step();
        await new Promise((r) => setImmediate(r));
      }
    })();
    return load.done;
  }

  /** Applies the next chunk of a load or catch-up in progress; the last one makes the catalog serve. */
  private step(): void {
    const load = this.loading;
    if (!load || this.stopped) return;
    const rows = (
      load.kind === 'load'
        ? this.statements
            .get(`SELECT ${COLUMNS} FROM memories WHERE key > ? ORDER BY key LIMIT ?`)
            .raw()
            .all(load.after, load.chunk)
        : this.statements
            .get(
              `SELECT ${COLUMNS} FROM memories WHERE (meta_seq, key) > (?, ?) ORDER BY meta_seq, key LIMIT ?`,
            )
            .raw()
            .all(load.afterStamp, load.after, load.chunk)
    ) as Row[];
    if (load.kind === 'catch-up' && !this.fits()) {
      this.loading = null;
      return;
    }
    this.columns.apply(catalogChunkOf(rows));
    const last = rows.at(-1);
    this.advance(load, rows.length, last?.[0], last?.[14]);
  }

  /** Moves a load or catch-up past a chunk of `n` rows ending at (`lastKey`, `lastStamp`); a short one ends it. */
  private advance(
    load: NonNullable<KeyCatalog['loading']>,
    n: number,
    lastKey: number | undefined,
    lastStamp: number | undefined,
  ): void {
    if (n < load.chunk) {
      // A load read every row there was at its start, and each change since carries a later meta_seq; a
      // catch-up read up to the newest stamp there is (writes meanwhile stamp above it).
      this.seq = load.kind === 'load' ? load.head : Math.max(load.afterStamp, lastStamp ?? 0);
      this.loading = null;
    } else {
      load.after = lastKey!;
      load.afterStamp = lastStamp!;
    }
  }

  /** Whether more than `n` rows changed since the catalog last applied a change (an index range, stopped at n). */
  private behindBy(n: number): boolean {
    return (
      (this.statements
        .get('SELECT count(*) FROM (SELECT 1 FROM memories WHERE meta_seq > ? LIMIT ?)')
        .pluck()
        .get(this.seq, n) as number) >= n
    );
  }

  /** Stops a background load (the store is closing). */
  stop(): void {
    this.stopped = true;
  }

  /**
   * Sizes the arrays for the store's highest key (before a first load, with an eighth more for the keys
   * written next); false (and off for good) past `maxKeys`. Sized exactly, the first write after a load grew
   * every array at once: at a million keys that held a new server's thread ~0.3 s (a CPU profile under
   * writes).
   */
  private fits(): boolean {
    const maxKey = highestKey(this.statements);
    if (maxKey > this.opts.maxKeys) {
      this.off = true;
      this.columns.clear();
      return false;
    }
    this.columns.ensure(this.seq < 0 ? maxKey + Math.ceil(maxKey / 8) : maxKey);
    return true;
  }

  /** The highest `meta_seq` applied, as of the last `sync` that returned true. */
  get seenStamp(): number {
    return this.seq;
  }

  /** The subset of `keys` that are live memories of `namespace` passing `filters`; null when off. */
  allowed(namespace: string, keys: readonly number[], filters: SearchFilters): Set<number> | null {
    if (!this.sync()) return null;
    return this.columns.allowed(namespace, keys, filters);
  }

  /** As `allowed`, without bringing the catalog up to date first (the caller just did). */
  allowedAsOfLastSync(namespace: string, keys: readonly number[], filters: SearchFilters): Set<number> {
    return this.columns.allowed(namespace, keys, filters);
  }

  /** The filter in the catalog's numbers; null when nothing can pass (a namespace or value never seen). */
  compile(namespace: string, filters: SearchFilters): CompiledFilter | null {
    return this.columns.compile(namespace, filters);
  }

  /** Whether the memory stored under `key` is live, of the filter's namespace, and passes it. */
  passes(key: number, f: CompiledFilter): boolean {
    return this.columns.passes(key, f);
  }

  /** The `meta_seq` the row had when the catalog last read it (call after `sync`). */
  stampOf(key: number): number {
    return this.columns.stampOf(key);
  }

  /**
   * The share of the namespace's live memories passing `filters` (see `CatalogColumns.passRate`); null when
   * the catalog is off or the namespace too small among others to tell.
   */
  passRate(namespace: string, filters: SearchFilters, probes = 4_096): number | null {
    if (!this.sync()) return null;
    return this.columns.passRate(namespace, filters, probes);
  }

  /**
   * What tells each key's session and whether it is a live memory of `namespace`, as arrays read in place
   * (see `CatalogColumns.sessionArrays`). Valid until the next `sync`; null when off.
   */
  sessionArrays(namespace: string): { live: Int32Array; member: number; sessions: Int32Array } | null {
    return this.off ? null : this.columns.sessionArrays(namespace);
  }
  /**
   * A test of whether a key is a live memory of `namespace`, as of the last `sync`; 'loading' during a load
   * or a catch-up, null when the catalog does not serve otherwise (off, or never loaded). It does not sync
   * itself: during a load on this thread every `sync` also loads a chunk, and this is asked once per word
   * of a query.
   */
  membersAsOfLastSync(namespace: string): ((key: number) => boolean) | 'loading' | null {
    if (this.off) return null;
    if (this.loading) return 'loading';
    if (this.seq < 0) return null;
    return this.columns.membersOf(namespace);
  }

  /** Scoring fields of the live memories of `namespace` among `keys`; null when off. */
  scoring(namespace: string, keys: readonly number[]): Map<number, ScoringFields> | null {
    if (!this.sync()) return null;
    return this.columns.scoring(namespace, keys);
  }
}
