import type { Embedder } from '@cairn/core';
import { createEmbedder } from './embedder-spec.js';

const embedders = new Map<string, Embedder>();

/**
 * The embedder of `spec` at `dimensions` for this thread, built once: a worker thread's tasks (an embed
 * batch, a reindex's pass) reuse it rather than build the built-in embedder's tables per task.
 */
export function threadEmbedder(spec: string, dimensions: number): Embedder {
  const key = `${spec}\u0000${dimensions}`;
  let e = embedders.get(key);
  if (!e) {
    e = createEmbedder(spec, { dimensions });
    embedders.set(key, e);
  }
  return e;
}
