import type { EmbeddingSpace } from '@cairn/core';
import type { OffThreadRead } from './hnsw-params.js';
import { type GraphState, holds, type NamespaceState } from './namespace-state.js';
import type { EmbeddingSource, LogFn } from './sources.js';

/** Keys an audit reads and checks against the index per event-loop turn (a few ms at a million). */
export const AUDIT_PAGE = 5_000;

/**
 * An index found whole is checked in full again only once this long has passed (a full check of a million
 * vectors costs a pool thread about a second, or the serving thread as much where no pool reads the keys);
 * meanwhile, while its fingerprint holds (see `auditFingerprint`) it is not checked at all, and after new
 * writes only the keys written since.
 */
export const AUDIT_RECHECK_MS = 600_000;

/**
 * What an audit of `state` depends on: the vectors stored for its namespace (`storedThrough`, their highest
 * write_seq, which moves with every vector stored or replaced) and what the index has applied (generation,
 * sizes, watermark). Two audits with the same fingerprint give the same answer. Null when the store cannot
 * say what it holds.
 */
export function auditFingerprint(state: NamespaceState, storedThrough: number | undefined): string | null {
  if (storedThrough === undefined) return null;
  return state.kind === 'exact'
    ? `exact ${state.matrix.size} ${state.watermark} ${storedThrough}`
    : `hnsw ${state.generation} ${state.graphSize} ${state.delta.size} ${state.watermark} ${storedThrough}`;
}

/**
 * What a check of only the keys written since depends on: the graph file (or the exact matrix) the last
 * whole check saw. A merge maps a new file, which is checked in full.
 */
function auditBase(state: NamespaceState): string {
  return state.kind === 'exact' ? 'exact' : `hnsw ${state.generation} ${state.graphSize}`;
}

/**
 * The keys among `stored` (every key with a stored vector, a page at a time: see AUDIT_PAGE) that `state`
 * holds no vector for: a graph file saved by a version that dropped vectors stored out of change order, or
 * any other hole. A page of keys per event-loop turn, each checked against the graph in one native call:
 * at 100k keys, one `contains` call per key blocked the serving thread for ~230 ms; batched, ~30 ms in all.
 *
 * With `inFile`, a graph's keys are looked up elsewhere (a worker thread, in the graph's file) once
 * every page is read: this thread only reads the pages, and checks the few keys the file lacks.
 *
 * Returns null when `isCurrent` says the state was forgotten or replaced meanwhile (released, reloaded):
 * whatever holds the namespace now is audited later. Keys applied meanwhile by the pipeline are not
 * reported.
 */
export async function findMissingVectors(
  state: NamespaceState,
  stored: Iterable<number[]>,
  isCurrent: () => boolean,
  inFile?: (keys: Float64Array) => Promise<number[]>,
): Promise<number[] | null> {
  const missing = new Set<number>();
  const pages = stored[Symbol.iterator]();
  const elsewhere: number[] = [];
  for (;;) {
    // Checked before each page is read: a closed store must not be read.
    if (!isCurrent()) return null;
    const next = pages.next();
    if (next.done) break;
    const chunk = next.value;
    if (inFile && state.kind === 'hnsw') {
      for (const k of chunk) elsewhere.push(k);
    } else if (state.kind === 'exact') {
      for (const k of chunk) if (!state.matrix.has(k)) missing.add(k);
    } else {
      const inGraph = state.graph.contains(BigUint64Array.from(chunk, (k) => BigInt(k))) as boolean[];
      chunk.forEach((k, j) => {
        if (!inGraph[j] && !state.delta.has(k)) missing.add(k);
      });
    }
    await new Promise((r) => setImmediate(r));
  }
  if (inFile && state.kind === 'hnsw' && elsewhere.length > 0) {
    const notInFile = await inFile(Float64Array.from(elsewhere));
    if (!isCurrent()) return null;
    // The file is the graph the state mapped; a key the file lacks may be in the delta, or in a graph a
    // merge mapped meanwhile.
    for (const k of notInFile) missing.add(k);
  }
  if (!isCurrent()) return null;
  return [...missing].filter((k) => !holds(state, k));
}

/**
 * `findMissingVectors` with the keys read and looked up elsewhere (`lookUp`: a worker thread reading them
 * from the store itself): this thread only checks the few the file lacks against the delta.
 */
async function missingOffThread(
  state: NamespaceState,
  isCurrent: () => boolean,
  lookUp: () => Promise<number[]>,
): Promise<number[] | null> {
  const notInFile = await lookUp();
  if (!isCurrent()) return null;
  // A key re-embedded while the thread read the pages may come twice.
  return [...new Set(notInFile)].filter((k) => !holds(state, k));
}

/** Vectors an audit reads from SQLite per query when it adds the ones an index lacks. */
const AUDIT_CHUNK = 1_000;

/**
 * Audits the loaded indexes of one embedding space against SQLite: finds the stored vectors an index
 * lacks (`findMissingVectors`) and adds them. It remembers each state it found whole by its fingerprint,
 * so an unchanged index is not read again until AUDIT_RECHECK_MS has passed.
 */
export class IndexAuditor {
  /**
   * Each loaded state's fingerprint (see `auditFingerprint`) and base (`auditBase`) when an audit last
   * found it whole, the highest write_seq stored then, and when it was last checked in full.
   */
  private readonly audited = new WeakMap<
    NamespaceState,
    { fingerprint: string; base: string; storedThrough: number; fullAt: number }
  >();
  /**
   * Set when a look-up that read its own keys failed: later audits read the keys here and still look them
   * up on the pool, as before the store could say where a thread reads them, instead of failing and
   * falling back to this thread, with a warning, every time.
   */
  private keyReaderFailed = false;

