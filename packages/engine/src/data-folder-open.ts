import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { assertEmbedder, CairnError, type Embedder, embeddingSpaceOf } from '@cairn/core';
import { resolveEmbedder } from '@cairn/embed';
import { damagedDatabaseError, isDatabaseDamage, MemoryStore, type SpaceInfo } from '@cairn/store';
import { DataFolderLock } from './data-folder-lock.js';
import { type EngineOptions, isLongLived } from './engine-options.js';
import { embedderOfSpace } from './space-embedder.js';

/** What an engine is made of once its data folder is open. */
export interface OpenedDataFolder {
  /** The options as the engine runs with them: `pipeline: 'external'` when it opened as a follower. */
  opts: EngineOptions;
  store: MemoryStore;
  embedder: Embedder | null;
  space: SpaceInfo | null;
  /** The writer lock, when this process writes the folder. */
  lock: DataFolderLock | null;
  /** Why this process follows another writer (its pid and host), when it does. */
  followerBecause: string | null;
}

/**
 * Damage met while opening (a header or schema page overwritten) is named like damage met later, and a
 * folder the file system will not let Cairn write (read-only, not its user's, a full disk) is named as such:
 * it was INTERNAL, for reads too (every process writes the lock file, and SQLite its journal).
 */
export function namedOpenFailure(dataDir: string, err: unknown): unknown {
  const dbPath = join(dataDir, 'cairn.db');
  if (isDatabaseDamage(err)) return damagedDatabaseError(dbPath, [(err as Error).message], err);
  const code = (err as NodeJS.ErrnoException | null)?.code;
  if (code === 'ENOSPC' || code === 'EDQUOT')
    return new CairnError(
      'STORAGE_FULL',
      `the disk holding the data folder ${dataDir} is full (${code}): nothing was written; free space and retry`,
      { field: 'dataDir' },
      { cause: err },
    );
  if (code === 'EROFS' || code === 'EACCES' || code === 'EPERM')
    return new CairnError(
      'STORAGE_ERROR',
      `the data folder ${dataDir} cannot be written (${code}): every Cairn process writes its lock file there, and SQLite its journal, even to read; give it a folder it may write (a copy of a read-only snapshot)`,
      { field: 'dataDir' },
      { cause: err },
    );
  return err;
}

/**
 * Opens a data folder for an engine: takes the writer lock (embedded) or, when another process holds it
 * and `ifWriterRunning` is 'read', opens as its follower; opens cairn.db, named as damaged when it is; and
 * finds the active embedding space and its embedder (creating the first space of a new folder). Whatever
 * it opened is closed again if a later step fails.
 */
export async function openDataFolder(options: EngineOptions): Promise<OpenedDataFolder> {
  // Before anything is created or locked: a wrong option leaves no trace.
  if (options.embedder !== undefined && options.embedder !== null)
    assertEmbedder(options.embedder, 'embedder');
  let opts = options;
  let lock: DataFolderLock | null = null;
  let readerBecause: string | null = null;
  if ((opts.pipeline ?? 'embedded') === 'embedded') {
    const created = !existsSync(opts.dataDir);
    try {
      // The user's only: every tenant's memories are in it, and without a mode it followed the umask
      // (0755, its database 0644: readable by every local account). A folder the user made keeps theirs.
      mkdirSync(opts.dataDir, { recursive: true, mode: 0o700 });
    } catch (err) {
      throw namedOpenFailure(opts.dataDir, err);
    }
    // The default folder is ./.cairn inside the user's repository (cairn mcp, the hooks): keep its memories
    // (prompts, commands, summaries) out of `git add -A`, as .venv and .pytest_cache do.
    if (created)
      try {
        writeFileSync(join(opts.dataDir, '.gitignore'), '# created by Cairn\n*\n', { flag: 'wx' });
      } catch {
        // Only a convenience.
      }
    let r: ReturnType<typeof DataFolderLock.acquire>;
    try {
      r = DataFolderLock.acquire(opts.dataDir, isLongLived(opts));
    } catch (err) {
      throw namedOpenFailure(opts.dataDir, err);
    }
    if (r instanceof DataFolderLock) lock = r;
    else {
      const who = `process ${r.heldBy.pid} on ${r.heldBy.host} (since ${new Date(r.heldBy.since).toISOString()})`;
      if (opts.ifWriterRunning !== 'read')
        throw new CairnError(
          'WRITER_ELSEWHERE',
          `data folder ${opts.dataDir} is being written by ${who}: one embedded process writes a data folder; send writes through it (cairn serve, then the API or cairn mcp --api) or stop it`,
          { field: 'dataDir', heldBy: r.heldBy },
        );
      // Store and read beside the writer; never touch its index files; take over when it is gone.
      opts = { ...opts, pipeline: 'external' };
      readerBecause = `data folder ${opts.dataDir} is being written by ${who}`;
    }
  }
  const dbPath = join(opts.dataDir, 'cairn.db');
  const named = (err: unknown) => namedOpenFailure(opts.dataDir, err);
  let store: MemoryStore;
  try {
    store = new MemoryStore({
      path: dbPath,
      ...(opts.lexical ? { lexical: opts.lexical } : {}),
      ...(opts.context ? { context: opts.context } : {}),
      ...(opts.catalog !== undefined ? { catalog: opts.catalog } : {}),
    });
  } catch (err) {
    lock?.release();
    throw named(err);
  }
  try {
    let embedder: Embedder | null;
    let space: SpaceInfo | null = null;
    if (opts.embedder !== undefined) {
      embedder = opts.embedder;
      if (embedder)
        space = store.spaces.ensureSpace(embeddingSpaceOf(embedder), {
          state: 'ready',
          ...(opts.vectorStorage ? { storage: opts.vectorStorage } : {}),
        });
    } else {
      let active = store.spaces.activeSpace();
      if (active) embedder = embedderOfSpace(active, opts.env);
      else {
        const spec = opts.embedderSpec ?? 'hash';
        embedder = await resolveEmbedder(spec, { env: opts.env });
        active = store.spaces.ensureActiveSpace(embeddingSpaceOf(embedder), {
          embedder: spec,
          ...(opts.vectorStorage ? { storage: opts.vectorStorage } : {}),
        });
        // Another process opening the new folder registered its embedder first: the folder's is that one.
        if (active.id !== embeddingSpaceOf(embedder).id) embedder = embedderOfSpace(active, opts.env);
      }
      space = store.spaces.getSpace(embeddingSpaceOf(embedder).id)!;
    }
    return { opts, store, embedder, space, lock, followerBecause: readerBecause };
  } catch (err) {
    store.close();
    lock?.release();
    throw named(err);
  }
}
