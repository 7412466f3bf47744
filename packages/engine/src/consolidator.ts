import { setImmediate as yieldTurn } from 'node:timers/promises';
import { CairnError, type EmbeddingSpace, type KeyedMemory, type VectorLegResult } from '@cairn/core';
import type { MemoryStore, MergePair, MergeRecord } from '@cairn/store';
import { saysTheSameWords } from './word-change.js';

/**
 * The longest the job runs between two turns of the event loop. It shares its thread with searches (the
 * embedded writer) or with a worker's stages: checking a batch of 500 in one go held a worker's thread
 * ~200 ms at a time through the catch-up after a 100k ingest, and writes waited up to 19 s for capture.
 */
const TURN_MS = 8;

/** Yields to the event loop once TURN_MS has passed since the last yield. */
class Turns {
  private since = performance.now();

  async maybeYield(): Promise<void> {
    if (performance.now() - this.since < TURN_MS) return;
    await yieldTurn();
    this.since = performance.now();
  }
}

/** The consolidation job's settings. */
export interface ConsolidationOptions {
  /** Two memories of one namespace and kind are near-duplicates at this cosine or above. @defaultValue 0.95 */
  threshold: number;
  /** Nearest neighbours asked of the vector index for each new memory. @defaultValue 8 */
  neighbors: number;
  /** New vectors looked at per step; the job yields to the event loop between steps. @defaultValue 500 */
  batchSize: number;
  /**
   * Kinds never merged: a fact is upserted by its slot and key, so two facts with similar words are two
   * facts. @defaultValue ['fact']
   */
  skipKinds: readonly string[];
  /** How often the writer runs the job (ms); 0 runs it only when asked. @defaultValue 300_000 (5 minutes) */
  intervalMs: number;
  /**
   * A pair close by cosine (not the same text) is merged only if its texts say the same words in the same
   * order, give or take this share of the longer one's words (inserted, deleted or replaced), and as many
   * negations: a cosine does not see word order (with the built-in hashing embedder, "copied production into
   * staging" and "copied staging into production" are at cosine 1) and barely sees a "not". 1 turns the
   * check off. @defaultValue 0.1
   */
  maxWordChange: number;
}

export const DEFAULT_CONSOLIDATION_OPTIONS: Readonly<ConsolidationOptions> = Object.freeze({
  threshold: 0.95,
  neighbors: 8,
  batchSize: 500,
  skipKinds: Object.freeze(['fact']),
  intervalMs: 300_000,
  maxWordChange: 0.1,
});

/** What one run did (or, dry, would do). */
export interface ConsolidationReport {
  dryRun: boolean;
  /** New vectors looked at. */
  scanned: number;
  /** Memories merged into a newer near-duplicate: same text (`exact`) or by cosine (`near`). */
  merged: number;
  exact: number;
  near: number;
  /** Merges per namespace. */
  byNamespace: Record<string, number>;
  /** The first 100 merges. */
  merges: MergeRecord[];
  /** Set when the job could not run (no vector leg). */
  skipped?: string;
  tookMs: number;
}

/** What the job needs of the vector leg: neighbours, and the stored vectors to verify them exactly. */
export interface NeighborIndex {
  readonly space: EmbeddingSpace;
  searchVector(req: {
    namespace: string;
    vector: Float32Array;
    filters: Record<string, never>;
    limit: number;
  }): Promise<VectorLegResult>;
  /**
   * Many vectors' nearest live keys at once, a graph searched where builds run (the compute pool), an
   * exact namespace scanned in i8; null, as a whole or for one vector, where it cannot be (a graph without
   * a pool, a batch of a few, dead copies crowding an answer): then `searchVector`, one memory at a time.
   */
  nearestOffThread?(
    namespace: string,
    vectors: readonly Float32Array[],
    k: number,
  ): Promise<Array<Array<{ key: number; cosine: number }> | null> | null>;
  vectorsFor(
    namespace: string,
    keys: readonly number[],
    opts?: { keep?: boolean },
  ): Map<number, Float32Array>;
}

const MAX_LISTED = 100;
/** ANN cosines are approximate: neighbours this far below the threshold are still verified exactly. */
const ANN_SLACK = 0.02;

function cosine(a: Float32Array, b: Float32Array): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i]! * b[i]!;
    na += a[i]! * a[i]!;
    nb += b[i]! * b[i]!;
  }
  return na === 0 || nb === 0 ? 0 : dot / Math.sqrt(na * nb);
}

