// The part of the WebAssembly JS API this package uses, typed here: @types/node does not declare the
// `WebAssembly` global (TypeScript has it only in the DOM libraries), and pulling DOM types into a Node
// package would make browser globals look available where they are not.

/** A WebAssembly memory; a shard's is shared, so its `buffer` is a SharedArrayBuffer. */
export interface WasmMemory {
  readonly buffer: ArrayBufferLike;
  /** Adds `pages` pages of 64 KiB; returns the previous size in pages. */
  grow(pages: number): number;
}

interface WasmApi {
  Memory: new (descriptor: { initial: number; maximum?: number; shared?: boolean }) => WasmMemory;
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object, imports: Record<string, Record<string, unknown>>) => { exports: unknown };
}

export const wasm = (globalThis as unknown as { WebAssembly: WasmApi }).WebAssembly;
