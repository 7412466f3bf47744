import { resolve } from 'node:path';
import { CairnError, type PrunePolicy, parseDuration, parsePrunePolicy } from '@cairn/core';
import { z } from 'zod';

/** Every environment variable the CLI reads, parsed once at start-up. */
const EnvSchema = z.object({
  /** Data folder when --data-dir is not given. @defaultValue ./.cairn */
  CAIRN_DATA_DIR: z.string().min(1).default('.cairn'),
  /** pino level for stderr logs. @defaultValue warn */
  CAIRN_LOG_LEVEL: z.enum(['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent']).default('warn'),
  /**
   * Set: the distributed mode. `ingest` enqueues into the capture stage, `worker` processes the queues,
   * `stats` adds queue depths. Unset: the embedded mode (one process, no Redis).
   */
  REDIS_URL: z
    .string()
    .regex(/^rediss?:\/\//, 'must be a redis:// or rediss:// URL')
    .optional()
    .or(z.literal('').transform(() => undefined)),
  /** Key prefix of the queues: deployments sharing a Redis must differ. @defaultValue cairn */
  CAIRN_QUEUE_PREFIX: z
    .string()
    .regex(/^[A-Za-z0-9_.-]+$/)
    .default('cairn'),
  /** Index shards (every process of a deployment must agree). @defaultValue 4 */
  CAIRN_SHARDS: z.coerce.number().int().min(1).max(1024).default(4),
  /**
   * The embedder of a new data folder's first embedding space: `hash`, `ollama:<model>` or
   * `openai:<model>`. An existing folder keeps the embedder recorded in its active space. @defaultValue hash
   */
  CAIRN_EMBEDDER: z.string().min(1).default('hash'),
  /**
   * `cairn mcp` without --data-dir or --api: serve the memory of the Cairn HTTP API at this URL instead of
   * opening a data folder. Unset: embedded.
   */
  CAIRN_API_URL: z
    .url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' })
    .optional()
    .or(z.literal('').transform(() => undefined)),
  /**
   * `cairn mcp`: put the namespace derived from the git repository (or folder) under this prefix, so it
   * meets an API key scoped to it: with `team/` and a key for `team/*`, `repo/github.com/acme/api` becomes
   * `team/repo/github.com/acme/api`. @defaultValue none
   */
  CAIRN_NAMESPACE_PREFIX: z
    .string()
    .optional()
    .transform((s) => s || undefined),
  /**
   * Seconds the embedding space a reindex replaced keeps receiving vectors, so `cairn spaces activate`
   * of it is instant; 0 lets it fall behind at once. @defaultValue 3600
   */
  CAIRN_PREVIOUS_SPACE_GRACE: z.preprocess(
    (v) => (v === '' ? undefined : v),
    z.coerce.number().min(0).default(3_600),
  ),
  /**
   * How often the data folder's writer (or, with REDIS_URL, a worker with the index stage) runs the
   * consolidation job: a duration (`5m`, `1h`), or `off`. @defaultValue 5m
   */
  CAIRN_CONSOLIDATE_EVERY: z
    .string()
    .optional()
    .transform((s, ctx) => {
      if (!s || s === 'off') return s === 'off' ? 0 : 300_000;
      try {
        return parseDuration(s, 'CAIRN_CONSOLIDATE_EVERY');
      } catch (err) {
        ctx.addIssue({ code: 'custom', message: (err as Error).message });
        return z.NEVER;
      }
    }),
  /**
   * Pruning policies the writer applies hourly: a JSON array of `{namespace, slot | kind, cap, min_age?,
   * min_access?}`. @defaultValue none
   */
  CAIRN_PRUNE_POLICIES: z
    .string()
    .optional()
    .transform((s, ctx): PrunePolicy[] => {
      if (!s) return [];
      try {
        const list = JSON.parse(s) as unknown;
        if (!Array.isArray(list)) throw new Error('must be a JSON array of policies');
        return list.map((p, i) => parsePrunePolicy(p, `policy ${i}`));
      } catch (err) {
        ctx.addIssue({ code: 'custom', message: (err as Error).message });
        return z.NEVER;
      }
    }),
  /**
   * A reranker for the first hits of every search (`rerank: 'auto'`): `tei:<url>` (text-embeddings-
   * inference and compatible) or `cohere:<model>[@<url>]`; its key in CAIRN_RERANKER_KEY. @defaultValue none
   */
  CAIRN_RERANKER: z
    .string()
    .optional()
    .transform((s) => s || undefined),
  /**
   * How the embedding spaces this deployment creates keep their vectors: `f32`, or `i8` at a quarter of
   * the bytes. An existing space keeps its own. @defaultValue f32
   */
  CAIRN_VECTOR_STORAGE: z.enum(['f32', 'i8']).default('f32'),
  /**
   * Native threads one vector graph build or merge inserts with (at most the machine's cores). On Linux
   * builds run in the compute pool below the serving thread's priority, so they take the cores it leaves
   * idle; 1 keeps a core free where they cannot be lowered. @defaultValue the machine's cores
   */
  CAIRN_BUILD_THREADS: z.coerce.number().int().min(1).max(1024).optional(),
  /** The API key `cairn mcp` sends to CAIRN_API_URL when --api-key is not given. @defaultValue none */
  CAIRN_API_KEY: z
    .string()
    .optional()
    .transform((s) => s || undefined),
});

export type CliEnv = z.infer<typeof EnvSchema> & {
  /** The raw environment, for the embedders' own CAIRN_OLLAMA_URL / CAIRN_OPENAI_* settings. */
  raw: Record<string, string | undefined>;
};

export function loadEnv(env: NodeJS.ProcessEnv = process.env): CliEnv {
  const parsed = EnvSchema.safeParse(env);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const name = issue.path.join('.');
    throw new CairnError('INVALID_INPUT', `environment variable ${name}: ${issue.message}`, { field: name });
  }
  return { ...parsed.data, raw: env };
}

export function resolveDataDir(flag: string | undefined, env: CliEnv): string {
  return resolve(flag ?? env.CAIRN_DATA_DIR);
}
