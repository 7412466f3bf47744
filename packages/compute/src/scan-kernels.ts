import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { CairnError } from '@cairn/core';
import { type WasmMemory, wasm } from './wasm-runtime.js';

/** The kernels' WebAssembly module, built from `assembly/scan-kernels.ts` by the package build. */
export const SCAN_KERNELS_WASM = fileURLToPath(new URL('../dist/scan-kernels.wasm', import.meta.url));

/**
 * The SIMD scoring kernels (see `assembly/scan-kernels.ts`). Every argument named like an address is a
 * byte offset into the shard's memory; `stride` is a row's padded size in bytes (a multiple of 16).
 */
export interface ScanKernels {
  scoreF32(base: number, rows: number, stride: number, query: number, out: number): void;
  scoreF32x4(base: number, rows: number, stride: number, queries: number, out: number): void;
  scoreI8(base: number, rows: number, stride: number, query16: number, out: number): void;
  scoreI8x4(base: number, rows: number, stride: number, queries16: number, out: number): void;
  gatherF32(base: number, stride: number, ids: number, count: number, query: number, out: number): void;
  gatherI8(base: number, stride: number, ids: number, count: number, query16: number, out: number): void;
}

let compiled: object | undefined;

/**
 * The kernels bound to one shard's memory. Compiling happens once per thread; instantiating against a
 * memory is cheap (no data segments, nothing to initialise), so each thread binds its own.
 */
export function instantiateScanKernels(memory: WasmMemory): ScanKernels {
  if (!compiled) {
    let bytes: Buffer;
    try {
      bytes = readFileSync(SCAN_KERNELS_WASM);
    } catch (cause) {
      throw new CairnError(
        'INTERNAL',
        `the SIMD scan kernels are missing (${SCAN_KERNELS_WASM}): build @cairn/compute (pnpm build)`,
        {},
        { cause },
      );
    }
    compiled = new wasm.Module(bytes);
  }
  return new wasm.Instance(compiled, { env: { memory } }).exports as unknown as ScanKernels;
}
