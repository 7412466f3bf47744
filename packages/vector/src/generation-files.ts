import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { readdir, rename, stat, unlink, writeFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import type { EmbeddingSpace } from '@cairn/core';
import type { Index } from 'usearch';
import {
  BYTES_PER_SCALAR,
  type HnswParams,
  type IndexBuilder,
  type IndexBuildRequest,
} from './hnsw-params.js';
import { checkIndexFile, indexFileRows } from './index-file-check.js';
import { createHnswIndex, releaseIndexSoon, viewIndexFile } from './usearch-index.js';

/** What a namespace's current graph generation is: the commit point of a build or merge. */
/** Why a namespace has no file to load when none was ever saved: a first build, not a repair. */
export const NEVER_SAVED = 'no index saved yet';

export interface Sidecar {
  format: 2;
  space: string;
  namespace: string;
  dimensions: number;
  params: HnswParams;
  generation: number;
  /** File name (in the space folder) of this generation's graph. */
  file: string;
  /** Highest embedding write_seq inside the graph file. */
  watermark: number;
  /**
   * The store's meta_seq up to which the file holds no deleted memory: keys deleted after it are dropped
   * when the file is mapped. Absent in files saved before it was recorded (read as 0: every tombstone).
   */
  metaSeq?: number;
  /** Vectors in the graph (what a search can return). */
  count: number;
  /**
   * Rows in the file's vector block: more than `count` after a merge removed keys (usearch keeps their
   * slots). Absent in files saved before it was recorded: read as `count`.
   */
  rows?: number;
  /** Size of the graph file, checked before it is mapped. */
  bytes: number;
}

/**
 * The on-disk life of one embedding space's HNSW graphs: one folder, and per namespace a series of
 * immutable generation files plus a JSON sidecar naming the current one. A generation is built on the
 * builder, then the sidecar is renamed over (atomic), so a crash at any point leaves the previous
 * generation current. Nothing here knows about deltas or searches.
 */
export class GenerationFiles {
  readonly dir: string;

  constructor(
    root: string,
    private readonly space: EmbeddingSpace,
    private readonly params: HnswParams,
    private readonly builder: IndexBuilder,
    /** Native threads a build or merge inserts with (IndexBuildRequest.threads). */
    private readonly buildThreads = 1,
  ) {
    this.dir = GenerationFiles.spaceDir(root, space.id);
    // The user's only, as the data folder is (what a graph holds is derived from every tenant's memories).
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
  }

  /** The folder of one embedding space's index files under `root` (for deleting a dropped space's files). */
  static spaceDir(root: string, spaceId: string): string {
    // A readable prefix plus a hash: `org/model` and `org_model` must not share a folder.
    const h = createHash('sha256').update(spaceId).digest('hex').slice(0, 8);
    return join(root, `${spaceId.replace(/[^A-Za-z0-9._-]/g, '_').slice(0, 60)}-${h}`);
  }

  /** The namespace's sidecar, or null when it has none usable. */
  sidecar(namespace: string): Sidecar | null {
    const s = this.readSidecar(namespace);
    return typeof s === 'string' ? null : s;
  }

  /**
   * Maps the namespace's current generation read-only (`Index.view`), after checking that the file is
   * the one its sidecar describes. Returns the mapped graph, or why it cannot be used (then rebuild).
   */
  open(namespace: string): { graph: Index; side: Sidecar } | string {
    const side = this.readSidecar(namespace);
    if (typeof side === 'string') return side;
    const path = join(this.dir, side.file);
    if (!existsSync(path)) return 'index file missing';
    if (side.dimensions !== this.space.dimensions || side.space !== this.space.id)
      return 'index file belongs to another embedding space';
    if (JSON.stringify(side.params) !== JSON.stringify(this.params)) return 'HNSW parameters changed';
    const damage = checkIndexFile(path, {
      rows: side.rows ?? side.count,
      dimensions: this.space.dimensions,
      bytes: side.bytes,
      bytesPerScalar: BYTES_PER_SCALAR[this.params.quantization],
    });
    if (damage) return damage;
    const graph = createHnswIndex(this.space.dimensions, this.params);
    try {
      viewIndexFile(graph, path);
    } catch (err) {
      return `index file unreadable (${(err as Error).message})`;
    }
    if (graph.size() !== side.count) {
      void releaseIndexSoon(graph);
      return 'index file does not match its sidecar';
    }
    return { graph, side };
  }

  /** Maps a generation just written (its sidecar is already current). */
  view(side: Sidecar): Index {
    const graph = createHnswIndex(this.space.dimensions, this.params);
    viewIndexFile(graph, join(this.dir, side.file));
    return graph;
  }

  /** Where a namespace's generation is (or would be) written. */
  pathOf(namespace: string, generation: number): string {
    return join(this.dir, this.fileName(namespace, generation));
  }

  /** The current generation's path, for a merge to start from. */
  currentPath(namespace: string): string {
    return join(this.dir, this.sidecar(namespace)?.file ?? '');
  }

  /** Builds a generation's file on the builder, then points the sidecar at it (the commit point). */
  async write(
    namespace: string,
    generation: number,
    watermark: number,
    metaSeq: number,
    data: Pick<IndexBuildRequest, 'keys' | 'vectors' | 'basePath' | 'removeKeys' | 'read' | 'added'>,
  ): Promise<Sidecar> {
    const file = this.fileName(namespace, generation);
    const path = join(this.dir, file);
    const built = await this.builder.build({
      ...data,
      dimensions: this.space.dimensions,
      params: this.params,
      path,
      threads: this.buildThreads,
    });
    // The file system's work here is off the serving thread: right after a large file is written, a
    // metadata call (a stat, a rename, an unlink) can wait on the journal for 100 ms and more.
    const [rows, stats] = await Promise.all([indexFileRows(path), stat(path)]);
    const side: Sidecar = {
      format: 2,
      space: this.space.id,
      namespace,
      dimensions: this.space.dimensions,
      params: this.params,
      generation,
      file,
      // A build that read its vectors itself says how far it read.
      watermark: built.watermark ?? watermark,
      metaSeq,
      count: built.count,
      rows,
      bytes: stats.size,
    };
    const sidePath = this.sidecarPath(namespace);
    await writeFile(`${sidePath}.tmp`, JSON.stringify(side));
    await rename(`${sidePath}.tmp`, sidePath);
    return side;
  }

  /**
   * Deletes a namespace's graph files other than the current one, off the serving thread (see `write`): older
   * generations and leftovers of a crash mid-save; with `orphans`, also a newer generation's whole file (left
   * when a lost sidecar restarted the numbering). A newer generation's temporary file is always left alone,
   * and without `orphans` its whole file too: a merge may be saving it, or committing it. Only the writer that
   * has just committed `current` (no merge of the namespace in flight) asks for `orphans`. Never fails.
   */
  async removeStale(namespace: string, current: string, orphans = false): Promise<void> {
    const stem = this.fileStem(namespace);
    const currentGeneration = generationOf(current, stem);
    if (currentGeneration === null) return;
    const names = await readdir(this.dir).catch(() => [] as string[]);
    const stale = names.filter((f) => {
      const g = generationOf(f, stem);
      if (f === current || g === null) return false;
      return g <= currentGeneration || (orphans && !f.includes('.tmp-'));
    });
    // Already gone: nothing to do.
    await Promise.all(stale.map((f) => unlink(join(this.dir, f)).catch(() => undefined)));
  }

  private fileStem(namespace: string): string {
    // Namespaces may contain '/', ':' and '@'; a readable prefix plus a hash keeps names unique and safe.
    const safe = namespace.replace(/[^A-Za-z0-9._-]/g, '_').slice(0, 60);
    const h = createHash('sha256').update(namespace).digest('hex').slice(0, 12);
    return `${safe}-${h}`;
  }

  private fileName(namespace: string, generation: number): string {
    return `${this.fileStem(namespace)}.g${generation}.usearch`;
  }

  private sidecarPath(namespace: string): string {
    return join(this.dir, `${this.fileStem(namespace)}.json`);
  }

  /** The namespace's sidecar, or why there is no usable one. */
  private readSidecar(namespace: string): Sidecar | string {
    const path = this.sidecarPath(namespace);
    if (!existsSync(path)) return NEVER_SAVED;
    try {
      const s = JSON.parse(readFileSync(path, 'utf8')) as Sidecar;
      if (s.format === 2 && s.namespace === namespace && basename(s.file) === s.file) return s;
    } catch {
      // Falls through to the reason below.
    }
    return 'sidecar missing or unreadable';
  }
}

/** The generation a graph file of `stem` holds (`stem.gN.usearch`, or its temporary `….tmp-PID`); null otherwise. */
function generationOf(file: string, stem: string): number | null {
  if (!file.startsWith(`${stem}.g`) || file.endsWith('.json')) return null;
  const m = /^\.g(\d+)\.usearch(?:\.tmp-\d+)?$/.exec(file.slice(stem.length));
  return m ? Number(m[1]) : null;
}
