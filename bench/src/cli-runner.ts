// Runs Cairn the way a user does: a fresh `cairn ingest` process, then a fresh `cairn search --queries … --json`
// process, so quality figures include everything the CLI does (index files, a cold start), not a warm engine.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

export const CLI_PATH = resolve(import.meta.dirname, '../../apps/cli/dist/main.js');

function cli(args: string[], env: NodeJS.ProcessEnv = process.env): string {
  if (!existsSync(CLI_PATH)) throw new Error(`no ${CLI_PATH}: run pnpm build first`);
  return execFileSync(process.execPath, [CLI_PATH, ...args], {
    encoding: 'utf8',
    maxBuffer: 1 << 30,
    stdio: ['ignore', 'pipe', 'pipe'],
    env,
  });
}

export function writeJsonl(path: string, rows: readonly unknown[]): void {
  writeFileSync(path, `${rows.map((r) => JSON.stringify(r)).join('\n')}\n`);
}

/**
 * `cairn ingest <file> --data-dir <dir>` in its own process; `embedder` (CAIRN_EMBEDDER) picks a new
 * folder's space, e.g. the "old model" a reindex bench switches away from.
 */
export function cliIngest(memories: readonly unknown[], dataDir: string, embedder?: string): void {
  const file = join(dataDir, '..', `ingest-${process.pid}-${Date.now()}.jsonl`);
  writeJsonl(file, memories);
  cli(
    ['ingest', file, '--data-dir', dataDir],
    embedder ? { ...process.env, CAIRN_EMBEDDER: embedder } : process.env,
  );
}

/**
 * `cairn search --queries <file> --json --data-dir <dir>` in its own process; each query object carries an
 * `id` and the wire request. Returns each query's hit ids, best first.
 */
export function cliSearch(queries: ReadonlyArray<{ id: string } & Record<string, unknown>>, dataDir: string) {
  const hits = new Map<string, string[]>();
  for (const [id, r] of cliSearchResponses(queries, dataDir)) {
    hits.set(
      id,
      ((r.hits ?? []) as Array<{ id: string }>).map((h) => h.id),
    );
  }
  return hits;
}

/** `cairn search --queries` in its own process: each query's whole response line (hits, relevance, …). */
export function cliSearchResponses(
  queries: ReadonlyArray<{ id: string } & Record<string, unknown>>,
  dataDir: string,
): Map<string, Record<string, unknown>> {
  const file = join(dataDir, '..', `queries-${process.pid}-${Date.now()}.jsonl`);
  writeJsonl(file, queries);
  const out = cli(['search', '--queries', file, '--json', '--data-dir', dataDir]);
  const responses = new Map<string, Record<string, unknown>>();
  for (const line of out.split('\n')) {
    if (!line.trim()) continue;
    const r = JSON.parse(line) as { id: string; error?: { message: string } };
    if (r.error) throw new Error(`query ${r.id}: ${r.error.message}`);
    responses.set(String(r.id), r);
  }
  return responses;
}

export const readJson = <T>(path: string): T => JSON.parse(readFileSync(path, 'utf8')) as T;
