import { Command, Option } from 'commander';
import type { CliEnv } from './env.js';
import { fail } from './output.js';

/** A command's function, as its module exports it (its arguments, its flags, then the environment). */
export type CommandFn = (...args: never[]) => Promise<void>;

/** Collects a repeatable option's values (`--tag a --tag b`). */
export const collect = (v: string, prev: string[] = []) => [...prev, v];

/**
 * A command's module, loaded when the command runs. Loading every command up front cost a one-shot
 * `cairn search` about a second before it opened the folder: the HTTP server, the MCP SDK, BullMQ and the
 * tokenizer's tables came with commands it never ran.
 */
export const lazy =
  <K extends string, M extends Record<K, CommandFn>>(load: () => Promise<M>, name: K): CommandFn =>
  async (...args: never[]) =>
    (await load())[name](...args);

/** What every command's declaration uses: its common options, and the wrapper that runs it. */
export interface CommandKit {
  /** `--data-dir`. */
  dataDir(): Option;
  /** `--json`. */
  json(): Option;
  /** Runs a command's function with the environment, reporting a failure in the one error shape. */
  run(fn: CommandFn): (...args: unknown[]) => Promise<void>;
}

export function commandKit(env: CliEnv): CommandKit {
  return {
    dataDir: () => new Option('--data-dir <dir>', 'data folder (default: $CAIRN_DATA_DIR or ./.cairn)'),
    json: () => new Option('--json', 'print JSON on stdout (logs stay on stderr)'),
    run:
      (fn) =>
      async (...args: unknown[]) => {
        const opts = args.find(
          (a) => a && typeof a === 'object' && !Array.isArray(a) && !(a instanceof Command),
        ) as { json?: boolean } | undefined;
        try {
          await (fn as (...a: unknown[]) => Promise<void>)(...args.slice(0, -1), env);
        } catch (err) {
          // Output cut short by its reader (a write waiting to drain into a closed pipe): see main.ts.
          if ((err as NodeJS.ErrnoException).code === 'EPIPE') return;
          fail(err, Boolean(opts?.json));
        }
      },
  };
}