/**
 * What two duplicates must share besides their words to be one memory: their agent (two agents saying the
 * same thing are two sources, each attributed), their session, their tags and their validity window (so
 * that no filter, `sessions`, `tags` or `asOf`, finds one and not the other: a copy in session A merged
 * into session B's was lost to a search of session A). A storm spread over sessions keeps a copy per
 * session, and near-duplicate suppression still keeps it to one copy per page.
 */
function identityOf(m: {
  agent: string | null;
  session: string | null;
  tags: readonly string[];
  validFrom: number | null;
  validTo: number | null;
}): string {
  return JSON.stringify([m.agent, m.session, [...m.tags].sort(), m.validFrom, m.validTo]);
}

/** The newer of two memories: later ts, then the later write (higher key). */
function isNewer(a: Pick<KeyedMemory, 'ts' | 'key'>, b: Pick<KeyedMemory, 'ts' | 'key'>): boolean {
  return a.ts !== b.ts ? a.ts > b.ts : a.key > b.key;
}

/**
 * Marks near-duplicates as superseded by the newer memory (siftcoder's 5-minute supersede pass, without
 * deleting anything). Incremental: it looks only at vectors written since its cursor, so a run costs what
 * was written since the last one.
 * - Same text (same content hash): the group's newest memory absorbs the rest, found through the
 *   embeddings' content-hash index. A dup storm of thousands of copies costs one group read.
 * - Similar text: each new memory's nearest neighbours in the vector index (never all pairs), verified
 *   exactly on the stored vectors at `threshold`, same namespace and kind.
 * Both only between memories of one agent and session, with the same tags and validity window (see
 * identityOf).
 * Undo (`ConsolidationStore.undo`) brings a memory back for good: the job never merges it again.
 */
export class Consolidator {
  private running: Promise<ConsolidationReport> | null = null;
  private stopped = false;

  /**
   * @param indexed Awaited before each batch is read: resolves once every vector stored so far is in the
   * index the neighbours are searched in. A vector stored on another connection (the embed lane, a
   * writer seen by a follower) and not yet added would be read as new and searched for in an index
   * without it and its near copies, and the cursor would pass it for good.
   */
  constructor(
    private readonly store: MemoryStore,
    private readonly index: () => NeighborIndex | null,
    readonly opts: ConsolidationOptions = DEFAULT_CONSOLIDATION_OPTIONS,
    private readonly indexed: () => Promise<void> | void = () => {},
  ) {
    if (!(opts.threshold > 0 && opts.threshold <= 1))
      throw new CairnError('INVALID_INPUT', 'consolidation threshold must be in (0, 1]', {
        field: 'threshold',
      });
    if (!(opts.maxWordChange >= 0 && opts.maxWordChange <= 1))
      throw new CairnError('INVALID_INPUT', 'consolidation maxWordChange must be in [0, 1]', {
        field: 'maxWordChange',
      });
    for (const field of ['batchSize', 'neighbors'] as const)
      if (!(Number.isInteger(opts[field]) && opts[field] >= 1))
        throw new CairnError('INVALID_INPUT', `consolidation ${field} must be an integer >= 1`, { field });
  }

  /**
   * One pass over what was written since the cursor. `dryRun` reports without merging or moving the
   * cursor; `namespace` looks at that namespace only (and leaves the shared cursor where it is). Runs never
   * overlap: a call during a run waits for it and starts its own.
   */
  async run(req: { dryRun?: boolean; namespace?: string } = {}): Promise<ConsolidationReport> {
    while (this.running) await this.running.catch(() => undefined);
    const run = this.pass(req.dryRun ?? false, req.namespace);
    this.running = run;
    try {
      return await run;
    } finally {
      if (this.running === run) this.running = null;
    }
  }

