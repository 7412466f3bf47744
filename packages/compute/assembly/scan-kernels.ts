// SIMD scoring kernels for exact vector scans, compiled to WebAssembly (128-bit SIMD) by the package build
// with AssemblyScript. They run on any thread that instantiates the module against a shard's shared memory:
// the serving thread for small scans, the compute pool's workers for large ones.
//
// Every kernel writes one score per (row, query) into `out` and keeps no state, so threads never
// coordinate inside it. Rows are `stride` bytes apart (a multiple of 16, zero-padded past the last
// dimension, which leaves dot products unchanged); queries use the same padded layout. Top-k selection
// stays in JS: it is O(rows) compares against a threshold, a few percent of the scan.
//
// Why two accumulator sets and 64-byte steps in the f32 kernel: a single accumulator chains every
// add on the previous one, and the scan then waits on add latency instead of memory; four independent
// chains keep it at the memory-bandwidth floor (1.1-1.2x memchr, measured in bench/src/scan-floor.ts).

/** out[r] = dot(row r, query), f32 rows. */
export function scoreF32(base: usize, rows: i32, stride: usize, query: usize, out: usize): void {
  for (let r = 0; r < rows; r++) {
    const row = base + <usize>r * stride;
    let a0 = f32x4.splat(0);
    let a1 = f32x4.splat(0);
    let a2 = f32x4.splat(0);
    let a3 = f32x4.splat(0);
    let i: usize = 0;
    for (; i + 64 <= stride; i += 64) {
      a0 = f32x4.add(a0, f32x4.mul(v128.load(row + i), v128.load(query + i)));
      a1 = f32x4.add(a1, f32x4.mul(v128.load(row + i, 16), v128.load(query + i, 16)));
      a2 = f32x4.add(a2, f32x4.mul(v128.load(row + i, 32), v128.load(query + i, 32)));
      a3 = f32x4.add(a3, f32x4.mul(v128.load(row + i, 48), v128.load(query + i, 48)));
    }
    for (; i < stride; i += 16) a0 = f32x4.add(a0, f32x4.mul(v128.load(row + i), v128.load(query + i)));
    store<f32>(out + ((<usize>r) << 2), sumF32(f32x4.add(f32x4.add(a0, a1), f32x4.add(a2, a3))));
  }
}

/**
 * Four queries per pass over the rows (`queries` holds them `stride` bytes apart): each row is read from
 * memory once for four scores, so a batch costs about half a single query's scan per query.
 * out[r * 4 + q] = dot(row r, query q).
 */
export function scoreF32x4(base: usize, rows: i32, stride: usize, queries: usize, out: usize): void {
  const q1 = queries + stride;
  const q2 = q1 + stride;
  const q3 = q2 + stride;
  for (let r = 0; r < rows; r++) {
    const row = base + <usize>r * stride;
    let a0 = f32x4.splat(0);
    let a1 = f32x4.splat(0);
    let a2 = f32x4.splat(0);
    let a3 = f32x4.splat(0);
    for (let i: usize = 0; i < stride; i += 16) {
      const v = v128.load(row + i);
      a0 = f32x4.add(a0, f32x4.mul(v, v128.load(queries + i)));
      a1 = f32x4.add(a1, f32x4.mul(v, v128.load(q1 + i)));
      a2 = f32x4.add(a2, f32x4.mul(v, v128.load(q2 + i)));
      a3 = f32x4.add(a3, f32x4.mul(v, v128.load(q3 + i)));
    }
    const o = out + ((<usize>r) << 4);
    store<f32>(o, sumF32(a0));
    store<f32>(o, sumF32(a1), 4);
    store<f32>(o, sumF32(a2), 8);
    store<f32>(o, sumF32(a3), 12);
  }
}

/**
 * out[r] = dot(row r, query) as an integer, i8 rows against a query widened to i16 (`stride * 2` bytes):
 * the widened query keeps more of its precision than an i8 one would, and i32x4.dot_i16x8_s (one
 * pmaddwd on x86) then multiplies and pairs eight lanes at once.
 */
export function scoreI8(base: usize, rows: i32, stride: usize, query16: usize, out: usize): void {
  for (let r = 0; r < rows; r++) {
    const row = base + <usize>r * stride;
    let a0 = i32x4.splat(0);
    let a1 = i32x4.splat(0);
    for (let i: usize = 0; i < stride; i += 16) {
      const v = v128.load(row + i);
      const q = query16 + (i << 1);
      a0 = i32x4.add(a0, i32x4.dot_i16x8_s(i16x8.extend_low_i8x16_s(v), v128.load(q)));
      a1 = i32x4.add(a1, i32x4.dot_i16x8_s(i16x8.extend_high_i8x16_s(v), v128.load(q, 16)));
    }
    store<i32>(out + ((<usize>r) << 2), sumI32(i32x4.add(a0, a1)));
  }
}

