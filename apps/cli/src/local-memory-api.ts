import type { MemoryApi } from '@cairn/api-contract';
import type { CairnEngine } from '@cairn/engine';
import { MemoryService, NamespaceAccess, type TokenizerThread } from '@cairn/service';
import { loadDistributed } from './distributed.js';
import type { CliEnv } from './env.js';
import { connectQueues } from './open-engine.js';

/**
 * The memory API over an engine this process opened, for a face that works on a data folder (`cairn mcp`,
 * the Claude Code hooks). With REDIS_URL the folder is a distributed deployment's, and writes go through its
 * capture queue (waiting at most `saveWaitMs` for a worker to store them), as `cairn add` does. `close`
 * closes the queues and the engine; if building it fails, the engine is closed before the error is thrown.
 */
export async function localMemoryApi(
  engine: CairnEngine,
  env: CliEnv,
  opts: { saveWaitMs: number; queues?: boolean; tokenizer?: TokenizerThread | null },
): Promise<{ api: MemoryApi; mode: 'embedded' | 'distributed'; close: () => Promise<void> }> {
  try {
    const topology = (opts.queues ?? true) && env.REDIS_URL ? await connectQueues(env) : null;
    const producer = topology
      ? new (await loadDistributed()).CaptureProducer(topology, {
          wait: 'stored',
          waitTimeoutMs: opts.saveWaitMs,
        })
      : null;
    const service = new MemoryService({ engine, producer, tokenizer: opts.tokenizer ?? null });
    return {
      api: service.scoped(NamespaceAccess.everything()),
      mode: service.mode,
      close: async () => {
        await producer?.close();
        await topology?.close();
        await engine.close();
      },
    };
  } catch (err) {
    await engine.close();
    throw err;
  }
}
