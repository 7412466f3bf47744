// What multi-route recall costs a search: one namespace of N memories, each with one named field, searched
// with the routes off (routeWeight 0) and on (the defaults), then with each half of the routes alone, in
// one warm engine, interleaved twice. In-process: the figure is the search's own time, without a process
// start or HTTP. Usage: cd bench && npx tsc -p tsconfig.build.json && cd .. && node bench/dist/route-speed.js [N]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SearchRequest } from '@cairn/core';
import { CairnEngine } from '@cairn/engine';
import { gitRevision } from './git-revision.js';
import { summarize } from './percentiles.js';

const WORDS =
  'alpha beta gamma delta redis auth deploy billing search token cache queue worker index shard lease vector lexical route field'.split(
    ' ',
  );
const pick = (i: number, k: number) =>
  Array.from({ length: k }, (_, j) => WORDS[(i * 7 + j * 13 + (i >> j)) % WORDS.length]).join(' ');

async function main(): Promise<void> {
  const n = Number(process.argv[2] ?? 50_000);
  const dir = mkdtempSync(join(tmpdir(), 'cairn-route-speed-'));
  const engine = await CairnEngine.open({ dataDir: dir, waitForIndex: true, persistIntervalMs: 0 });
  try {
    const t0 = performance.now();
    for (let b = 0; b < n; b += 1_000) {
      engine.ingest(
        Array.from({ length: Math.min(1_000, n - b) }, (_, j) => {
          const i = b + j;
          return {
            namespace: 'ns',
            id: `m${i}`,
            text: `memory ${i} ${pick(i, 6)} t${i}x`,
            fields: { facts: `fact ${pick(i + 3, 5)} f${i}y` },
          };
        }),
      );
    }
    await engine.drain();
    const ingestS = (performance.now() - t0) / 1000;
    const queries = Array.from({ length: 300 }, (_, i) => `${pick(i * 3, 2)} f${i * 97}y`);
    const rows: Array<[string, Partial<SearchRequest>]> = [
      ['routes off (routeWeight 0)', { routeWeight: 0 }],
      ['routes on (defaults)', {}],
      ['lexical routes only (vector leg off)', { weights: { vector: 0 } }],
      ['vector routes only (lexical leg off)', { weights: { lexical: 0 } }],
      ['vector leg alone, routes off', { weights: { lexical: 0 }, routeWeight: 0 }],
    ];
    const lines = [
      `Multi-route search cost: ${n.toLocaleString('en-US')} memories with one field each (ingested and embedded in ${ingestS.toFixed(1)} s); 300 queries, k 10, two interleaved rounds; revision ${gitRevision()}`,
      '',
      '| configuration | round | p50 ms | p99 ms |',
      '|---|---:|---:|---:|',
    ];
    for (const round of [1, 2]) {
      for (const [label, opts] of rows) {
        const ms: number[] = [];
        for (const q of queries) {
          const s = performance.now();
          await engine.search({ namespace: 'ns', query: q, k: 10, ...opts });
          ms.push(performance.now() - s);
        }
        const sum = summarize(ms);
        lines.push(`| ${label} | ${round} | ${sum.p50.toFixed(2)} | ${sum.p99.toFixed(2)} |`);
      }
    }
    process.stdout.write(`${lines.join('\n')}\n`);
  } finally {
    await engine.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