/** Four widened queries (`stride * 2` bytes apart) per pass over i8 rows; out[r * 4 + q]. */
export function scoreI8x4(base: usize, rows: i32, stride: usize, queries16: usize, out: usize): void {
  const qb = stride << 1;
  for (let r = 0; r < rows; r++) {
    const row = base + <usize>r * stride;
    let a0 = i32x4.splat(0);
    let a1 = i32x4.splat(0);
    let a2 = i32x4.splat(0);
    let a3 = i32x4.splat(0);
    for (let i: usize = 0; i < stride; i += 16) {
      const v = v128.load(row + i);
      const lo = i16x8.extend_low_i8x16_s(v);
      const hi = i16x8.extend_high_i8x16_s(v);
      const q = queries16 + (i << 1);
      a0 = i32x4.add(
        a0,
        i32x4.add(i32x4.dot_i16x8_s(lo, v128.load(q)), i32x4.dot_i16x8_s(hi, v128.load(q, 16))),
      );
      const q1 = q + qb;
      a1 = i32x4.add(
        a1,
        i32x4.add(i32x4.dot_i16x8_s(lo, v128.load(q1)), i32x4.dot_i16x8_s(hi, v128.load(q1, 16))),
      );
      const q2 = q1 + qb;
      a2 = i32x4.add(
        a2,
        i32x4.add(i32x4.dot_i16x8_s(lo, v128.load(q2)), i32x4.dot_i16x8_s(hi, v128.load(q2, 16))),
      );
      const q3 = q2 + qb;
      a3 = i32x4.add(
        a3,
        i32x4.add(i32x4.dot_i16x8_s(lo, v128.load(q3)), i32x4.dot_i16x8_s(hi, v128.load(q3, 16))),
      );
    }
    const o = out + ((<usize>r) << 4);
    store<i32>(o, sumI32(a0));
    store<i32>(o, sumI32(a1), 4);
    store<i32>(o, sumI32(a2), 8);
    store<i32>(o, sumI32(a3), 12);
  }
}

/** Re-scoring: out[j] = dot(row ids[j], query) for `count` row numbers (u32) at `ids`, f32 rows. */
export function gatherF32(
  base: usize,
  stride: usize,
  ids: usize,
  count: i32,
  query: usize,
  out: usize,
): void {
  for (let j = 0; j < count; j++) {
    const row = base + <usize>load<u32>(ids + ((<usize>j) << 2)) * stride;
    let a0 = f32x4.splat(0);
    let a1 = f32x4.splat(0);
    let i: usize = 0;
    for (; i + 32 <= stride; i += 32) {
      a0 = f32x4.add(a0, f32x4.mul(v128.load(row + i), v128.load(query + i)));
      a1 = f32x4.add(a1, f32x4.mul(v128.load(row + i, 16), v128.load(query + i, 16)));
    }
    for (; i < stride; i += 16) a0 = f32x4.add(a0, f32x4.mul(v128.load(row + i), v128.load(query + i)));
    store<f32>(out + ((<usize>j) << 2), sumF32(f32x4.add(a0, a1)));
  }
}

/** Re-scoring over i8 rows with a widened query: out[j] (i32) for `count` row numbers at `ids`. */
export function gatherI8(
  base: usize,
  stride: usize,
  ids: usize,
  count: i32,
  query16: usize,
  out: usize,
): void {
  for (let j = 0; j < count; j++) {
    const row = base + <usize>load<u32>(ids + ((<usize>j) << 2)) * stride;
    let a0 = i32x4.splat(0);
    let a1 = i32x4.splat(0);
    for (let i: usize = 0; i < stride; i += 16) {
      const v = v128.load(row + i);
      const q = query16 + (i << 1);
      a0 = i32x4.add(a0, i32x4.dot_i16x8_s(i16x8.extend_low_i8x16_s(v), v128.load(q)));
      a1 = i32x4.add(a1, i32x4.dot_i16x8_s(i16x8.extend_high_i8x16_s(v), v128.load(q, 16)));
    }
    store<i32>(out + ((<usize>j) << 2), sumI32(i32x4.add(a0, a1)));
  }
}

function sumF32(v: v128): f32 {
  return (
    f32x4.extract_lane(v, 0) + f32x4.extract_lane(v, 1) + f32x4.extract_lane(v, 2) + f32x4.extract_lane(v, 3)
  );
}

function sumI32(v: v128): i32 {
  return (
    i32x4.extract_lane(v, 0) + i32x4.extract_lane(v, 1) + i32x4.extract_lane(v, 2) + i32x4.extract_lane(v, 3)
  );
}
