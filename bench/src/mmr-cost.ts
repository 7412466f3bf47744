// What one search with MMR on, at the widest page and pool the API takes, costs the thread that serves it:
// a namespace of N memories (2,000 by default), searched with k 100, a candidate pool of 1,000 and a lambda
// of 0.01, the request a security review found holding a server's thread for 2.5 s. In-process, warm, a
// few rounds: the figure is the search's own time. Usage: cd bench && npx tsc -p tsconfig.build.json && cd
// .. && node bench/dist/mmr-cost.js [N] [rounds]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CairnEngine } from '@cairn/engine';
import { gitRevision } from './git-revision.js';

const WORDS =
  'auth deploy cache build queue worker index token session agent memory vector graph shard lease redis sqlite'.split(
    ' ',
  );

async function main(): Promise<void> {
  const n = Number(process.argv[2] ?? 2_000);
  const rounds = Number(process.argv[3] ?? 5);
  const dir = mkdtempSync(join(tmpdir(), 'cairn-mmr-cost-'));
  const engine = await CairnEngine.open({ dataDir: dir, persistIntervalMs: 0 });
  try {
    engine.ingest(
      Array.from({ length: n }, (_, i) => ({
        namespace: 'team/alice',
        id: `m${i}`,
        text: `${WORDS[i % 17]} ${WORDS[(i * 7) % 17]} ${WORDS[(i * 11) % 17]} note w${i % 13} item ${i}`,
      })),
    );
    await engine.drain();
    const request = {
      namespace: 'team/alice',
      query: 'auth deploy cache build queue worker w12',
      k: 100,
      candidatePool: 1_000,
      mmrLambda: 0.01,
      explain: 'none' as const,
    };
    const times: number[] = [];
    let hits = 0;
    for (let r = 0; r < rounds; r++) {
      const t = performance.now();
      hits = (await engine.search(request)).hits.length;
      times.push(performance.now() - t);
    }
    console.log(
      JSON.stringify({
        revision: gitRevision(),
        memories: n,
        hits,
        ms: times.map((t) => Math.round(t)),
      }),
    );
  } finally {
    await engine.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
