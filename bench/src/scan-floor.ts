// Exact vector scans against the machine's memory-bandwidth floor, and what the compute pool's round trip
// costs (issue 12: "exact scan within 1.3× of the memory-bandwidth floor"; "measure the pool's round-trip
// cost, and offload only what is worth it"). Everything in one process, one run, on seeded random unit
// vectors (an exact scan costs the same whatever the vectors say).
// Usage: node bench/dist/scan-floor.js [--n 100000] [--dims 384] [--reps 15]
import { availableParallelism, cpus } from 'node:os';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { ComputePool, exactTopKOnPool, VectorShard } from '@cairn/compute';
import { exactSearch, MetricKind } from 'usearch';
import { gitRevision } from './git-revision.js';
import { summarize } from './percentiles.js';
import { seededRandom } from './seeded-random.js';

const { values } = parseArgs({
  options: {
    n: { type: 'string', default: '100000' },
    dims: { type: 'string', default: '384' },
    reps: { type: 'string', default: '15' },
    k: { type: 'string', default: '50' },
  },
});
const N = Number(values.n);
const D = Number(values.dims);
const REPS = Number(values.reps);
const K = Number(values.k);
const BATCH = 16;

const ECHO_TASK = fileURLToPath(new URL('./tasks/echo-task.js', import.meta.url));
const SCAN_TASK = fileURLToPath(new URL('./tasks/exact-scan-task.js', import.meta.url));

/** `rows × D` unit vectors, f32 and the i8 copy Cairn's graphs hold (each component × 127). */
function matrices(rows: number, seed: number, shared: boolean) {
  const rand = seededRandom(seed);
  const f32 = new Float32Array(shared ? new SharedArrayBuffer(rows * D * 4) : new ArrayBuffer(rows * D * 4));
  const i8 = new Int8Array(shared ? new SharedArrayBuffer(rows * D) : new ArrayBuffer(rows * D));
  for (let r = 0; r < rows; r++) {
    let s = 0;
    for (let i = 0; i < D; i++) {
      const x = rand() * 2 - 1;
      f32[r * D + i] = x;
      s += x * x;
    }
    const inv = 1 / Math.sqrt(s);
    for (let i = 0; i < D; i++) {
      const x = f32[r * D + i]! * inv;
      f32[r * D + i] = x;
      i8[r * D + i] = Math.round(x * 127);
    }
  }
  return { f32, i8 };
}

/** Milliseconds of each of `reps` calls (after one unmeasured call). */
function time(reps: number, fn: () => unknown): number[] {
  fn();
  const out: number[] = [];
  for (let i = 0; i < reps; i++) {
    const t0 = performance.now();
    fn();
    out.push(performance.now() - t0);
  }
  return out;
}

async function timeAsync(reps: number, fn: () => Promise<unknown>): Promise<number[]> {
  await fn();
  const out: number[] = [];
  for (let i = 0; i < reps; i++) {
    const t0 = performance.now();
    await fn();
    out.push(performance.now() - t0);
  }
  return out;
}

const data = matrices(N, 42, false);
const queries = matrices(BATCH, 7, false);
const q1 = queries.f32.slice(0, D);
const q1i8 = queries.i8.slice(0, D);

// The floor: memchr over a buffer of the same size as the matrix, filled so its pages are real memory and
// holding no byte it looks for, so it reads every byte once, with the C library's SIMD, on one thread.
const floorOf = (bytes: number) => {
  const buf = Buffer.alloc(bytes, 1);
  return summarize(time(REPS, () => buf.indexOf(2))).p50;
};
const floorF32 = floorOf(N * D * 4);
const floorI8 = floorOf(N * D);

const rows: Array<{
  name: string;
  bytes: number;
  floor: number;
  p50: number;
  p99: number;
  perQuery: number;
}> = [];
const add = (name: string, bytes: number, floor: number, samples: number[], queriesPerCall = 1) => {
  const s = summarize(samples);
  rows.push({ name, bytes, floor, p50: s.p50, p99: s.p99, perQuery: s.p50 / queriesPerCall });
};

add(
  'usearch exact, f32, 1 query',
  N * D * 4,
  floorF32,
  time(REPS, () => exactSearch(data.f32, q1, D, K, MetricKind.Cos, 1)),
);
add(
  'usearch exact, i8, 1 query',
  N * D,
  floorI8,
  time(REPS, () => exactSearch(data.i8, q1i8, D, K, MetricKind.Cos, 1)),
);
add(
  `usearch exact, i8, batch of ${BATCH}`,
  N * D,
  floorI8,
  time(Math.max(3, REPS >> 2), () => exactSearch(data.i8, queries.i8, D, K, MetricKind.Cos, 1)),
  BATCH,
);
const jsLoop = () => {
  let best = -2;
  for (let r = 0; r < N; r++) {
    let s = 0;
    const o = r * D;
    for (let i = 0; i < D; i++) s += data.f32[o + i]! * q1[i]!;
    if (s > best) best = s;
  }
  return best;
};
add('plain JS loop, f32, 1 query', N * D * 4, floorF32, time(Math.max(3, REPS >> 2), jsLoop));

