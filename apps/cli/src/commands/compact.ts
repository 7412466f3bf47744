import { CairnError } from '@cairn/core';
import type { CliEnv } from '../env.js';
import { withEngine } from '../open-engine.js';
import { writeJson } from '../output.js';

const mib = (b: number) => `${(b / 1024 / 1024).toFixed(1)} MiB`;

/**
 * `cairn compact`: rewrites cairn.db without its free pages (VACUUM) and switches an older folder to
 * incremental auto-vacuum, after which the writer gives the pages of a dropped embedding space back to the
 * filesystem by itself, online. The rewrite holds the write lock throughout, so it is refused beside a
 * running writer (WRITER_ELSEWHERE): stop `cairn serve` first. Folders created by this version need it
 * only to shrink at once.
 */
export async function compactCommand(
  flags: { dataDir?: string; json?: boolean },
  env: CliEnv,
): Promise<void> {
  // A distributed deployment's workers and API nodes hold no lock this command could see: it ran its VACUUM
  // beside live workers and an ingest in flight. The folder is compacted as an embedded one, everything
  // else of the deployment stopped, where the lock then answers for any writer left.
  if (env.REDIS_URL)
    throw new CairnError(
      'INVALID_INPUT',
      "cairn compact rewrites the whole data folder and cannot tell whether a distributed deployment's workers and API nodes are running: stop them all, then run it with REDIS_URL unset",
      { field: 'REDIS_URL' },
    );
  // A maintenance command on a mistyped --data-dir must not create a folder and report it compacted.
  await withEngine(
    flags.dataDir,
    env,
    async (engine) => {
      const was = engine.store.diskUsage();
      const t0 = performance.now();
      const { before, after } = engine.store.compact();
      const seconds = (performance.now() - t0) / 1000;
      const report = { before, after, freedBytes: before - after, wasAutoVacuum: was.autoVacuum, seconds };
      if (flags.json) return writeJson(report);
      process.stdout.write(
        `cairn.db: ${mib(before)} → ${mib(after)} (${mib(before - after)} given back, ${seconds.toFixed(1)} s); dropped spaces now shrink it online\n`,
      );
    },
    { existing: true },
  );
}
