// Texts per second of the built-in hashing embedder, on one thread, over two kinds of text: the LoCoMo dev
// turns (short conversational English) and the speed benchmark's synthetic memories (identifiers, code
// words). `--against <path to another build's @cairn/embed dist/index.js>` runs that build in the same
// process, rounds interleaved, and checks that both give the same floats (the model id promises it).
// Usage: node bench/dist/embedder-speed.js [--against /tmp/base/packages/embed/dist/index.js] [--rounds 6]
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { HashingEmbedder } from '@cairn/embed';
import { gitRevision } from './git-revision.js';
import { loadLocomo } from './locomo-data.js';
import { generateCorpus } from './synthetic-corpus.js';

const { values } = parseArgs({
  options: {
    against: { type: 'string' },
    rounds: { type: 'string', default: '6' },
    texts: { type: 'string', default: '20000' },
    dims: { type: 'string', default: '384' },
  },
});
const ROUNDS = Number(values.rounds);
const DIMS = Number(values.dims);
const LOCOMO = resolve(import.meta.dirname, '../../../shared/eval/locomo-dev.json');

interface Embeds {
  embedOne(text: string): Float32Array;
}

const sets: Array<{ name: string; texts: string[] }> = [];
if (existsSync(LOCOMO))
  sets.push({ name: 'LoCoMo dev turns', texts: loadLocomo(LOCOMO).turns.map((t) => t.text) });
else console.warn(`LoCoMo data not found at ${LOCOMO}: only the synthetic corpus is measured`);
sets.push({
  name: 'synthetic memories',
  texts: generateCorpus({ mainDocs: Number(values.texts) })
    .memories.slice(0, Number(values.texts))
    .map((m) => m.text),
});

const builds: Array<{ name: string; embedder: Embeds }> = [
  { name: 'this build', embedder: new HashingEmbedder({ dimensions: DIMS }) },
];
if (values.against) {
  const mod = (await import(pathToFileURL(resolve(values.against)).href)) as {
    HashingEmbedder: new (o: { dimensions: number }) => Embeds;
  };
  builds.push({ name: values.against, embedder: new mod.HashingEmbedder({ dimensions: DIMS }) });
}

console.log(
  `# hashing embedder, ${DIMS}-d, one thread; ${ROUNDS} interleaved rounds; revision ${gitRevision()}; Node ${process.version}`,
);
for (const set of sets) {
  const chars = set.texts.reduce((n, t) => n + t.length, 0) / set.texts.length;
  const ms = builds.map(() => 0);
  for (let r = 0; r < ROUNDS; r++) {
    for (const [i, b] of builds.entries()) {
      const t0 = performance.now();
      for (const t of set.texts) b.embedder.embedOne(t);
      // The first round warms the JIT: not counted.
      if (r > 0) ms[i]! += performance.now() - t0;
    }
  }
  let same = true;
  if (builds.length > 1) {
    for (const t of set.texts) {
      const a = builds[0]!.embedder.embedOne(t);
      const b = builds[1]!.embedder.embedOne(t);
      if (a.length !== b.length || a.some((x, j) => x !== b[j])) {
        same = false;
        break;
      }
    }
  }
  console.log(`\n${set.name}: ${set.texts.length} texts, ${chars.toFixed(0)} characters on average`);
  for (const [i, b] of builds.entries()) {
    const perSecond = (set.texts.length * (ROUNDS - 1)) / (ms[i]! / 1000);
    console.log(`  ${b.name.padEnd(48)} ${Math.round(perSecond).toLocaleString('en')} texts/s`);
  }
  if (builds.length > 1) {
    console.log(`  ratio ${(ms[1]! / ms[0]!).toFixed(2)}×; identical vectors: ${same ? 'yes' : 'NO'}`);
    if (!same) process.exitCode = 1;
  }
}
