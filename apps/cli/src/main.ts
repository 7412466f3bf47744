#!/usr/bin/env node
import cluster from 'node:cluster';
import { readFileSync } from 'node:fs';
import { CairnError } from '@cairn/core';
import { Command, Option } from 'commander';
import { apiTarget } from './api-target.js';
import { type CliEnv, loadEnv } from './env.js';
import { DEFAULT_HOOK_MAX_TOKENS, DEFAULT_HOOK_TIMEOUT_S } from './hooks/defaults.js';
import { fail } from './output.js';

const collect = (v: string, prev: string[] = []) => [...prev, v];

type CommandFn = (...args: never[]) => Promise<void>;

/**
 * A command's module, loaded when the command runs. Loading every command up front cost a one-shot
 * `cairn search` about a second before it opened the folder: the HTTP server, the MCP SDK, BullMQ and the
 * tokenizer's tables came with commands it never ran.
 */
const lazy =
  <K extends string, M extends Record<K, CommandFn>>(load: () => Promise<M>, name: K): CommandFn =>
  async (...args: never[]) =>
    (await load())[name](...args);

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
  const dataDir = () => new Option('--data-dir <dir>', 'data folder (default: $CAIRN_DATA_DIR or ./.cairn)');
  const json = () => new Option('--json', 'print JSON on stdout (logs stay on stderr)');
  const run =
    (fn: (...args: never[]) => Promise<void>) =>
    async (...args: unknown[]) => {
      const opts = args.find(
        (a) => a && typeof a === 'object' && !Array.isArray(a) && !(a instanceof Command),
      ) as { json?: boolean } | undefined;
      try {
        await (fn as (...a: unknown[]) => Promise<void>)(...args.slice(0, -1), env);
      } catch (err) {
        // Output cut short by its reader (a write waiting to drain into a closed pipe): see below.
        if ((err as NodeJS.ErrnoException).code === 'EPIPE') return;
        fail(err, Boolean(opts?.json));
      }
    };

  program
    .command('ingest')
    .description('store memories from a JSONL file (one memory object per line; "-" reads stdin)')
    .argument('<file>')
    .addOption(dataDir())
    .addOption(json())
    .option('--batch-size <n>', 'memories per transaction', '1000')
    .option(
      '--no-embed',
      'store only (lexical search at once); the next writer to open the folder embeds and indexes them',
    )
    .option('--progress', 'force the progress bar (default: files over 1 MB)')
    .addOption(
      new Option('--wait <point>', 'with REDIS_URL: return once stored (durable) or once queued in Redis')
        .choices(['stored', 'queued'])
        .default('stored'),
    )
    .action(run(lazy(() => import('./commands/ingest.js'), 'ingestCommand')));

  program
    .command('search')
    .description('hybrid search of one namespace, or a batch with --queries')
    .argument('[query]')
    .option('-n, --namespace <ns>', 'namespace to search')
    .option('-k, --k <n>', 'hits to return (default 5)')
    .option('--pool <n>', 'candidates per leg (default 50)')
    .option('--rrf-k <n>', 'RRF constant (default 60)')
    .option(
      '--context-weight <w>',
      "weight of a turn's session context (the turn before it) in the lexical leg; 0 = own words only (default 0.5)",
    )
    .option('--agent-boost <b>', 'boost of a memory whose agent the query names; 0 = off (default 0.25)')
    .option(
      '--session-match <w>',
      "share of its session's match (the session as one document) a memory gains; 0 = off (default 0.5)",
    )
    .option(
      '--session-support <w>',
      "share of its session's best other candidate a hit gains, 0..1; 0 = off (default 0)",
    )
    .option(
      '--route-weight <w>',
      "weight of each named field's route relative to its leg (multi-route recall); 0 = off (default 0.25)",
    )
    .option('--route-weights <spec>', 'per-field route weights, e.g. facts=1,next_turn=0.3')
    .option('--neighbors <n>', 'attach this many session neighbours before and after each hit (default 0)')
    .option('--weights <spec>', 'leg weights, e.g. lexical=1,vector=0.5 (0 turns a leg off)')
    .option(
      '--decay <spec>',
      'auto (the default: age breaks close calls only), off, or a half-life such as 30d or 12h',
    )
    .option('--now <time>', 'evaluate recency as of this time (ISO-8601 or epoch ms)')
    .option('--kind <kind>', 'only this kind (repeatable)', collect)
    .option('--session <id>', 'only this session (repeatable)', collect)
    .option('--agent <id>', 'only this agent (repeatable)', collect)
    .option('--tag <tag>', 'only memories with this tag (repeatable, any of)', collect)
    .option('--since <time>', 'only memories at or after this time')
    .option('--until <time>', 'only memories before this time')
    .option('--slot <slot>', 'only facts of this slot (repeatable, any of)', collect)
    .option('--as-of <time>', 'only memories valid at this time (their validFrom/validTo)')
    .option('--mmr <lambda>', 'MMR diversity, 0..1 (1 = off)')
    .addOption(
      new Option('--explain <level>', 'none, hits (default), or full for the whole candidate table').choices([
        'none',
        'hits',
        'full',
      ]),
    )
    .option('--queries <file>', 'JSONL of queries; prints one JSON line per query, in order')
    .addOption(dataDir())
    .addOption(json())
    .action(run(lazy(() => import('./commands/search.js'), 'searchCommand')));

  program
    .command('add')
    .description('store one memory, given as the argument or on stdin (works beside a running server)')
    .argument('[text]')
    .option('-n, --namespace <ns>', 'namespace')
    .option('--kind <kind>', 'observation (default), turn, summary, fact, prompt, …')
    .option('--title <title>', 'one line shown in indexes')
    .option('--session <id>', 'the session it belongs to')
    .option('--tag <tag>', 'a tag (repeatable)', collect)
    .option('--importance <x>', '0–1 (default 0.5)')
    .option('--id <id>', 'your own id (default: derived from the content)')
    .addOption(dataDir())
    .addOption(json())
    .action(run(lazy(() => import('./commands/browse.js'), 'addCommand')));

  program
    .command('list')
    .description('browse a namespace newest first, with filters and no query')
    .option('-n, --namespace <ns>', 'namespace')
    .option('--kind <kind>', 'only this kind (repeatable)', collect)
    .option('--session <id>', 'only this session (repeatable)', collect)
    .option('--tag <tag>', 'only memories with this tag (repeatable, any of)', collect)
    .option('--since <time>', 'only memories at or after this time')
    .option('--until <time>', 'only memories before this time')
    .option('--slot <slot>', 'only facts of this slot (repeatable, any of)', collect)
    .option('--as-of <time>', 'only memories valid at this time (their validFrom/validTo)')
    .option('--limit <n>', 'memories to show', '20')
    .option('--offset <n>', 'skip this many of the newest (paging)', '0')
    .addOption(dataDir())
    .addOption(json())
    .action(run(lazy(() => import('./commands/browse.js'), 'listCommand')));

  program
    .command('context')
    .description(
      'the session-start pack (recent summaries and what is relevant to --query), within a token budget',
    )
    .option('-n, --namespace <ns>', 'namespace')
    .option('-q, --query <text>', 'what the session is about')
    .option('--max-tokens <n>', 'token budget of the pack', '2000')
    .addOption(dataDir())
    .addOption(json())
    .action(run(lazy(() => import('./commands/browse.js'), 'contextCommand')));

  program
    .command('export')
    .description(
      'every memory of a namespace as JSONL (superseded and deleted ones included), for cairn import',
    )
    .option('-n, --namespace <ns>', 'namespace')
    .option('--out <file>', 'write to this file instead of stdout')
    .addOption(dataDir())
    .action(run(lazy(() => import('./commands/transfer.js'), 'exportCommand')));

  program
    .command('import')
    .description(
      'restore an export: memories, supersessions and tombstones, then embed and index ("-" reads stdin)',
    )
    .argument('<file>')
    .option('--batch-size <n>', 'memories per transaction', '1000')
    .addOption(dataDir())
    .addOption(json())
    .action(run(lazy(() => import('./commands/transfer.js'), 'importCommand')));

  program
    .command('get')
    .description('full records by id')
    .argument('<ids...>')
    .option('-n, --namespace <ns>', 'namespace')
    .addOption(dataDir())
    .addOption(json())
    .action(run(lazy(() => import('./commands/records.js'), 'getCommand')));

  program
    .command('timeline')
    .description('memories around one memory, in time order (within its session, else its namespace)')
    .argument('<anchorId>')
    .option('-n, --namespace <ns>', 'namespace')
    .option('--before <n>', 'memories before the anchor', '5')
    .option('--after <n>', 'memories after the anchor', '5')
    .addOption(dataDir())
    .addOption(json())
    .action(run(lazy(() => import('./commands/records.js'), 'timelineCommand')));

  program
    .command('delete')
    .description('tombstone a memory')
    .argument('<id>')
    .option('-n, --namespace <ns>', 'namespace')
    .addOption(dataDir())
    .addOption(json())
    .action(run(lazy(() => import('./commands/records.js'), 'deleteCommand')));

  program
    .command('stats')
    .description('per-namespace counts')
    .addOption(dataDir())
    .addOption(json())
    .action(run(lazy(() => import('./commands/records.js'), 'statsCommand')));

  program
    .command('check')
    .description(
      "check cairn.db's integrity and the counts stats reads (read-only, safe beside a running server); exit 1 if either is off",
    )
    .option(
      '--quick',
      "SQLite's quick_check: page and b-tree structure only, faster on large folders (counts not checked)",
    )
    .option(
      '--recount',
      'set the kept counts from the tables (one short write, safe beside a running server)',
    )
    .addOption(dataDir())
    .addOption(json())
    .action(run(lazy(() => import('./commands/check.js'), 'checkCommand')));

  program
    .command('compact')
    .description(
      'give cairn.db its free pages back (VACUUM) and let dropped embedding spaces shrink it online from then on; stop the server first',
    )
    .addOption(dataDir())
    .addOption(json())
    .action(run(lazy(() => import('./commands/compact.js'), 'compactCommand')));

  program
    .command('worker')
    .description('process the capture, embed and index queues (needs REDIS_URL); stops gracefully on SIGTERM')
    .option('--stages <list>', 'comma-separated stages to run', 'capture,embed,index')
    .option('--concurrency <n>', 'jobs per stage at once (index shards always take one)', '2')
    .option('--shutdown-timeout <s>', 'seconds active jobs get to finish on SIGTERM', '10')
    .option(
      '--reconcile-interval <s>',
      'seconds between sweeps for stored memories without vectors (0: off)',
      '30',
    )
    .option(
      '--embed-rate <n>',
      'at most this many embed jobs per second across all workers (protects a remote embedder)',
    )
    .addOption(dataDir())
    .action(run(lazy(() => import('./commands/worker.js'), 'workerCommand')));

  program
    .command('reindex')
    .description(
      'build a new embedding space from the stored text, then activate it (queries keep the old one until then)',
    )
    .requiredOption('--embedder <spec>', 'hash, hash:<dims>, ollama:<model> or openai:<model>')
    .option('--no-activate', 'fill the space but leave the current one active')
    .option('--batch-size <n>', 'memories per embedder call (embedded mode)', '512')
    .option(
      '--stall-timeout <s>',
      'with REDIS_URL: after this many seconds without progress, check for workers and dead letters',
      '30',
    )
    .addOption(dataDir())
    .option(
      '--api <url>',
      'ask a running Cairn HTTP API to reindex its data folder (default: $CAIRN_API_URL)',
    )
    .option(
      '--api-key <key>',
      'API key for --api, one that may use every namespace (default: $CAIRN_API_KEY)',
    )
    .addOption(json())
    .action(run(lazy(() => import('./commands/reindex.js'), 'reindexCommand')));

  program
    .command('consolidate')
    .description(
      'merge near-duplicates (same text, or cosine >= 0.95) into the newer memory now; the writer also does every 5 minutes',
    )
    .argument('[ids...]', 'with --undo: the merged memories to bring back (default: all of the namespace)')
    .option('-n, --namespace <ns>', 'only this namespace (default: every namespace)')
    .option('--dry-run', 'list what would merge, merge nothing')
    .option('--undo', 'bring merged memories back; the job never merges them again')
    .option('--list', "list the namespace's merges, newest first")
    .option('--limit <n>', 'with --list: how many (default 100)')
    .addOption(dataDir())
    .option('--api <url>', 'use a Cairn HTTP API instead of a data folder (default: $CAIRN_API_URL)')
    .option('--api-key <key>', 'API key for --api (default: $CAIRN_API_KEY)')
    .addOption(json())
    .action(run(lazy(() => import('./commands/hygiene.js'), 'consolidateCommand')));

  program
    .command('prune')
    .description(
      'apply a pruning policy now: of a fact slot or kind, keep the --cap most used and delete the rest, never what --min-age or --min-access protects',
    )
    .option('-n, --namespace <ns>', 'namespace')
    .option('--slot <slot>', 'the facts of this slot')
    .option('--kind <kind>', 'the memories of this kind')
    .option('--cap <n>', 'live memories kept (most accessed, then most recently, then newest)')
    .option('--min-age <duration>', 'protect memories younger than this (30d, 12h)')
    .option('--min-access <n>', 'protect memories searched or fetched at least this often')
    .option('--dry-run', 'list what would be deleted, delete nothing')
    .addOption(dataDir())
    .option('--api <url>', 'use a Cairn HTTP API instead of a data folder (default: $CAIRN_API_URL)')
    .option('--api-key <key>', 'API key for --api (default: $CAIRN_API_KEY)')
    .addOption(json())
    .action(run(lazy(() => import('./commands/hygiene.js'), 'pruneCommand')));

  program
    .command('spaces')
    .description('list embedding spaces, or activate / drop one')
    .argument('[action]', 'list (default), activate or drop')
    .argument('[id]', 'the space id, e.g. cairn-hash-v1/384')
    .option('--force', 'activate even if the space still lacks vectors')
    .addOption(dataDir())
    .option('--api <url>', 'manage the spaces of a running Cairn HTTP API (default: $CAIRN_API_URL)')
    .option(
      '--api-key <key>',
      'API key for --api, one that may use every namespace (default: $CAIRN_API_KEY)',
    )
    .addOption(json())
    .action(run(lazy(() => import('./commands/spaces.js'), 'spacesCommand')));

  program
    .command('dead-letters')
    .description('jobs that failed for good, with their reasons (needs REDIS_URL)')
    .option('--retry', 'put every dead-lettered job back in its queue')
    .option('--limit <n>', 'jobs to list', '100')
    .addOption(json())
    .action(run(lazy(() => import('./commands/worker.js'), 'deadLettersCommand')));

  program
    .command('mcp')
    .description(
      'serve the memory tools (mem_search, mem_timeline, mem_get, mem_save, mem_context) to a coding agent over stdio',
    )
    .option(
      '-n, --namespace <ns>',
      'default namespace of the tools (default: derived from the git repository)',
    )
    .addOption(dataDir())
    .option('--api <url>', 'use a Cairn HTTP API instead of a data folder (default: $CAIRN_API_URL)')
    .option('--api-key <key>', 'API key for --api (default: $CAIRN_API_KEY)')
    .option(
      '--namespace-prefix <prefix>',
      'put the derived namespace under this prefix, e.g. team/ for a key scoped to team/* (default: $CAIRN_NAMESPACE_PREFIX)',
    )
    .action(run(lazy(() => import('./commands/mcp.js'), 'mcpCommand')));

  const hooks = program
    .command('hooks')
    .description(
      'Claude Code capture hooks: context at session start, tool calls as observations, a summary per session',
    );
  const scope = () =>
    new Option(
      '--scope <scope>',
      'user (~/.claude/settings.json), project (.claude/settings.json) or local (.claude/settings.local.json)',
    )
      .choices(['user', 'project', 'local'])
      .default('user');
  hooks
    .command('install')
    .description(
      "write Cairn's hooks into Claude Code's settings, keeping every other setting and hook (idempotent)",
    )
    .addOption(scope())
    .option(
      '-n, --namespace <ns>',
      'pin the namespace (default: derived from the git repository, as cairn mcp does)',
    )
    .option(
      '--namespace-prefix <prefix>',
      'put the derived namespace under this prefix (default: $CAIRN_NAMESPACE_PREFIX)',
    )
    .addOption(dataDir())
    .option(
      '--api <url>',
      'send memories to this Cairn HTTP API (default: $CAIRN_API_URL); the key stays in $CAIRN_API_KEY',
    )
    .option(
      '--max-tokens <n>',
      'token budget of the context printed at session start',
      String(DEFAULT_HOOK_MAX_TOKENS),
    )
    .option(
      '--timeout <s>',
      'seconds a hook may take before it gives up and lets the agent go on',
      String(DEFAULT_HOOK_TIMEOUT_S),
    )
    .option(
      '--command <cmd>',
      'how Claude Code starts cairn (default: this node and this CLI, by absolute path)',
    )
    .option(
      '--async',
      'run the tool-call hooks in the background (Claude Code async hooks): no tool call waits',
    )
    .addOption(json())
    .action(run(lazy(() => import('./commands/hooks.js'), 'hooksInstallCommand')));
  hooks
    .command('uninstall')
    .description("remove exactly Cairn's hooks from Claude Code's settings")
    .addOption(scope())
    .addOption(json())
    .action(run(lazy(() => import('./commands/hooks.js'), 'hooksUninstallCommand')));
  hooks
    .command('run')
    .description(
      'run one hook on the JSON payload Claude Code sends on stdin; always exits 0 (a failure is one line on stderr)',
    )
    .argument(
      '[event]',
      "session-start, post-tool-use, post-tool-use-failure, stop or session-end (default: the payload's hook_event_name)",
    )
    .option('-n, --namespace <ns>', 'namespace (default: derived from the git repository, as cairn mcp does)')
    .option(
      '--namespace-prefix <prefix>',
      'put the derived namespace under this prefix (default: $CAIRN_NAMESPACE_PREFIX)',
    )
    .addOption(dataDir())
    .option('--api <url>', 'use a Cairn HTTP API instead of a data folder (default: $CAIRN_API_URL)')
    .option('--api-key <key>', 'API key for --api (default: $CAIRN_API_KEY)')
    .option('--max-tokens <n>', 'session-start: token budget of the context', String(DEFAULT_HOOK_MAX_TOKENS))
    .option('-q, --query <text>', 'session-start: also what is relevant to this, beside the recent summaries')
    .option('--timeout <s>', 'seconds before the hook gives up (and exits 0)', String(DEFAULT_HOOK_TIMEOUT_S))
    .action(run(lazy(() => import('./commands/hooks.js'), 'hooksRunCommand')));

  program
    .command('serve')
    .description(
      'start the HTTP API (OpenAPI docs at /docs); API keys from CAIRN_API_KEYS or CAIRN_API_KEYS_FILE',
    )
    .option('-p, --port <n>', 'port (0: any free one)', '7411')
    .option('--host <h>', 'address to bind', '127.0.0.1')
    .addOption(dataDir())
    .option('--no-auth', 'serve without API keys (refused unless --host is a loopback address)')
    .option('--demo', 'load the sample corpus into an empty data folder first')
    .option('--rate-limit <n>', 'requests per minute per key (per process)', '6000')
    .option('--processes <n>', 'HTTP processes sharing the port (searches use that many cores)', '1')
    .action(run(lazy(() => import('./commands/serve.js'), 'serveCommand')));

  program
    .command('demo')
    .description('ingest the sample corpus and show explained hybrid searches')
    .addOption(dataDir())
    .action(run(lazy(() => import('./commands/demo.js'), 'demoCommand')));

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
