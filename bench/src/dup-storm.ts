// A dup storm through the CLI as a user runs it: `cairn ingest` of N memories that repeat a handful of
// texts (an agent logging "heartbeat ok" over and over), against N memories of distinct texts, each into
// a fresh data folder, timed end to end (stored, embedded and indexed: the command returns then).
// Usage: cd bench && npx tsc -p tsconfig.build.json && cd .. && node bench/dist/dup-storm.js [N] [--cli path/to/main.js]
//   --cli runs another build's CLI (an earlier revision's apps/cli/dist/main.js) on the same files, in the same run.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gitRevision } from './git-revision.js';
import { CLI_SCRIPT } from './serve-process.js';

const TEXTS = [
  'the deploy failed again',
  'retrying the job',
  'cache miss on the auth token',
  'worker restarted',
  'heartbeat ok',
];

function ingestSeconds(cli: string, file: string, dir: string): number {
  const t0 = performance.now();
  execFileSync(process.execPath, [cli, 'ingest', file, '--data-dir', join(dir, `data-${Math.random()}`)], {
    stdio: 'ignore',
  });
  return (performance.now() - t0) / 1000;
}

function main(): void {
  const args = process.argv.slice(2);
  const cliAt = args.indexOf('--cli');
  const other = cliAt >= 0 ? args.splice(cliAt, 2)[1] : undefined;
  const n = Number(args[0] ?? 100_000);
  const dir = mkdtempSync(join(tmpdir(), 'cairn-dup-storm-'));
  try {
    const line = (text: string, id: string) => `${JSON.stringify({ namespace: 'storm', id, text })}\n`;
    const dup = join(dir, 'dup.jsonl');
    const distinct = join(dir, 'distinct.jsonl');
    writeFileSync(dup, Array.from({ length: n }, (_, i) => line(TEXTS[i % TEXTS.length]!, `d${i}`)).join(''));
    writeFileSync(
      distinct,
      Array.from({ length: n }, (_, i) =>
        line(`distinct memory ${i} about ${TEXTS[i % TEXTS.length]}`, `u${i}`),
      ).join(''),
    );
    const rows = [['this revision', CLI_SCRIPT] as const, ...(other ? [['--cli', other] as const] : [])];
    const out = [
      `Dup storm through \`cairn ingest\`: ${n.toLocaleString('en-US')} memories over ${TEXTS.length} texts against ${n.toLocaleString('en-US')} distinct texts; revision ${gitRevision()}`,
      '',
      '| CLI | distinct texts s (memories/s) | dup storm s (memories/s) | dup storm / distinct |',
      '|---|---:|---:|---:|',
    ];
    for (const [label, cli] of rows) {
      const a = ingestSeconds(cli, distinct, dir);
      const b = ingestSeconds(cli, dup, dir);
      out.push(
        `| ${label === '--cli' ? cli : label} | ${a.toFixed(1)} (${Math.round(n / a)}) | ${b.toFixed(1)} (${Math.round(n / b)}) | ${(b / a).toFixed(2)} |`,
      );
    }
    process.stdout.write(`${out.join('\n')}\n`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

main();
