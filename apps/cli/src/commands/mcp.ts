import { createCairnMcpServer, type MemoryApi, remoteMemoryApi, serveStdio } from '@cairn/mcp';
import { TokenizerThread } from '@cairn/service';
import { apiTarget } from '../api-target.js';
import { closeInOrder } from '../close-in-order.js';
import type { CliEnv } from '../env.js';
import { localMemoryApi } from '../local-memory-api.js';
import { createLogger } from '../logger.js';
import { openEngine } from '../open-engine.js';
import { projectNamespace } from '../project-namespace.js';

export interface McpFlags {
  /** @defaultValue derived from the git repository of the working folder */
  namespace?: string;
  dataDir?: string;
  /** Base URL of a Cairn HTTP API to serve instead of a data folder. @defaultValue $CAIRN_API_URL */
  api?: string;
  /** @defaultValue $CAIRN_API_KEY */
  apiKey?: string;
  /** Prefix of the derived namespace (not of --namespace). @defaultValue $CAIRN_NAMESPACE_PREFIX */
  namespacePrefix?: string;
}

interface Backend {
  api: MemoryApi;
  mode: 'embedded' | 'distributed' | 'remote';
  close(): Promise<void>;
}

/** How long a save waits for a capture worker's commit in the distributed mode before failing. */
const SAVE_WAIT_MS = 30_000;

/**
 * `cairn mcp`: Cairn's memory tools for a coding agent, over stdio. stdout carries only the protocol;
 * every log goes to stderr. Runs until the client closes stdin (or SIGTERM / SIGINT), then closes the
 * engine, so nothing is left half-written.
 */
export async function mcpCommand(flags: McpFlags, env: CliEnv): Promise<void> {
  keepStdoutForProtocol();
  const logger = createLogger(env.CAIRN_LOG_LEVEL);
  const { namespace, note } = projectNamespace(
    flags.namespace,
    flags.namespacePrefix ?? env.CAIRN_NAMESPACE_PREFIX,
    process.cwd(),
  );
  const target = apiTarget(flags, env);
  const backend = target ? remoteBackend(target) : await localBackend(flags.dataDir, env);
  try {
    const server = createCairnMcpServer(backend.api, {
      namespace,
      ...(note ? { namespaceNote: note } : {}),
      log: (level, msg, data) => logger[level](data ?? {}, msg),
    });
    const session = await serveStdio(server);
    const stop = () => void session.close();
    process.once('SIGTERM', stop);
    process.once('SIGINT', stop);
    logger.info({ namespace, mode: backend.mode }, 'cairn mcp: serving on stdio');
    await session.closed;
    process.off('SIGTERM', stop);
    process.off('SIGINT', stop);
  } finally {
    await backend.close();
  }
}

function remoteBackend(target: { baseUrl: string; apiKey?: string }): Backend {
  return { api: remoteMemoryApi(target), mode: 'remote', close: async () => {} };
}

/**
 * A long-lived engine on the data folder. With REDIS_URL it is a reader of a distributed deployment and
 * saves go through the capture queue, as `cairn ingest` does.
 */
async function localBackend(dataDir: string | undefined, env: CliEnv): Promise<Backend> {
  // The hits' token counts are made on a thread of their own, as in `cairn serve`: started first, its
  // tables load while the engine opens, where an agent's first search loaded them on this thread (the
  // call took 0.4–0.6 s at 100k memories).
  const tokenizer = TokenizerThread.start();
  try {
    const engine = await openEngine(dataDir, env, { serving: true, follow: true });
    const backend = await localMemoryApi(engine, env, { saveWaitMs: SAVE_WAIT_MS, tokenizer });
    return {
      ...backend,
      close: () => closeInOrder([() => backend.close(), () => tokenizer.close()]),
    };
  } catch (err) {
    await tokenizer.close();
    throw err;
  }
}

/**
 * A library that logs with console.log would corrupt the protocol stream; send such output to stderr
 * (the transport writes to process.stdout directly, so it is unaffected).
 */
function keepStdoutForProtocol(): void {
  const toStderr = (...args: unknown[]) => console.error(...args);
  console.log = toStderr;
  console.info = toStderr;
  console.debug = toStderr;
}
