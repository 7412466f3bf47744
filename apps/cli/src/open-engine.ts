import { CairnEngine } from '@cairn/engine';
import type { CliEnv } from './env.js';
import { resolveDataDir } from './env.js';
import { createLogger } from './output.js';

/** The one place the CLI builds an engine: a one-shot process waits for vector indexes rather than degrade. */
export async function openEngine(dataDirFlag: string | undefined, env: CliEnv): Promise<CairnEngine> {
  const logger = createLogger(env.CAIRN_LOG_LEVEL);
  return CairnEngine.open({
    dataDir: resolveDataDir(dataDirFlag, env),
    waitForIndex: true,
    persistIntervalMs: 0,
    log: (level, msg, data) => logger[level](data ?? {}, msg),
  });
}

export async function withEngine<T>(
  dataDir: string | undefined,
  env: CliEnv,
  fn: (e: CairnEngine) => Promise<T>,
): Promise<T> {
  const engine = await openEngine(dataDir, env);
  try {
    return await fn(engine);
  } finally {
    await engine.close();
  }
}
