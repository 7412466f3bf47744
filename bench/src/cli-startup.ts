// How soon a fresh `cairn` process answers: one-shot commands, each run as a new process, two or more CLI
// builds alternating, median wall time over the rounds. `hooks run` is a Claude Code PostToolUse payload on
// stdin, captured into an embedded data folder; `add` stores one memory; `search` asks one query (--json) of
// a data folder you give (e.g. the synthetic corpus after `cairn ingest`).
// Each build gets data folders of its own: a newer build migrates a folder, and an older one then refuses
// it. So `--search-dir` is given once per build (`label=path`, copies of one folder), or once for one build.
// Usage: node bench/dist/cli-startup.js --cli new=apps/cli/dist/main.js --cli base=/tmp/base/apps/cli/dist/main.js
//        [--search-dir new=D1 --search-dir base=D2 --namespace acme/platform --query "…"] [--rounds 7]
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: {
    cli: { type: 'string', multiple: true, default: ['new=apps/cli/dist/main.js'] },
    'search-dir': { type: 'string', multiple: true },
    namespace: { type: 'string', default: 'acme/platform' },
    query: { type: 'string', default: 'redis connection timeout' },
    rounds: { type: 'string', default: '7' },
  },
});
const builds = values.cli.map((spec) => {
  const [label, path] = spec.includes('=') ? (spec.split('=') as [string, string]) : [spec, spec];
  return { label, main: resolve(path) };
});

/** Each build's search folder: `label=path` per build, or one bare path when there is one build. */
const searchDirs = new Map<string, string>();
for (const spec of values['search-dir'] ?? []) {
  const eq = spec.indexOf('=');
  const label = eq > 0 && builds.some((b) => b.label === spec.slice(0, eq)) ? spec.slice(0, eq) : null;
  if (label) searchDirs.set(label, resolve(spec.slice(eq + 1)));
  else if (builds.length === 1) searchDirs.set(builds[0]!.label, resolve(spec));
  else
    throw new Error(
      `--search-dir ${spec}: give one per build, as label=path (a newer build migrates a folder)`,
    );
}
if (searchDirs.size > 0 && searchDirs.size < builds.length)
  throw new Error('--search-dir: give one folder per build (label=path)');

const work = mkdtempSync(join(tmpdir(), 'cairn-startup-'));
const repo = join(work, 'repo');
mkdirSync(repo);
execFileSync('git', ['init', '-q', repo]);
const payload = JSON.stringify({
  session_id: 's1',
  transcript_path: join(work, 's1.jsonl'),
  cwd: repo,
  permission_mode: 'default',
  hook_event_name: 'PostToolUse',
  tool_name: 'Bash',
  tool_use_id: 't1',
  tool_input: { command: 'pnpm test', description: 'run the tests' },
  tool_response: { stdout: 'ok', stderr: '', interrupted: false, isImage: false },
});

interface Command {
  name: string;
  args: (label: string) => string[];
  input?: string;
  env?: (label: string) => Record<string, string>;
}
const commands: Command[] = [
  { name: '`cairn --version`', args: () => ['--version'] },
  {
    name: '`cairn hooks run` (PostToolUse)',
    args: () => ['hooks', 'run'],
    input: payload,
    env: (label) => ({ CAIRN_DATA_DIR: join(work, `hooks-data-${label}`) }),
  },
  {
    name: '`cairn add`',
    args: (label) => [
      'add',
      'the deploy target is fly.io',
      '-n',
      'demo',
      '--data-dir',
      join(work, `add-data-${label}`),
    ],
  },
];
if (searchDirs.size > 0)
  commands.push({
    name: '`cairn search --json` (one query)',
    args: (label) => [
      'search',
      values.query,
      '-n',
      values.namespace,
      '--data-dir',
      searchDirs.get(label)!,
      '--json',
    ],
  });

const ms: Record<string, Record<string, number[]>> = {};
for (let round = 0; round < Number(values.rounds); round++)
  for (const c of commands)
    for (const b of builds) {
      const t0 = performance.now();
      const r = spawnSync(process.execPath, [b.main, ...c.args(b.label)], {
        input: c.input,
        cwd: repo,
        env: { ...process.env, ...c.env?.(b.label) },
        encoding: 'utf8',
      });
      const took = performance.now() - t0;
      // A capture hook exits 0 whatever happens (it must never fail the agent's turn): its stderr tells.
      if (r.status !== 0 || (c.input !== undefined && r.stderr.trim() !== ''))
        throw new Error(`${b.label}: ${c.name} exited ${r.status}: ${r.stderr.slice(0, 400)}`);
      const byBuild = ms[c.name] ?? {};
      ms[c.name] = byBuild;
      byBuild[b.label] = [...(byBuild[b.label] ?? []), took];
    }
rmSync(work, { recursive: true, force: true });

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
console.log(
  `| command (fresh process, median of ${values.rounds}) | ${builds.map((b) => b.label).join(' | ')} |`,
);
console.log(`|---|${builds.map(() => '---:').join('|')}|`);
for (const [name, by] of Object.entries(ms))
  console.log(
    `| ${name} | ${builds.map((b) => `${(median(by[b.label]!) / 1000).toFixed(2)} s`).join(' | ')} |`,
  );
