#!/usr/bin/env node
import cluster from 'node:cluster';
import { readFileSync } from 'node:fs';
import { CairnError } from '@cairn/core';
import { Command } from 'commander';
import { apiTarget } from './api-target.js';
import { commandKit } from './command-kit.js';
import { type CliEnv, loadEnv } from './env.js';
import { addMemoryCommands } from './memory-commands.js';
import { addOperatorCommands } from './operator-commands.js';
import { fail } from './output.js';

/** `cairn hooks run`: Claude Code runs it on every event, and it always exits 0 (see its description). */
function isHookRun(): boolean {
  const [command, sub] = process.argv.slice(2);
  return command === 'hooks' && sub === 'run';
}

/**
 * The environment, parsed. A malformed variable is a usage error (exit 2); a Claude Code hook must never
 * fail the agent's turn, so for `cairn hooks run` it is logged and the process exits 0.
 */
function loadEnvOrExit(): ReturnType<typeof loadEnv> {
  try {
    return loadEnv();
  } catch (err) {
    if (isHookRun()) {
      process.stderr.write(`cairn hooks: ${(err as Error).message}; nothing captured\n`);
      process.exit(0);
    }
    // A mistyped setting is the user's to fix: the one error shape and the usage exit code, no stack.
    fail(err, process.argv.includes('--json'));
    process.exit(process.exitCode);
  }
}

/**
 * Whether the command about to run counts tokens once it has opened the folder: a one-query `search
 * --json` (each hit's count), and the long-lived engines of `mcp` and `serve` (a server that supervises
 * `--processes` children searches nothing itself). Their tokenizer thread is started before their modules
 * load (see TokenizerThread.startEarly).
 */
function countsTokens(command: Command, env: CliEnv): boolean {
  const o = command.opts();
  switch (command.name()) {
    case 'search':
      return Boolean(o.json) && o.queries === undefined && command.args.length > 0;
    case 'mcp':
      try {
        return apiTarget(o, env) === null;
      } catch {
        return false; // the command names the mistake itself
      }
    case 'serve':
      return cluster.isWorker || Number(o.processes) <= 1;
    default:
      return false;
  }
}

export function buildProgram(): Command {
  const env = loadEnvOrExit();
  const program = new Command('cairn')
    .description('Cairn: hybrid (BM25 + vector) memory for AI agents, with explained rankings')
    .showHelpAfterError()
    .configureOutput({
      writeErr: (s) => process.stderr.write(s),
      // A usage error (unknown command or option, missing argument) in the one error shape, exit 2.
      outputError: (s) =>
        fail(
          new CairnError('INVALID_INPUT', s.replace(/^error: /, '').trim()),
          process.argv.includes('--json'),
        ),
    })
    .exitOverride((err) => process.exit(err.exitCode === 0 || isHookRun() ? 0 : 2))
    .version(
      (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string })
        .version,
      '-V, --version',
    );
  program.hook('preAction', async (_program, command) => {
    if (countsTokens(command, env))
      (await import('@cairn/service/tokenizer-thread')).TokenizerThread.startEarly();
  });
  const kit = commandKit(env);
  addMemoryCommands(program, kit);
  addOperatorCommands(program, kit);
  return program;
}

// A reader that stops early (`cairn export | head`) closes the pipe: the rest of the output has nowhere to
// go, which is not an error. The command finishes as it would (closing the data folder cleanly, where an
// exit could cut a thread short in a native call) and what it still prints is dropped.
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code !== 'EPIPE') throw err;
  process.stdout.write = (() => true) as typeof process.stdout.write;
});

await buildProgram().parseAsync(process.argv);