// Cairn's own kernels (packages/compute: WebAssembly SIMD built from AssemblyScript), each figure a whole
// top-k: the scan, the selection of the best k, the queries' encoding.
const rowsOf = (m: Float32Array) =>
  Array.from({ length: m.length / D }, (_, r) => m.subarray(r * D, (r + 1) * D));
const shards = {
  f32: new VectorShard({ dimensions: D, quantization: 'f32', capacity: N }),
  i8: new VectorShard({ dimensions: D, quantization: 'i8', capacity: N }),
};
shards.f32.append(rowsOf(data.f32));
shards.i8.append(rowsOf(data.f32));
const batch = rowsOf(queries.f32);
for (const q of ['f32', 'i8'] as const) {
  const bytes = N * shards[q].layout.stride;
  const floor = q === 'f32' ? floorF32 : floorI8;
  add(
    `Cairn SIMD exact, ${q}, 1 query`,
    bytes,
    floor,
    time(REPS, () => shards[q].topK([q1], K)),
  );
  add(
    `Cairn SIMD exact, ${q}, batch of ${BATCH} (4 queries a pass)`,
    bytes,
    floor,
    time(Math.max(3, REPS >> 2), () => shards[q].topK(batch, K)),
    BATCH,
  );
}

// The pool: one thread, as on this 2-core machine; its round trip, then a scan sent to it.
const pool = new ComputePool({ maxThreads: 1, niceIncrement: 0 });
const echo = summarize(await timeAsync(500, () => pool.run(ECHO_TASK, { vector: q1 })));
const shared = matrices(N, 42, true);
add(
  'usearch exact, i8, 1 query, on the pool (worker holds the matrix)',
  N * D,
  floorI8,
  await timeAsync(REPS, () =>
    pool.run(SCAN_TASK, { shard: 'main', matrix: shared.i8, queries: q1i8, dimensions: D, k: K }),
  ),
);
await pool.close();

// The shard scanned in place by the pool's threads (no copy), split into one range per thread and merged;
// both cores, so this can beat the one-thread floor.
const pool2 = new ComputePool({ maxThreads: 2, niceIncrement: 0 });
for (const q of ['f32', 'i8'] as const) {
  const bytes = N * shards[q].layout.stride;
  const floor = q === 'f32' ? floorF32 : floorI8;
  add(
    `Cairn SIMD exact, ${q}, 1 query, on the pool (2 threads over the shared shard)`,
    bytes,
    floor,
    await timeAsync(REPS, () => exactTopKOnPool(pool2, shards[q], [q1], K)),
  );
  add(
    `Cairn SIMD exact, ${q}, batch of ${BATCH}, on the pool (2 threads)`,
    bytes,
    floor,
    await timeAsync(Math.max(3, REPS >> 2), () => exactTopKOnPool(pool2, shards[q], batch, K)),
    BATCH,
  );
}
await pool2.close();

const fmt = (x: number) => (x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2));
const lines = [
  `Exact scans against the memory-bandwidth floor (${N.toLocaleString('en-US')} × ${D}-d, k ${K}; ${new Date().toISOString().slice(0, 10)}, revision ${gitRevision()})`,
  '',
  `Floor: one memchr over as many bytes, one thread: ${fmt(floorF32)} ms for the f32 matrix (${fmt((N * D * 4) / floorF32 / 1e6)} GB/s), ${fmt(floorI8)} ms for i8.`,
  '',
  '| scan | MB read | p50 ms | p99 ms | per query ms | GB/s | × floor |',
  '|---|---:|---:|---:|---:|---:|---:|',
  ...rows.map(
    (r) =>
      `| ${r.name} | ${fmt(r.bytes / 1e6)} | ${fmt(r.p50)} | ${fmt(r.p99)} | ${fmt(r.perQuery)} | ${fmt(r.bytes / r.perQuery / 1e6)} | ${fmt(r.perQuery / r.floor)} |`,
  ),
  '',
  `Pool round trip (a task that returns at once, a ${D}-d query as payload, 500 calls one after another): p50 ${fmt(echo.p50)} ms, p99 ${fmt(echo.p99)} ms.`,
  `Node ${process.version}, ${availableParallelism()} cores (${cpus()[0]?.model ?? 'unknown CPU'}).`,
];
console.log(lines.join('\n'));
