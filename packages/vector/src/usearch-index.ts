import { randomUUID } from 'node:crypto';
import { closeSync, fstatSync, openSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { rm, writeFile } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { threadId } from 'node:worker_threads';
import { Index, MetricKind, ScalarKind } from 'usearch';
import type {
  HnswParams,
  IndexBuilder,
  IndexBuildRequest,
  IndexBuildResult,
  OffThreadRead,
} from './hnsw-params.js';

/** Creates an empty cosine HNSW index with the given parameters. */
export function createHnswIndex(dimensions: number, params: HnswParams): Index {
  return new Index({
    dimensions,
    metric: MetricKind.Cos,
    quantization: { f32: ScalarKind.F32, f16: ScalarKind.F16, i8: ScalarKind.I8 }[params.quantization],
    connectivity: params.connectivity,
    expansion_add: params.expansionAdd,
    expansion_search: params.expansionSearch,
    multi: false,
  });
}

/**
 * Maps an index file read-only (`Index.view`) without letting usearch open the path itself. usearch 2.26
 * closes descriptor 0 when a view's open, stat or map fails (`memory_mapped_file_t` closes the descriptor it
 * never set): a graph file deleted just before its view (a reader mapping a generation the writer replaced)
 * took the process's stdin, then whatever file or pipe was given descriptor 0 next; a test process died in
 * libuv (`uv__close: Assertion fd > STDERR_FILENO`). Here the file is opened first, so a missing one throws
 * with its name, an empty one is refused, and usearch maps the descriptor already open (through /proc/self/fd
 * or /dev/fd, which reach the file even if its name is gone meanwhile).
 */
export function viewIndexFile(index: Index, path: string): void {
  const fd = openSync(path, 'r');
  try {
    // mmap refuses a zero-length file, and usearch would close descriptor 0 after that failure too.
    if (fstatSync(fd).size === 0) throw new Error(`index file ${path} is empty`);
    const byDescriptor =
      process.platform === 'linux'
        ? `/proc/self/fd/${fd}`
        : process.platform === 'win32'
          ? path
          : `/dev/fd/${fd}`;
    index.view(byDescriptor);
  } finally {
    closeSync(fd);
  }
}

/**
 * usearch's concurrent insert loses nodes while a graph is small: inserts that run at once cannot see each
 * other, and a node none of them links to is unreachable (a stored vector then cannot be found even by
 * itself). Measured with usearch 2.26 (8 seeds, self-search at k 1): 300 random vectors lost 8–12 nodes with
 * 2 threads and 40 with 8; after the first 1,024 went in one at a time, 3,000 lost 6–11 (2 threads). On
 * 53,000 hashed vectors, 2 threads after a 2,048 prefix missed 853 at k 10 against 875 for one thread:
 * within the graph's own misses. So the first vectors of every graph go in one thread.
 */
export const SEQUENTIAL_PREFIX = 8192;

/**
 * The native threads a usearch call may use: at least one, and no more than the machine's cores. Past them
 * nothing is gained, and usearch sizes its per-thread contexts by the cores when it loads or maps a graph:
 * a merge into a loaded graph whose removed keys left free slots (no reserve, so no new contexts) failed
 * with "Reserve capacity ahead of insertions!", and a search of a mapped graph asking for more threads
 * failed whole ("Reserve capacity ahead of searches!"; CAIRN_BUILD_THREADS may say 8 on 2 cores).
 */
export function nativeThreads(threads: number | undefined): number {
  return Math.min(Math.max(1, Math.floor(threads ?? 1) || 1), availableParallelism());
}

/**
 * Adds vectors in chunks so one call never holds a huge native batch, on `threads` native threads once the
 * graph holds SEQUENTIAL_PREFIX vectors (before that, one at a time: see above).
 */
export function addInChunks(
  index: Index,
  keys: BigUint64Array,
  vectors: Float32Array,
  dimensions: number,
  threads = 1,
  chunk = 8192,
  /** Raised to the count added after each chunk (see `IndexBuildRequest.added`). */
  added?: Int32Array,
): void {
  threads = nativeThreads(threads);
  const sequential =
    threads > 1 ? Math.max(0, Math.min(keys.length, SEQUENTIAL_PREFIX - index.size())) : keys.length;
  for (let i = 0; i < keys.length; ) {
    const single = i < sequential;
    const end = Math.min(keys.length, i + chunk, single ? sequential : keys.length);
    // slice (a copy), not subarray: native code must see offset-0 buffers.
    index.add(keys.slice(i, end), vectors.slice(i * dimensions, end * dimensions), single ? 1 : threads);
    i = end;
    if (added) Atomics.store(added, 0, i);
  }
}

/** Saves atomically: a crash mid-save leaves the previous file intact. */
export function saveIndexAtomically(index: Index, path: string): void {
  const tmp = `${path}.tmp-${process.pid}`;
  index.save(tmp);
  renameSync(tmp, path);
}

/**
 * Frees an index's native memory now; the index must not be used afterwards. usearch 2.26's binding frees
 * it only when V8 collects the small JS wrapper, and V8 does not know how much native memory the wrapper
 * holds: a build worker, whose JS heap hardly grows, kept every merged graph (tens of MB each) for
 * minutes, and the serving thread kept every replaced generation mapped, its file deleted but its disk
 * space held. `view()` resets the index (freeing graph, lookups and mapping) before mapping the file it
 * is given, so viewing an empty index releases nearly everything.
 */
const EMPTY_PARAMS: HnswParams = {
  connectivity: 2,
  expansionAdd: 2,
  expansionSearch: 2,
  quantization: 'f32',
};

/** An empty index file's bytes, saved by this usearch once per thread (see `releaseIndex`). */
let emptyIndexBytes: Buffer | null = null;

/**
 * The bytes a release writes: read once per thread from an empty index usearch saves. A manager reads them
 * when it starts, so that no release pays for the save on the serving thread.
 */
export function emptyIndexFileBytes(): Buffer {
  if (emptyIndexBytes) return emptyIndexBytes;
  const path = releaseFilePath();
  try {
    createHnswIndex(1, EMPTY_PARAMS).save(path);
    emptyIndexBytes = readFileSync(path);
  } finally {
    rmSync(path, { force: true });
  }
  return emptyIndexBytes;
}

function releaseFilePath(): string {
  return join(tmpdir(), `cairn-release-${process.pid}-${threadId}-${randomUUID()}.usearch`);
}

export function releaseIndex(index: Index): void {
  const path = releaseFilePath();
  try {
    writeFileSync(path, emptyIndexFileBytes());
    viewIndexFile(index, path);
  } catch {
    // Only memory is at stake: the wrapper's collection still frees it eventually.
  } finally {
    rmSync(path, { force: true });
  }
}

/**
 * `releaseIndex` for the serving thread: the empty file is written and deleted off it. A release follows a
 * merge, whose 530 MB file (at a million vectors) was just written, and a file saved and unlinked
 * synchronously then waited on the filesystem's journal, holding the serving thread 100–150 ms (a CPU
 * profile under writes). Only the view is synchronous. Never rejects.
 */
export async function releaseIndexSoon(index: Index): Promise<void> {
  const path = releaseFilePath();
  try {
    await writeFile(path, emptyIndexFileBytes());
    viewIndexFile(index, path);
  } catch {
    // As in releaseIndex.
  } finally {
    await rm(path, { force: true }).catch(() => undefined);
  }
}

/** Runs an off-thread reader where the build runs (see `OffThreadRead`). */
async function readOffThread(
  read: OffThreadRead,
): Promise<{ keys: BigUint64Array; vectors: Float32Array; watermark: number }> {
  const reader = (await import(pathToFileURL(read.module).href)) as {
    default: (args: Record<string, unknown>) => {
      keys: BigUint64Array;
      vectors: Float32Array;
      watermark: number;
    };
  };
  return reader.default(read.args);
}

/** Builds (or merges into a copy of `basePath`) on the calling thread. Used when no worker pool is wired. */
export const inProcessIndexBuilder: IndexBuilder = {
  async build(req: IndexBuildRequest): Promise<IndexBuildResult> {
    let { keys, vectors } = req;
    let watermark: number | undefined;
    if (req.read) ({ keys, vectors, watermark } = await readOffThread(req.read));
    const index = createHnswIndex(req.dimensions, req.params);
    try {
      if (req.basePath) {
        index.load(req.basePath);
        // Updated memories: drop their old vectors first (usearch refuses a duplicate key).
        for (const k of keys) if (index.contains(k)) index.remove(k);
        // Deleted memories leave the graph, so the file's count is what a search can return.
        for (const k of req.removeKeys ?? []) if (index.contains(k)) index.remove(k);
      }
      addInChunks(index, keys, vectors, req.dimensions, req.threads ?? 1, undefined, req.added);
      saveIndexAtomically(index, req.path);
      return { count: index.size(), ...(watermark !== undefined ? { watermark } : {}) };
    } finally {
      releaseIndex(index);
    }
  },
};
