import { type Command, Option } from 'commander';
import { type CommandKit, lazy } from './command-kit.js';
import { DEFAULT_HOOK_MAX_TOKENS, DEFAULT_HOOK_TIMEOUT_S } from './hooks/defaults.js';

/**
 * The commands that run and look after a data folder or a deployment: check, compact, worker, reindex,
 * consolidate, prune, spaces, dead-letters, mcp, hooks, serve, demo.
 */
export function addOperatorCommands(program: Command, { dataDir, json, run }: CommandKit): void {
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
}