  constructor(
    private readonly deps: {
      space: EmbeddingSpace;
      embeddings: EmbeddingSource;
      /** What the namespace's index holds now (undefined: not loaded). */
      current: (namespace: string) => NamespaceState | undefined;
      /** Adds a lacking vector to `state`, at its current watermark. */
      add: (state: NamespaceState, key: number, vector: Float32Array) => void;
      /**
       * Looks keys up in the file of a graph state's generation off this thread, returning those it
       * lacks (see `IndexBuilder.keysMissingFromFile`); absent: looked up in the mapped graph here.
       */
      inFile?: (
        namespace: string,
        state: GraphState,
        keys: Float64Array | OffThreadRead,
      ) => Promise<number[]>;
      /** Told after an audit added vectors to the namespace's index. */
      added?: (namespace: string) => void;
      log: LogFn;
    },
  ) {}

  /** `audit` in the background: a failure is logged (the store may have closed; the periodic audit retries). */
  auditSoon(namespace: string): void {
    this.audit(namespace).catch((err: Error) => {
      this.deps.log('warn', 'vector index audit failed', { namespace, error: err.message });
    });
  }

  /** Audits `namespace`'s loaded index and adds what it lacks; returns how many vectors were added. */
  async audit(namespace: string): Promise<number> {
    const { space, embeddings } = this.deps;
    const ready = this.deps.current(namespace);
    if (!ready) return 0;
    // Nothing stored and nothing applied since the index was last found whole: the same check would read
    // every key again (about a second of a thread every 30 s at a million) to the same answer.
    // A full check still runs every AUDIT_RECHECK_MS, for damage no write_seq records.
    const storedThrough = embeddings.maxWriteSeq?.(space.id, namespace);
    const seen = auditFingerprint(ready, storedThrough);
    const last = this.audited.get(ready);
    const base = auditBase(ready);
    const recent = last !== undefined && Date.now() - last.fullAt < AUDIT_RECHECK_MS;
    if (seen !== null && recent && last.fingerprint === seen) return 0;
    // Writes since a whole check of the same graph file: a vector stored (or replaced) since has a
    // write_seq above the one stored then, so only those keys are read, not a million.
    const since = recent && last.base === base ? last.storedThrough : -1;
    const startedAt = Date.now();
    const isCurrent = () => this.deps.current(namespace) === ready;
    const pages = () => embeddings.keyPages(space.id, namespace, AUDIT_PAGE, since);
    // The keys written since a whole check are a page or less under a server's steady writes (~300 in 30 s
    // at 10 writes/s; a merge's new file gets a whole check): looked up in the graph this thread has
    // mapped, one native call, rather than on the pool, which maps the whole file for them (0.2–0.4 s of a
    // pool thread at a million vectors, every 30 s).
    const few = since >= 0 && embeddings.countWrittenAfter(space.id, namespace, since) <= AUDIT_PAGE;
    const inFile = few ? undefined : this.deps.inFile;
    const lookUp =
      inFile && ready.kind === 'hnsw'
        ? (keys: Float64Array | OffThreadRead) => inFile(namespace, ready, keys)
        : undefined;
    // Where the store says how, a graph's keys are read where they are looked up: this thread reads none.
    const reader =
      lookUp && !this.keyReaderFailed ? embeddings.offThreadKeyReader?.(space.id, namespace, since) : null;
    let lacking: number[] | null;
    try {
      lacking =
        reader && lookUp
          ? await missingOffThread(ready, isCurrent, () => lookUp(reader))
          : await findMissingVectors(ready, pages(), isCurrent, lookUp);
    } catch (err) {
      // Let go of meanwhile (a close, a release, a reload): its file may be gone, as `findMissingVectors`
      // would have returned null had the failure not come first; what holds the namespace now is audited.
      if (!isCurrent()) return 0;
      if (!inFile) throw err;
      // A merge mapped a new file meanwhile (the old one may be gone): the next audit checks the new one.
      if (ready.kind === 'hnsw' && auditBase(ready) !== base) return 0;
      // A look-up that failed off the thread (the pool closing, a thread that could not start, a reader
      // that could not open the file): here.
      this.deps.log('warn', 'index audit look-up failed off the serving thread; checking here', {
        namespace,
        error: (err as Error).message,
      });
      if (reader) this.keyReaderFailed = true;
      lacking = await findMissingVectors(ready, pages(), isCurrent);
    }
    if (lacking && lacking.length === 0 && seen !== null && storedThrough !== undefined)
      this.audited.set(ready, {
        fingerprint: seen,
        base,
        storedThrough,
        fullAt: since < 0 ? startedAt : last!.fullAt,
      });
    if (!lacking || lacking.length === 0) return 0;
    // What is added, not what was found lacking: a memory deleted since its key was read has no vector
    // left to add.
    let added = 0;
    for (let i = 0; i < lacking.length; i += AUDIT_CHUNK) {
      const chunk = lacking.slice(i, i + AUDIT_CHUNK);
      // At the current watermark: these are older writes, and the watermark must not move past any
      // vector not yet read.
      for (const [key, v] of embeddings.byKeys(space.id, namespace, chunk)) {
        this.deps.add(ready, key, v);
        added++;
      }
    }
    if (added === 0) return 0;
    this.deps.log('warn', 'vector index lacked stored vectors; added them', {
      namespace,
      space: space.id,
      added,
    });
    this.deps.added?.(namespace);
    return added;
  }
}
