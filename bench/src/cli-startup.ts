// How soon a fresh `cairn` process answers: one-shot commands, each run as a new process, two or more CLI
// builds alternating, median wall time over the rounds. `hooks run` is a Claude Code PostToolUse payload on
// stdin, captured into an embedded data folder; `add` stores one memory; `search` asks one query (--json) of
// a data folder you give (e.g. the synthetic corpus after `cairn ingest`).
// Usage: node bench/dist/cli-startup.js --cli new=apps/cli/dist/main.js --cli base=/tmp/base/apps/cli/dist/main.js
//        [--search-dir D --namespace acme/platform --query "redis connection timeout"] [--rounds 7]
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: {
    cli: { type: 'string', multiple: true, default: ['new=apps/cli/dist/main.js'] },
    'search-dir': { type: 'string' },
    namespace: { type: 'string', default: 'acme/platform' },
    query: { type: 'string', default: 'redis connection timeout' },
    rounds: { type: 'string', default: '7' },
  },
});
const builds = values.cli.map((spec) => {
  const [label, path] = spec.includes('=') ? (spec.split('=') as [string, string]) : [spec, spec];
  return { label, main: resolve(path) };
});
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
const commands: Array<{ name: string; args: string[]; input?: string; env?: Record<string, string> }> = [
  { name: '`cairn --version`', args: ['--version'] },
  {
    name: '`cairn hooks run` (PostToolUse)',
    args: ['hooks', 'run'],
    input: payload,
    env: { CAIRN_DATA_DIR: join(work, 'hooks-data') },
  },
  {
    name: '`cairn add`',
    args: ['add', 'the deploy target is fly.io', '-n', 'demo', '--data-dir', join(work, 'add-data')],
  },
];
if (values['search-dir'])
  commands.push({
    name: '`cairn search --json` (one query)',
    args: [
      'search',
      values.query,
      '-n',
      values.namespace,
      '--data-dir',
      resolve(values['search-dir']),
      '--json',
    ],
  });

const ms: Record<string, Record<string, number[]>> = {};
for (let round = 0; round < Number(values.rounds); round++)
  for (const c of commands)
    for (const b of builds) {
      const t0 = performance.now();
      const r = spawnSync(process.execPath, [b.main, ...c.args], {
        input: c.input,
        cwd: repo,
        env: { ...process.env, ...c.env },
        encoding: 'utf8',
      });
      const took = performance.now() - t0;
      if (r.status !== 0)
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
