import { resolve } from 'node:path';
import { z } from 'zod';

/** Every environment variable the CLI reads, parsed once at start-up. */
const EnvSchema = z.object({
  /** Data folder when --data-dir is not given. @defaultValue ./.cairn */
  CAIRN_DATA_DIR: z.string().min(1).default('.cairn'),
  /** pino level for stderr logs. @defaultValue warn */
  CAIRN_LOG_LEVEL: z.enum(['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent']).default('warn'),
});

export type CliEnv = z.infer<typeof EnvSchema>;

export function loadEnv(env: NodeJS.ProcessEnv = process.env): CliEnv {
  const parsed = EnvSchema.safeParse(env);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new Error(`environment variable ${issue.path.join('.')}: ${issue.message}`);
  }
  return parsed.data;
}

export function resolveDataDir(flag: string | undefined, env: CliEnv): string {
  return resolve(flag ?? env.CAIRN_DATA_DIR);
}
