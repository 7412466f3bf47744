// How long one batch of vectors holds the writer's thread, by what the embedded loop does per batch: read
// the pending memories, look their content hashes up, store the vectors (whole, or in slices of one
// transaction each), with SQLite checkpointing inline (its default) or not at all on this connection (what
// a writer with background checkpoints does). Runs on a copy of an existing data folder, so the folder's
// size and page layout are a real one's.
// Usage: node bench/dist/write-stalls.js --data-dir D [--batch 512] [--slices 512,128,64] [--batches 40]
import { cpSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { embeddingSpaceOf } from '@cairn/core';
import { HashingEmbedder } from '@cairn/embed';
import { MemoryStore } from '@cairn/store';
import { gitRevision } from './git-revision.js';

const { values } = parseArgs({
  options: {
    'data-dir': { type: 'string' },
    batch: { type: 'string', default: '512' },
    slices: { type: 'string', default: '512,128,64' },
    batches: { type: 'string', default: '40' },
    dims: { type: 'string', default: '256' },
  },
});
if (!values['data-dir']) {
  console.error(
    'usage: node bench/dist/write-stalls.js --data-dir D [--batch 512] [--slices 512,128,64] [--batches 40]\n' +
      'D: an existing Cairn data folder (it is copied, not changed); build one with `node bench/dist/api.js --data-dir D` (the synthetic corpus: 100,000 memories stored, embedded and indexed in about 1.5 min, then its API benchmark runs; later runs reuse the folder)',
  );
  process.exit(2);
}
const BATCH = Number(values.batch);
const BATCHES = Number(values.batches);
const embedder = new HashingEmbedder({ dimensions: Number(values.dims) });
const space = embeddingSpaceOf(embedder);

const median = (a: number[]) => [...a].sort((x, y) => x - y)[a.length >> 1]!;
const p90 = (a: number[]) => [...a].sort((x, y) => x - y)[Math.floor(a.length * 0.9)]!;

console.log(
  `# ${BATCHES} batches of ${BATCH} memories into a new ${space.id} space of a copy of ${values['data-dir']}; revision ${gitRevision()}; Node ${process.version}`,
);
console.log(
  '| checkpoints | slice | pending read ms | hash lookup ms | store ms (whole batch) | longest slice ms, median / p90 |',
);
console.log('|---|---:|---:|---:|---:|---:|');
for (const checkpoints of ['inline', 'off (background)'] as const) {
  for (const slice of values.slices.split(',').map(Number)) {
    const dir = mkdtempSync(join(tmpdir(), 'cairn-write-stalls-'));
    try {
      for (const f of ['cairn.db', 'cairn.db-wal'])
        if (existsSync(join(values['data-dir'], f))) cpSync(join(values['data-dir'], f), join(dir, f));
      const store = new MemoryStore({ path: join(dir, 'cairn.db'), catalog: false });
      if (checkpoints !== 'inline') store.db.pragma('wal_autocheckpoint = 0');
      store.spaces.ensureSpace(space, { embedder: `hash:${space.dimensions}`, state: 'building' });
      const t = {
        pending: [] as number[],
        lookup: [] as number[],
        store: [] as number[],
        longest: [] as number[],
      };
      for (let b = 0; b < BATCHES; b++) {
        let t0 = performance.now();
        const pending = store.embeddings.pending(space.id, BATCH);
        t.pending.push(performance.now() - t0);
        if (pending.length === 0) break;
        t0 = performance.now();
        store.embeddings.vectorsByContentHash(
          space,
          pending.map((p) => p.contentHash),
        );
        t.lookup.push(performance.now() - t0);
        const items = pending.map((memory) => ({ memory, vector: embedder.embedOne(memory.text) }));
        let longest = 0;
        t0 = performance.now();
        for (let i = 0; i < items.length; i += slice) {
          const t1 = performance.now();
          const part = items.slice(i, i + slice);
          store.embeddings.put(space, part, part.at(-1)!.memory.changeSeq);
          longest = Math.max(longest, performance.now() - t1);
        }
        t.store.push(performance.now() - t0);
        t.longest.push(longest);
      }
      store.close();
      console.log(
        `| ${checkpoints} | ${slice} | ${median(t.pending).toFixed(1)} | ${median(t.lookup).toFixed(1)} | ${median(t.store).toFixed(1)} | ${median(t.longest).toFixed(1)} / ${p90(t.longest).toFixed(1)} |`,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
}
