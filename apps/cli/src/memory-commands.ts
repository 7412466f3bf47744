import { type Command, Option } from 'commander';
import { type CommandKit, collect, lazy } from './command-kit.js';

/** The commands that write and read memories: ingest, search, add, list, context, export, import, get, timeline, delete, stats. */
export function addMemoryCommands(program: Command, { dataDir, json, run }: CommandKit): void {
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
}