  /**
   * Stops between batches (each batch's merges are one transaction, and the cursor moves after them) and
   * resolves once the run in flight has ended; later runs do nothing. For the owner's close, before the
   * store and the vector indexes go away.
   */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.running?.catch(() => undefined);
  }

  private async pass(dryRun: boolean, namespace: string | undefined): Promise<ConsolidationReport> {
    const t0 = performance.now();
    const report: ConsolidationReport = {
      dryRun,
      scanned: 0,
      merged: 0,
      exact: 0,
      near: 0,
      byNamespace: {},
      merges: [],
      tookMs: 0,
    };
    const index = this.index();
    if (!index) {
      report.skipped = 'no vector leg: the data folder runs lexical-only';
      return report;
    }
    const space = index.space;
    const records = this.store.consolidations;
    const moveCursor = !dryRun && namespace === undefined;
    let after = records.cursor(space.id);
    // A dry run sees what a real run would: nothing it "merged" is live-checked again, so remember them.
    const gone = new Set<number>();
    const turns = new Turns();
    for (;;) {
      if (this.stopped) {
        report.skipped = 'stopped: the process is closing';
        break;
      }
      await this.indexed();
      // Read before anything of the batch is verified: merge() skips what changes after (see stamps()).
      const stamps = records.stamps();
      const { candidates, upTo } = records.newVectors(
        space.id,
        after,
        this.opts.batchSize,
        this.opts.skipKinds,
        namespace,
      );
      if (upTo === after) break;
      report.scanned += candidates.length;
      const exact = await this.exactPairs(space.id, after, upTo, namespace, gone, turns);
      const { pairs: near, unavailable } = await this.nearPairs(index, candidates, gone, turns);
      const pairs = [...exact, ...near];
      const applied = dryRun
        ? pairs.map((p) => p.record)
        : records.merge(
            pairs.map((p) => p.pair),
            Date.now(),
            stamps,
          );
      const exactKeys = new Set(exact.map((p) => p.pair.key));
      const appliedIds = new Set(applied.map((r) => `${r.namespace}\u0000${r.id}`));
      for (const p of pairs) {
        if (!appliedIds.has(`${p.record.namespace}\u0000${p.record.id}`)) continue;
        if (exactKeys.has(p.pair.key)) report.exact++;
        else report.near++;
      }
      report.merged += applied.length;
      for (const r of applied) {
        // Own properties only: a namespace named `constructor` counts like any other.
        const before = Object.hasOwn(report.byNamespace, r.namespace) ? report.byNamespace[r.namespace]! : 0;
        report.byNamespace[r.namespace] = before + 1;
        if (report.merges.length < MAX_LISTED) report.merges.push(r);
      }
      if (unavailable) {
        // A namespace's index could not answer (being built): stop before its first unchecked memory, so
        // the next run checks it rather than the cursor passing it by for good.
        if (moveCursor) records.setCursor(space.id, unavailable.writeSeq - 1);
        report.skipped = `stopped early: the vector index of ${unavailable.namespace} is not ready (${unavailable.reason}); the next run goes on from there`;
        break;
      }
      if (moveCursor) records.setCursor(space.id, upTo);
      after = upTo;
      // A long catch-up (a bulk ingest's worth) must not hold the serving thread.
      await yieldTurn();
    }
    report.tookMs = Math.round(performance.now() - t0);
    return report;
  }

  /** Same-text groups touched by the vectors in (after, upTo]: the newest absorbs the others. */
  private async exactPairs(
    spaceId: string,
    after: number,
    upTo: number,
    namespace: string | undefined,
    gone: Set<number>,
    turns: Turns,
  ): Promise<Array<{ pair: MergePair; record: MergeRecord }>> {
    const records = this.store.consolidations;
    const skip = new Set(this.opts.skipKinds);
    const out: Array<{ pair: MergePair; record: MergeRecord }> = [];
    for (const t of records.textsWritten(spaceId, after, upTo, namespace)) {
      await turns.maybeYield();
      const group = records
        .sameText(spaceId, t.namespace, t.contentHash)
        .filter((m) => !gone.has(m.key) && !skip.has(m.kind));
      if (group.length < 2) continue;
      const restored = records.restored(group.map((m) => m.key));
      // Per identity (agent, session, tags, validity; see identityOf): the newest of each absorbs the rest.
      const newestOf = new Map<string, (typeof group)[number]>();
      for (const m of group) {
        const id = identityOf({ ...m, tags: JSON.parse(m.tags) as string[] });
        const newest = newestOf.get(id);
        if (!newest) {
          newestOf.set(id, m);
          continue;
        }
        if (restored.has(m.key)) continue;
        gone.add(m.key);
        out.push({
          pair: { key: m.key, byKey: newest.key, cosine: 1 },
          record: record(t.namespace, m.id, newest.id, 1),
        });
      }
    }
    return out;
  }

  /** Each new memory against its nearest neighbours, verified exactly on the stored vectors. */
  private async nearPairs(
    index: NeighborIndex,
    candidates: ReadonlyArray<{ key: number; namespace: string; writeSeq: number; vector: Float32Array }>,
    gone: Set<number>,
    turns: Turns,
  ): Promise<{
    pairs: Array<{ pair: MergePair; record: MergeRecord }>;
    unavailable?: { namespace: string; writeSeq: number; reason: string };
  }> {
    const out: Array<{ pair: MergePair; record: MergeRecord }> = [];
    const { threshold, neighbors } = this.opts;
    const skip = new Set(this.opts.skipKinds);
    const found = await this.neighborsOffThread(index, candidates, neighbors + 1);
    for (const c of candidates) {
      if (gone.has(c.key)) continue;
      await turns.maybeYield();
      let neighborsOfC = found.get(c.key);
      if (!neighborsOfC) {
        const res = await index.searchVector({
          namespace: c.namespace,
          vector: c.vector,
          filters: {},
          limit: neighbors + 1,
        });
        if (res.status !== 'ok')
          return {
            pairs: out,
            unavailable: { namespace: c.namespace, writeSeq: c.writeSeq, reason: res.reason },
          };
        neighborsOfC = res.candidates;
      }
      const close = neighborsOfC
        .filter((n) => n.key !== c.key && !gone.has(n.key) && n.cosine >= threshold - ANN_SLACK)
        .map((n) => n.key);
      if (close.length === 0) continue;
      // Background reads of near neighbours: kept out of the search's vector cache.
      const stored = index.vectorsFor(c.namespace, close, { keep: false });
      const verified = close
        .map((key) => ({ key, cosine: stored.has(key) ? cosine(c.vector, stored.get(key)!) : -1 }))
        .filter((n) => n.cosine >= threshold);
      if (verified.length === 0) continue;
      const live = this.store.liveByKeys(c.namespace, [c.key, ...verified.map((n) => n.key)]);
      const self = live.get(c.key);
      if (!self) continue;
      const restored = this.store.consolidations.restored([c.key, ...verified.map((n) => n.key)]);
      for (const n of verified) {
        const other = live.get(n.key);
        if (!other || other.kind !== self.kind || skip.has(other.kind)) continue;
        if (identityOf(other) !== identityOf(self)) continue;
        if (
          this.opts.maxWordChange < 1 &&
          !saysTheSameWords(said(self), said(other), this.opts.maxWordChange)
        )
          continue;
        const [older, newer]: [KeyedMemory, KeyedMemory] = isNewer(other, self)
          ? [self, other]
          : [other, self];
        if (restored.has(older.key)) continue;
        gone.add(older.key);
        out.push({
          pair: { key: older.key, byKey: newer.key, cosine: n.cosine },
          record: record(c.namespace, older.id, newer.id, n.cosine),
        });
        // The new memory itself was the older one: it is merged, and its other neighbours wait for the
        // memory it was merged into.
        if (older === self) break;
      }
    }
    return { pairs: out };
  }

  /**
   * The batch's neighbours, namespace by namespace, a namespace's all at once when the index can: a
   * graph's searched where builds run (100k searches one by one on this thread held a distributed worker's
   * for ~16 s of native code after a bulk ingest, or took turns with the embedded writer's queries), an
   * exact namespace's scanned here in i8 (a third of the f32 scans' cost). By memory key; a memory left out
   * is searched one at a time (see nearPairs).
   */
  private async neighborsOffThread(
    index: NeighborIndex,
    candidates: ReadonlyArray<{ key: number; namespace: string; vector: Float32Array }>,
    k: number,
  ): Promise<Map<number, Array<{ key: number; cosine: number }>>> {
    const found = new Map<number, Array<{ key: number; cosine: number }>>();
    if (!index.nearestOffThread) return found;
    const byNamespace = new Map<string, Array<{ key: number; vector: Float32Array }>>();
    for (const c of candidates) {
      const group = byNamespace.get(c.namespace);
      if (group) group.push(c);
      else byNamespace.set(c.namespace, [c]);
    }
    for (const [namespace, group] of byNamespace) {
      const lists = await index.nearestOffThread(
        namespace,
        group.map((c) => c.vector),
        k,
      );
      if (!lists) continue;
      for (const [i, c] of group.entries()) if (lists[i]) found.set(c.key, lists[i]!);
    }
    return found;
  }
}

/** What a memory says, as the job compares it word by word. */
function said(m: Pick<KeyedMemory, 'title' | 'text'>): string {
  return m.title ? `${m.title}\n${m.text}` : m.text;
}

function record(namespace: string, id: string, into: string, cos: number): MergeRecord {
  return { namespace, id, into, cosine: cos, at: Date.now(), undoneAt: null };
}
