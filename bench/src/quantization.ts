// What storing vectors in fewer bits would cost in quality, on the LoCoMo dev conversations: every stored
// vector goes through f16 or scaled-i8 and back before it is indexed (queries stay f32, as they would be),
// so each row is what search would rank from that storage. In-process (an engine per row), because f16 and
// i8 storage are not options a user can set: this decides whether they should become one.
// Usage: node bench/dist/quantization.js [path/to/locomo-dev.json] [--dims 384,768]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { TermWeightedEmbedder } from '@cairn/core';
import { HashingEmbedder } from '@cairn/embed';
import { CairnEngine } from '@cairn/engine';
import { loadLocomo } from './locomo-data.js';
import { meanScores, scoreRanking } from './retrieval-metrics.js';

const DEFAULT_PATH = resolve(import.meta.dirname, '../../../shared/eval/locomo-dev.json');

type Storage = 'f32' | 'f16' | 'i8';

/** Rounds to the nearest IEEE half (10-bit mantissa), as a Float16Array store would. */
function toHalf(x: number): number {
  if (x === 0 || !Number.isFinite(x)) return x;
  const e = Math.floor(Math.log2(Math.abs(x)));
  // Half keeps 10 fraction bits; below 2^-14 it is subnormal with a fixed step of 2^-24.
  const step = e < -14 ? 2 ** -24 : 2 ** (e - 10);
  return Math.round(x / step) * step;
}

/** What a stored vector becomes in `storage` and back: f16, or i8 scaled by the vector's largest |x|. */
export function roundTrip(v: Float32Array, storage: Storage): Float32Array {
  if (storage === 'f32') return v;
  const out = new Float32Array(v.length);
  if (storage === 'f16') {
    for (let i = 0; i < v.length; i++) out[i] = toHalf(v[i]!);
    return out;
  }
  let max = 0;
  for (let i = 0; i < v.length; i++) max = Math.max(max, Math.abs(v[i]!));
  const scale = max / 127 || 1;
  for (let i = 0; i < v.length; i++) out[i] = Math.round(v[i]! / scale) * scale;
  return out;
}

/** The hashing embedder with its stored vectors passed through `storage`; queries stay full precision. */
class StoredAs implements TermWeightedEmbedder {
  readonly modelId: string;
  readonly dimensions: number;
  readonly similarityFloor: number | undefined;
  readonly fusionWeight: number | undefined;

  constructor(
    private readonly inner: HashingEmbedder,
    private readonly storage: Storage,
  ) {
    this.modelId = `${inner.modelId}+${storage}`;
    this.dimensions = inner.dimensions;
    this.similarityFloor = inner.similarityFloor;
    this.fusionWeight = inner.fusionWeight;
  }

  async embed(texts: readonly string[]): Promise<Float32Array[]> {
    return (await this.inner.embed(texts)).map((v) => roundTrip(v, this.storage));
  }

  weightableTerms(text: string): string[] {
    return this.inner.weightableTerms(text);
  }

  embedWeighted(text: string, weights: ReadonlyMap<string, number>): Promise<Float32Array> {
    return this.inner.embedWeighted(text, weights);
  }
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const dimsAt = args.indexOf('--dims');
  const dims = dimsAt >= 0 ? args[dimsAt + 1]!.split(',').map(Number) : [384];
  const path = args.find((a, i) => !a.startsWith('--') && args[i - 1] !== '--dims') ?? DEFAULT_PATH;
  const data = loadLocomo(path);
  const f = (x: number) => x.toFixed(3);
  const lines = [
    `Stored-vector precision on LoCoMo (${data.turns.length} turns, ${data.questions.length} questions, k = 10, in-process)`,
    '',
    '| dims | storage | bytes a vector | vector leg alone: recall@10 / hit@1 | defaults (fused): recall@10 / hit@1 |',
    '|---:|---|---:|---:|---:|',
  ];
  for (const d of dims) {
    for (const storage of ['f32', 'f16', 'i8'] as const) {
      const dir = mkdtempSync(join(tmpdir(), 'cairn-quant-'));
      const engine = await CairnEngine.open({
        dataDir: dir,
        embedder: new StoredAs(new HashingEmbedder({ dimensions: d }), storage),
        waitForIndex: true,
        persistIntervalMs: 0,
        consolidation: false,
        trackAccess: false,
      });
      try {
        engine.ingest(data.turns);
        await engine.drain();
        const score = async (options: Record<string, unknown>) => {
          const rows = [];
          for (const q of data.questions) {
            const res = await engine.search({
              namespace: q.namespace,
              query: q.question,
              k: 10,
              now: data.lastSessionTs.get(q.namespace)!,
              ...options,
            });
            rows.push(
              scoreRanking(
                res.hits.map((h) => h.id),
                q.evidence,
              ),
            );
          }
          return meanScores(rows);
        };
        const vec = await score({ weights: { lexical: 0 } });
        const fused = await score({});
        const bytes = storage === 'f32' ? d * 4 : storage === 'f16' ? d * 2 : d + 4;
        lines.push(
          `| ${d} | ${storage} | ${bytes} | ${f(vec.recall10)} / ${f(vec.hit1)} | ${f(fused.recall10)} / ${f(fused.hit1)} |`,
        );
      } finally {
        await engine.close();
        rmSync(dir, { recursive: true, force: true });
      }
    }
  }
  process.stdout.write(`${lines.join('\n')}\n`);
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
